// The tokenizer of XLM-RoBERTa-family encoders (multilingual-e5, bge-m3,
// bge-reranker-base/large/v2-m3, paraphrase-multilingual-*) read from their
// tokenizer.json, producing exactly the `tokenizers` library's ids and
// offsets: added tokens matched in the raw text (lstrip / rstrip taking the
// whitespace beside them), the SentencePiece normalizer chain
// (spm_normalizer.h), Metaspace pre-tokenization (metaspace.h), the Unigram
// model (unigram_model.h) and the post-processor's template
// (sequence_template.h). The truncation and padding settings stored in
// tokenizer.json are ignored: the caller gives the length limit.
//
// Immutable after construction; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_TOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/metaspace.h"
#include "engine/tokenizers/spm_normalizer.h"
#include "engine/tokenizers/unigram_model.h"

namespace attnserve {

class UnigramTokenizer : public EncoderTokenizer {
 public:
  // INVALID_ARGUMENT naming the file and the component for anything
  // unsupported (another model, normalizer, pre-tokenizer or decoder).
  static absl::StatusOr<std::unique_ptr<UnigramTokenizer>> FromJson(const nlohmann::json& json,
                                                                   const std::string& path);

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  absl::string_view kind() const override { return "unigram"; }

 private:
  UnigramTokenizer() = default;
  // Normalizes, pre-tokenizes and tokenizes text between added tokens.
  absl::Status EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const override;

  SpmNormalizer normalizer_;
  MetaspacePreTokenizer pre_tokenizer_;
  UnigramModel model_;
  MetaspaceDecoder decoder_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_TOKENIZER_H_
