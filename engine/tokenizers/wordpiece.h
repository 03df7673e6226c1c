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

namespace attnserve {

struct WordPieceEncoding {
  std::vector<int32_t> ids;
  // Byte span [begin, end) of each token in the input text; (0, 0) for
  // [CLS] / [SEP].
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  bool truncated = false;
  // Tokens the full text has (with special tokens when they were added),
  // before truncation.
  int64_t untruncated_length = 0;
  // Segment of each token (BERT's token_type_ids): filled by EncodePair (0
  // for [CLS], the first text and its [SEP]; 1 for the second text and the
  // last [SEP]); empty from Encode, where every token is segment 0.
  std::vector<int32_t> type_ids;
};

class WordPieceTokenizer {
 public:
  // Reads tokenizer.json; INVALID_ARGUMENT naming the file and the field for
  // anything unsupported (another model type, normalizer or pre-tokenizer).
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> FromFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> FromJson(const nlohmann::json& json,
                                                                     const std::string& path);

  // Tokenizes `text` (must be valid UTF-8: INVALID_ARGUMENT otherwise). With
  // max_length > 0 the result is cut to at most max_length tokens, counting
  // [CLS] and [SEP] when add_special_tokens (the tail of the text is dropped,
  // as Hugging Face's truncation of a single sequence does).
  absl::StatusOr<WordPieceEncoding> Encode(absl::string_view text, bool add_special_tokens,
                                           int max_length = 0) const;
  // A text pair as a cross-encoder reads it, the tokenizer.json
  // TemplateProcessing of BERT: [CLS] first [SEP] second [SEP]. With
  // max_length > 0 the texts are cut by Hugging Face's "longest_first" rule
  // to fit max_length with the three special tokens: the shorter text is
  // kept whole when the longer can take the rest, else the budget is split
  // in half (the odd token to the longer text, to the second when they tie).
  // Offsets are byte spans in the text each token came from.
  absl::StatusOr<WordPieceEncoding> EncodePair(absl::string_view first, absl::string_view second,
                                               int max_length = 0) const;
  // "[UNK]"-like strings; out-of-range ids give "<invalid id N>".
  std::string IdToToken(int32_t id) const;
  // Hugging Face's WordPiece decoder: tokens joined by spaces, "##" pieces
  // glued, then the BERT clean-up of spaces before punctuation and
  // contractions. INVALID_ARGUMENT for ids out of range.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const;

  int vocab_size() const { return static_cast<int>(id_to_token_.size()); }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  bool IsSpecial(int32_t id) const;

 private:
  struct AddedToken {
    std::string content;
    int32_t id;
    bool special;
  };
  WordPieceTokenizer() = default;
  // Normalizes, pre-tokenizes and WordPiece-splits one segment of text that
  // contains no added token; appends ids and offsets (shifted by `base`).
  absl::Status EncodeSegment(absl::string_view segment, uint32_t base, WordPieceEncoding* out) const;
  void EncodeWord(const std::vector<NormalizedChar>& chars, size_t begin, size_t end,
                  WordPieceEncoding* out) const;

  BertNormalizerOptions normalizer_;
  bool has_normalizer_ = true;
  // std::unordered_map: absl::flat_hash_map<std::string, ...> does not compile
  // under GCC 14 with UBSan (the asan preset).
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<AddedToken> added_tokens_;  // matched in raw text, longest first
  std::vector<bool> special_;
  std::string continuing_prefix_ = "##";
  int max_input_chars_per_word_ = 100;
  int32_t unk_id_ = -1;
  int32_t cls_id_ = -1;
  int32_t sep_id_ = -1;
  int32_t pad_id_ = 0;
  bool decoder_cleanup_ = true;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_WORDPIECE_H_
