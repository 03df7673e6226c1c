#include "engine/tokenizers/unigram_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

const nlohmann::json& Member(const nlohmann::json& j, const char* name) {
  static const nlohmann::json kNull;
  auto it = j.find(name);
  return it == j.end() ? kNull : *it;
}

// The whitespace (Rust's char::is_whitespace) ending just before `pos` /
// starting at `pos`, in bytes.
size_t WhitespaceBefore(absl::string_view text, size_t pos, size_t floor) {
  size_t begin = pos;
  while (begin > floor) {
    size_t k = begin - 1;
    while (k > floor && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) --k;
    absl::StatusOr<AlignedText> c = AlignText(text.substr(k, begin - k), 0);
    if (!c.ok() || c->size() != 1 || !IsUnicodeWhitespace(c->front().c)) break;
    begin = k;
  }
  return begin;
}

size_t WhitespaceAfter(absl::string_view text, size_t pos) {
  size_t end = pos;
  while (end < text.size()) {
    size_t k = end + 1;
    while (k < text.size() && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) ++k;
    absl::StatusOr<AlignedText> c = AlignText(text.substr(end, k - end), 0);
    if (!c.ok() || c->size() != 1 || !IsUnicodeWhitespace(c->front().c)) break;
    end = k;
  }
  return end;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnigramTokenizer>> UnigramTokenizer::FromJson(const nlohmann::json& j,
                                                                             const std::string& path) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  std::unique_ptr<UnigramTokenizer> t(new UnigramTokenizer());
  ASSIGN_OR_RETURN(t->model_, UnigramModel::FromJson(Member(j, "model"), path));
  ASSIGN_OR_RETURN(t->normalizer_, SpmNormalizer::FromJson(Member(j, "normalizer"), path));
  ASSIGN_OR_RETURN(t->pre_tokenizer_, MetaspacePreTokenizer::FromJson(Member(j, "pre_tokenizer"), path));
  ASSIGN_OR_RETURN(t->decoder_, MetaspaceDecoder::FromJson(Member(j, "decoder"), path));

  int64_t size = t->model_.vocab_size();
  const nlohmann::json& added = Member(j, "added_tokens");
  if (added.is_array()) {
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
      size = std::max<int64_t>(size, *id + 1);
      // As for WordPiece: only raw-text (normalized: false) tokens are split
      // out; the checkpoints' special tokens are all of that kind.
      if (!normalized.value_or(!special.value_or(false))) {
        t->added_tokens_.push_back({*content, static_cast<int32_t>(*id), special.value_or(false),
                                    lstrip.value_or(false), rstrip.value_or(false)});
      }
    }
  }
  std::stable_sort(t->added_tokens_.begin(), t->added_tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  t->id_to_token_.resize(static_cast<size_t>(size));
  t->special_.assign(static_cast<size_t>(size), false);
  for (int32_t id = 0; id < t->model_.vocab_size(); ++id) t->id_to_token_[id] = t->model_.piece(id);
  for (const nlohmann::json& a : added.is_array() ? added : nlohmann::json::array()) {
    const int32_t id = a["id"].get<int32_t>();
    t->id_to_token_[id] = a["content"].get<std::string>();
    t->special_[id] = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
  }
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(Member(j, "post_processor"), size, path));
  return t;
}

bool UnigramTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[id];
}

std::string UnigramTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return absl::StrCat("<invalid id ", id, ">");
  return id_to_token_[id];
}

absl::Status UnigramTokenizer::EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const {
  if (segment.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(AlignedText text, AlignText(segment, base));
  normalizer_.Apply(&text);
  for (const AlignedText& piece : pre_tokenizer_.Split(std::move(text))) model_.Tokenize(piece, out);
  return absl::OkStatus();
}

absl::StatusOr<TextEncoding> UnigramTokenizer::Encode(absl::string_view text, bool add_special_tokens,
                                                      int max_length) const {
  if (!IsValidUtf8(text)) return AlignText(text, 0).status();  // the error with its byte offset
  TextEncoding enc;
  // Added tokens, leftmost and then longest; lstrip / rstrip widen a match
  // over the whitespace beside it (not into an earlier match).
  size_t segment_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = nullptr;
    for (const AddedToken& a : added_tokens_) {
      if (text.substr(pos, a.content.size()) == a.content) {
        match = &a;
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    const size_t begin = match->lstrip ? WhitespaceBefore(text, pos, segment_start) : pos;
    const size_t end = match->rstrip ? WhitespaceAfter(text, pos + match->content.size()) : pos + match->content.size();
    RETURN_IF_ERROR(EncodeSegment(text.substr(segment_start, begin - segment_start),
                                  static_cast<uint32_t>(segment_start), &enc));
    enc.ids.push_back(match->id);
    enc.offsets.emplace_back(static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
    pos = end;
    segment_start = pos;
  }
  RETURN_IF_ERROR(EncodeSegment(text.substr(segment_start), static_cast<uint32_t>(segment_start), &enc));
  return template_.Single(std::move(enc), add_special_tokens, max_length);
}

absl::StatusOr<TextEncoding> UnigramTokenizer::EncodePair(absl::string_view first, absl::string_view second,
                                                          int max_length) const {
  ASSIGN_OR_RETURN(TextEncoding a, Encode(first, /*add_special_tokens=*/false));
  ASSIGN_OR_RETURN(TextEncoding b, Encode(second, /*add_special_tokens=*/false));
  return template_.Pair(std::move(a), std::move(b), max_length);
}

absl::StatusOr<std::string> UnigramTokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " at index ", i, " is outside the vocabulary [0, ", id_to_token_.size(), ")"));
    }
    if (skip_special_tokens && special_[id]) continue;
    tokens.push_back(id_to_token_[id]);
  }
  return decoder_.Decode(tokens);
}

}  // namespace attnserve
