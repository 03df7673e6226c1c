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

}  // namespace

absl::StatusOr<std::unique_ptr<UnigramTokenizer>> UnigramTokenizer::FromJson(const nlohmann::json& j,
                                                                             const std::string& path) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  std::unique_ptr<UnigramTokenizer> t(new UnigramTokenizer());
  ASSIGN_OR_RETURN(t->model_, UnigramModel::FromJson(Member(j, "model"), path));
  ASSIGN_OR_RETURN(t->normalizer_, SpmNormalizer::FromJson(Member(j, "normalizer"), path));
  ASSIGN_OR_RETURN(t->pre_tokenizer_, MetaspacePreTokenizer::FromJson(Member(j, "pre_tokenizer"), path));
  ASSIGN_OR_RETURN(t->decoder_, MetaspaceDecoder::FromJson(Member(j, "decoder"), path));

  ASSIGN_OR_RETURN(t->added_, AddedVocabulary::FromJson(Member(j, "added_tokens"), path));
  const int64_t size = std::max<int64_t>(t->model_.vocab_size(), t->added_.max_id() + 1);
  t->id_to_token_.resize(static_cast<size_t>(size));
  t->special_.assign(static_cast<size_t>(size), false);
  for (int32_t id = 0; id < t->model_.vocab_size(); ++id) t->id_to_token_[id] = t->model_.piece(id);
  for (const AddedToken& a : t->added_.tokens()) {
    t->id_to_token_[a.id] = a.content;
    t->special_[a.id] = a.special;
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
                                                      int max_length, TruncationSide side) const {
  if (!IsValidUtf8(text)) return AlignText(text, 0).status();  // the error with its byte offset
  TextEncoding enc;
  RETURN_IF_ERROR(added_.Split(
      text, [&](absl::string_view segment, uint32_t base) { return EncodeSegment(segment, base, &enc); }, &enc));
  return template_.Single(std::move(enc), add_special_tokens, max_length, side);
}

absl::StatusOr<TextEncoding> UnigramTokenizer::EncodePair(absl::string_view first, absl::string_view second,
                                                          int max_length, TruncationSide side) const {
  ASSIGN_OR_RETURN(TextEncoding a, Encode(first, /*add_special_tokens=*/false));
  ASSIGN_OR_RETURN(TextEncoding b, Encode(second, /*add_special_tokens=*/false));
  return template_.Pair(std::move(a), std::move(b), max_length, side);
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
