// A tokenizer.json's added_tokens ([CLS], <s>, <mask>, ...) and the split of
// a text on them, shared by the encoder tokenizers: the tokens matched in the
// raw text (normalized: false) are found leftmost, then longest; lstrip /
// rstrip widen a match over the whitespace beside it (not into an earlier
// match), as Hugging Face tokenizers' AddedVocabulary does. Tokens matched
// after normalization (normalized: true) keep their ids but are not split
// out; the checkpoints' special tokens are all raw-text ones.
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

 private:
  std::vector<AddedVocabularyEntry> tokens_;
  std::vector<AddedToken> raw_;       // the tokens matched in raw text (content, id)
  std::vector<size_t> raw_entry_;     // raw_[i]'s entry in tokens_
  int64_t max_id_ = -1;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_ADDED_VOCABULARY_H_
