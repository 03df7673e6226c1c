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
  t->added_.NormalizePatterns([&](absl::string_view content) { return t->normalizer_.NormalizeString(content); });
  std::vector<std::string> entries;
  entries.reserve(static_cast<size_t>(t->model_.vocab_size()));
  for (int32_t id = 0; id < t->model_.vocab_size(); ++id) entries.push_back(t->model_.piece(id));
  t->SetEntries(t->model_.vocab_size(), entries);
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(Member(j, "post_processor"), t->vocab_size(), path));
  return t;
}

absl::Status UnigramTokenizer::EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const {
  if (segment.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(AlignedText text, AlignText(segment, base));
  normalizer_.Apply(&text);
  if (!added_.has_normalized()) {
    for (const AlignedText& piece : pre_tokenizer_.Split(std::move(text))) model_.Tokenize(piece, out);
    return absl::OkStatus();
  }
  return added_.SplitNormalized(
      text,
      [&](AlignedText part) {
        for (const AlignedText& piece : pre_tokenizer_.Split(std::move(part))) model_.Tokenize(piece, out);
        return absl::OkStatus();
      },
      [&](int32_t id, uint32_t begin, uint32_t end) {
        out->ids.push_back(id);
        out->offsets.emplace_back(begin, end);
      });
}

absl::StatusOr<std::string> UnigramTokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Entries(ids, skip_special_tokens));
  return decoder_.Decode(tokens);
}

}  // namespace attnserve
