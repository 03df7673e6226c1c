// WordPiece tokenizer read from a Hugging Face tokenizer.json (BERT family),
// producing exactly the ids of the `tokenizers` library: special added tokens
// matched in the raw text, BertNormalizer, BertPreTokenizer (split on
// whitespace, isolate punctuation), greedy longest-match WordPiece with "##"
// continuations, [UNK] for words that cannot be split or are longer than
// max_input_chars_per_word, and [CLS] ... [SEP] around a single sequence.
// The truncation and padding settings stored in tokenizer.json are ignored:
// the caller gives the length limit.
//
// Immutable after construction; Encode is const and thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_WORDPIECE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_WORDPIECE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/tokenizers/bert_normalizer.h"
#include "engine/tokenizers/encoder_tokenizer.h"

namespace attnserve {

class WordPieceTokenizer : public EncoderTokenizer {
 public:
  // Reads tokenizer.json; INVALID_ARGUMENT naming the file and the field for
  // anything unsupported (another model type, normalizer or pre-tokenizer).
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> FromFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> FromJson(const nlohmann::json& json,
                                                                     const std::string& path);

  // Hugging Face's WordPiece decoder: tokens joined by spaces, "##" pieces
  // glued, then the BERT clean-up of spaces before punctuation and
  // contractions. INVALID_ARGUMENT for ids out of range.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;

  int32_t cls_id() const { return template_.FirstSpecialId(); }
  int32_t sep_id() const { return template_.LastSpecialId(); }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  absl::string_view kind() const override { return "wordpiece"; }

 private:
  WordPieceTokenizer() = default;
  // Normalizes, pre-tokenizes and WordPiece-splits one segment of text that
  // contains no added token; appends ids and offsets (shifted by `base`).
  absl::Status EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const override;
  // BertPreTokenizer's words of normalized text, each through EncodeWord.
  void EncodeWords(const std::vector<NormalizedChar>& chars, TextEncoding* out) const;
  void EncodeWord(const std::vector<NormalizedChar>& chars, size_t begin, size_t end,
                  TextEncoding* out) const;

  BertNormalizerOptions normalizer_;
  bool has_normalizer_ = true;
  // std::unordered_map: absl::flat_hash_map<std::string, ...> does not compile
  // under GCC 14 with UBSan (the asan preset).
  std::unordered_map<std::string, int32_t> vocab_;
  std::string continuing_prefix_ = "##";
  int max_input_chars_per_word_ = 100;
  int32_t unk_id_ = -1;
  int32_t pad_id_ = 0;
  bool decoder_cleanup_ = true;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_WORDPIECE_H_
