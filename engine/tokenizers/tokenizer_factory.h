// Builds the right Tokenizer for a decoder model: from GGUF metadata
// (tokenizer.ggml.model "llama" -> SentencePieceBpe, "gpt2" -> ByteLevelBpe)
// or from a Hugging Face tokenizer.json: model.type BPE, either byte-level
// (a ByteLevel pre-tokenizer, optionally behind a Split regex) ->
// ByteLevelBpe, or SentencePiece-style (byte_fallback, "▁" through a
// Metaspace pre-tokenizer or a Prepend/Replace normalizer, as Llama-2,
// Mistral, TinyLlama) -> HfSentencePieceBpe; added_tokens; a
// TemplateProcessing post-processor that adds BOS/EOS.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_FACTORY_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/formats/gguf_file.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& gguf);

// `bos_id` / `eos_id` come from the model config (-1: unknown; then taken
// from the post-processor template when it names special tokens).
absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromHfJson(const std::string& path, int bos_id = -1,
                                                               int eos_id = -1);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_FACTORY_H_
