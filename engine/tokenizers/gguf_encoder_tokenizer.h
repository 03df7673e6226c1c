// The encoder tokenizer of a GGUF embedding model (llama.cpp's format:
// Qwen3-Embedding-*.gguf and the like): the file's byte-level BPE
// (tokenizer.ggml.model "gpt2": tokens, merges, token types, the
// pre-tokenizer named by tokenizer.ggml.pre) read as the equivalent
// tokenizer.json, so it tokenizes as llama.cpp does (no normalizer) and gives
// byte offsets like any encoder tokenizer. Control and user-defined tokens
// are added tokens matched in the text; tokenizer.ggml.add_bos_token /
// add_eos_token put bos / eos around every input, as llama.cpp's tokenizer
// does with add_special. Or the file's WordPiece vocabulary
// (tokenizer.ggml.model "bert": llama.cpp's BERT conversions, ollama's
// all-minilm and mxbai-embed-large) read as the tokenizer.json it was
// converted from, or its SentencePiece Unigram one ("t5": XLM-RoBERTa
// conversions, bge-m3, multilingual-e5) read as transformers builds it
// (gguf_encoder_tokenizer.cc says how).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_GGUF_ENCODER_TOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_GGUF_ENCODER_TOKENIZER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/formats/gguf_file.h"
#include "engine/tokenizers/encoder_tokenizer.h"

namespace attnserve {

// UNIMPLEMENTED naming the file and the key for a SentencePiece BPE
// ("llama") vocabulary or a byte-level BPE pre-tokenizer other than gpt-2,
// llama-bpe and qwen2; INVALID_ARGUMENT naming the key for a WordPiece
// vocabulary without its unknown, cls or separator token.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromGguf(const GgufFile& gguf);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_GGUF_ENCODER_TOKENIZER_H_
