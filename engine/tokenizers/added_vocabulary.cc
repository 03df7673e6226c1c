#include "engine/tokenizers/added_vocabulary.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

// The byte length of the character starting at `pos`.
size_t CharLengthAt(absl::string_view text, size_t pos) {
  size_t k = pos + 1;
  while (k < text.size() && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) ++k;
  return k - pos;
}

bool IsWhitespaceChar(absl::string_view utf8) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  return DecodeUtf8(utf8, &cps, &offsets).ok() && cps.size() == 1 && IsUnicodeWhitespace(cps[0]);
}

}  // namespace

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
    if (!content.has_value() || content->empty() || !id.has_value() || *id < 0 || *id > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": added_tokens entries need a non-empty content and a valid id"));
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
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    if (!v.tokens_[i].normalized) v.raw_.push_back(i);
  }
  std::stable_sort(v.raw_.begin(), v.raw_.end(), [&v](size_t a, size_t b) {
    return v.tokens_[a].content.size() > v.tokens_[b].content.size();
  });
  return v;
}

absl::Status AddedVocabulary::Split(absl::string_view text,
                                    absl::FunctionRef<absl::Status(absl::string_view, uint32_t)> encode_segment,
                                    TextEncoding* out) const {
  size_t segment_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedVocabularyEntry* match = nullptr;
    for (size_t i : raw_) {  // a handful; longest first
      if (text.substr(pos, tokens_[i].content.size()) == tokens_[i].content) {
        match = &tokens_[i];
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos;
    if (match->lstrip) {
      while (begin > segment_start) {
        size_t k = begin - 1;
        while (k > segment_start && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) --k;
        if (!IsWhitespaceChar(text.substr(k, begin - k))) break;
        begin = k;
      }
    }
    size_t end = pos + match->content.size();
    if (match->rstrip) {
      while (end < text.size() && IsWhitespaceChar(text.substr(end, CharLengthAt(text, end)))) {
        end += CharLengthAt(text, end);
      }
    }
    RETURN_IF_ERROR(encode_segment(text.substr(segment_start, begin - segment_start),
                                   static_cast<uint32_t>(segment_start)));
    out->ids.push_back(match->id);
    out->offsets.emplace_back(static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
    pos = end;
    segment_start = pos;
  }
  return encode_segment(text.substr(segment_start), static_cast<uint32_t>(segment_start));
}

}  // namespace attnserve
