// A tokenizer.json's added_tokens ([CLS], <s>, <mask>, ...) and the split of
// a text on them, shared by the encoder tokenizers: the tokens matched in the
// raw text (normalized: false) are found leftmost, then longest; lstrip /
// rstrip widen a match over the whitespace beside it (not into an earlier
// match), as Hugging Face tokenizers' AddedVocabulary does. Tokens with
// normalized: true (tokenizers' default for non-special ones, and RoBERTa's
// <s> </s> in older files) are matched afterwards, in each stretch's
// normalized text, against their content put through the same normalizer
// (SplitNormalized).
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_ADDED_VOCABULARY_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_ADDED_VOCABULARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizers/aligned_text.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/text_encoding.h"

namespace attnserve {

// (Not AddedToken: pretokenizer.h has that name for the decoders' split.)
struct AddedVocabularyEntry {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

class AddedVocabulary {
 public:
  // `added_tokens` is the file's list (null: none). INVALID_ARGUMENT naming
  // the file for an entry without content or with an id outside [0, 2^24].
  static absl::StatusOr<AddedVocabulary> FromJson(const nlohmann::json& added_tokens, const std::string& path);

  const std::vector<AddedVocabularyEntry>& tokens() const { return tokens_; }
  int64_t max_id() const { return max_id_; }  // -1 when there are none

  // In text order, calls encode_segment(text, byte offset of it) for each
  // stretch of `text` between matches and added_token(id, begin, end) for
  // each matched token with its byte span. The matching is pretokenizer.h's
  // SplitOnAddedTokens (the decoders' too); lstrip / rstrip then move
  // whitespace from the stretch beside a token into its span.
  absl::Status Split(absl::string_view text,
                     absl::FunctionRef<absl::Status(absl::string_view, uint32_t)> encode_segment,
                     absl::FunctionRef<void(int32_t, uint32_t, uint32_t)> added_token) const;

  // The normalized: true tokens' patterns: each content through the
  // tokenizer's normalizer (an identity one by default). Called once by the
  // tokenizer after it has read its normalizer.
  void NormalizePatterns(absl::FunctionRef<std::string(absl::string_view)> normalize);
  bool has_normalized() const { return !normalized_.empty(); }
  // The second pass on one stretch's normalized text: calls stretch(part)
  // for the text between matches (non-empty) and added_token(id, begin,
  // end) for each match with its span in the original text, in order;
  // lstrip / rstrip take the normalized whitespace beside a match.
  absl::Status SplitNormalized(const AlignedText& text, absl::FunctionRef<absl::Status(AlignedText)> stretch,
                               absl::FunctionRef<void(int32_t, uint32_t, uint32_t)> added_token) const;

 private:
  struct Piece {
    size_t begin, end;                   // bytes of the matched text
    const AddedVocabularyEntry* token;  // null: a stretch of text
  };
  // Leftmost-longest matches of `patterns` (pattern k is tokens_[entry_of[k]])
  // with lstrip / rstrip applied.
  std::vector<Piece> Match(absl::string_view text, const std::vector<AddedToken>& patterns,
                           const std::vector<size_t>& entry_of) const;

  std::vector<AddedVocabularyEntry> tokens_;
  std::vector<AddedToken> raw_;       // the tokens matched in raw text (content, id)
  std::vector<size_t> raw_entry_;     // raw_[i]'s entry in tokens_
  std::vector<AddedToken> normalized_;  // normalized patterns (content after the normalizer, id)
  std::vector<size_t> normalized_entry_;
  std::vector<uint8_t> strip_;  // id -> lstrip / rstrip flags (pretokenizer.h); empty when none has one
  int64_t max_id_ = -1;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_ADDED_VOCABULARY_H_
