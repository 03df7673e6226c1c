#include "engine/tokenizers/added_vocabulary.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {

absl::StatusOr<AddedVocabulary> AddedVocabulary::FromJson(const nlohmann::json& added, const std::string& path) {
  AddedVocabulary v;
  if (added.is_null()) return v;
  if (!added.is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": added_tokens must be a list"));
  for (const nlohmann::json& a : added) {
    ASSIGN_OR_RETURN(std::optional<std::string> content, JsonOptionalString(a, "content", path));
    ASSIGN_OR_RETURN(std::optional<int64_t> id, JsonOptionalInt(a, "id", path));
    ASSIGN_OR_RETURN(std::optional<bool> special, JsonOptionalBool(a, "special", path));
    ASSIGN_OR_RETURN(std::optional<bool> normalized, JsonOptionalBool(a, "normalized", path));
    ASSIGN_OR_RETURN(std::optional<bool> lstrip, JsonOptionalBool(a, "lstrip", path));
    ASSIGN_OR_RETURN(std::optional<bool> rstrip, JsonOptionalBool(a, "rstrip", path));
    ASSIGN_OR_RETURN(std::optional<bool> single_word, JsonOptionalBool(a, "single_word", path));
    if (!content.has_value() || content->empty() || !id.has_value() || *id < 0 || *id > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": added_tokens entries need a non-empty content and a valid id"));
    }
    if (single_word.value_or(false)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": added token \"", *content,
                                                     "\" has single_word, which is not supported"));
    }
    AddedVocabularyEntry t;
    t.content = *content;
    t.id = static_cast<int32_t>(*id);
    t.special = special.value_or(false);
    t.lstrip = lstrip.value_or(false);
    t.rstrip = rstrip.value_or(false);
    t.normalized = normalized.value_or(!t.special);  // tokenizers' default
    v.max_id_ = std::max<int64_t>(v.max_id_, *id);
    v.tokens_.push_back(std::move(t));
  }
  for (const AddedVocabularyEntry& t : v.tokens_) {
    if (!t.lstrip && !t.rstrip) continue;
    v.strip_.resize(static_cast<size_t>(v.max_id_) + 1, 0);
    v.strip_[t.id] = (t.lstrip ? kAddedTokenLstrip : 0) | (t.rstrip ? kAddedTokenRstrip : 0);
  }
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    if (v.tokens_[i].normalized) continue;
    v.raw_.push_back({v.tokens_[i].content, v.tokens_[i].id});
    v.raw_entry_.push_back(i);
  }
  // Until the tokenizer gives its normalizer: none (the byte-level BPE has none).
  v.NormalizePatterns([](absl::string_view content) { return std::string(content); });
  return v;
}

std::vector<AddedVocabulary::Piece> AddedVocabulary::Match(absl::string_view text,
                                                          const std::vector<AddedToken>& patterns,
                                                          const std::vector<size_t>& entry_of) const {
  std::vector<TextSegment> segments = SplitOnAddedTokens(text, patterns);
  if (!strip_.empty()) StripBesideAddedTokens(segments, strip_);
  std::vector<Piece> pieces;
  for (const TextSegment& s : segments) {
    const size_t begin = static_cast<size_t>(s.text.data() - text.data());
    const AddedVocabularyEntry* token = nullptr;
    for (size_t k = 0; s.id >= 0 && k < patterns.size(); ++k) {
      if (patterns[k].id == s.id) token = &tokens_[entry_of[k]];  // ids are unique in added_tokens
    }
    pieces.push_back({begin, begin + s.text.size(), token});
  }
  return pieces;
}

absl::Status AddedVocabulary::Split(absl::string_view text,
                                    absl::FunctionRef<absl::Status(absl::string_view, uint32_t)> encode_segment,
                                    absl::FunctionRef<void(int32_t, uint32_t, uint32_t)> added_token) const {
  for (const Piece& p : Match(text, raw_, raw_entry_)) {
    if (p.token == nullptr) {
      if (p.end > p.begin) {
        RETURN_IF_ERROR(encode_segment(text.substr(p.begin, p.end - p.begin), static_cast<uint32_t>(p.begin)));
      }
      continue;
    }
    added_token(p.token->id, static_cast<uint32_t>(p.begin), static_cast<uint32_t>(p.end));
  }
  return absl::OkStatus();
}

void AddedVocabulary::NormalizePatterns(absl::FunctionRef<std::string(absl::string_view)> normalize) {
  normalized_.clear();
  normalized_entry_.clear();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (!tokens_[i].normalized) continue;
    std::string pattern = normalize(tokens_[i].content);
    if (pattern.empty()) continue;  // the normalizer removes it: nothing can match
    normalized_.push_back({std::move(pattern), tokens_[i].id});
    normalized_entry_.push_back(i);
  }
}

absl::Status AddedVocabulary::SplitNormalized(const AlignedText& text,
                                              absl::FunctionRef<absl::Status(AlignedText)> stretch,
                                              absl::FunctionRef<void(int32_t, uint32_t, uint32_t)> added_token) const {
  if (normalized_.empty()) return text.empty() ? absl::OkStatus() : stretch(text);  // callers skip this copy
  std::vector<size_t> char_at_byte;
  const std::string utf8 = ToUtf8(text, &char_at_byte);
  char_at_byte.push_back(text.size());  // one past the last character
  for (const Piece& p : Match(utf8, normalized_, normalized_entry_)) {
    if (p.end == p.begin) continue;
    const size_t first = char_at_byte[p.begin];
    const size_t last = char_at_byte[p.end];  // one past
    if (p.token == nullptr) {
      RETURN_IF_ERROR(stretch(AlignedText(text.begin() + static_cast<std::ptrdiff_t>(first),
                                          text.begin() + static_cast<std::ptrdiff_t>(last))));
    } else {
      added_token(p.token->id, text[first].begin, text[last - 1].end);
    }
  }
  return absl::OkStatus();
}

}  // namespace attnserve
