#include "engine/tokenizers/encoder_tokenizer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/byte_level_bpe_encoder.h"
#include "engine/tokenizers/sentencepiece_bpe_encoder.h"
#include "engine/tokenizers/unicode_util.h"
#include "engine/tokenizers/unigram_tokenizer.h"
#include "engine/tokenizers/wordpiece.h"

namespace attnserve {

absl::StatusOr<TextEncoding> EncoderTokenizer::Encode(absl::string_view text, bool add_special_tokens,
                                                      int max_length, TruncationSide side) const {
  if (!IsValidUtf8(text)) {
    std::vector<char32_t> cps;
    std::vector<uint32_t> offsets;
    return DecodeUtf8(text, &cps, &offsets);  // the error with its byte offset
  }
  TextEncoding enc;
  RETURN_IF_ERROR(added_.Split(
      text, [&](absl::string_view segment, uint32_t base) { return EncodeSegment(segment, base, &enc); },
      [&](int32_t id, uint32_t begin, uint32_t end) {
        AppendAddedToken(text.substr(begin, end - begin), id, begin, end, &enc);
      }));
  return template_.Single(std::move(enc), add_special_tokens, max_length, side);
}

absl::StatusOr<TextEncoding> EncoderTokenizer::EncodePair(absl::string_view first, absl::string_view second,
                                                          int max_length, TruncationSide side) const {
  ASSIGN_OR_RETURN(TextEncoding a, Encode(first, /*add_special_tokens=*/false));
  ASSIGN_OR_RETURN(TextEncoding b, Encode(second, /*add_special_tokens=*/false));
  return template_.Pair(std::move(a), std::move(b), max_length, side);
}

void EncoderTokenizer::AppendAddedToken(absl::string_view /*matched*/, int32_t id, uint32_t begin, uint32_t end,
                                        TextEncoding* out) const {
  out->ids.push_back(id);
  out->offsets.emplace_back(begin, end);
}

std::string EncoderTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return absl::StrCat("<invalid id ", id, ">");
  return id_to_token_[id];
}

bool EncoderTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[id];
}

void EncoderTokenizer::SetEntries(int64_t size, const std::vector<std::string>& model_entries) {
  id_to_token_ = model_entries;
  id_to_token_.resize(static_cast<size_t>(std::max<int64_t>(size, added_.max_id() + 1)));
  special_.assign(id_to_token_.size(), false);
  for (const AddedVocabularyEntry& a : added_.tokens()) {
    id_to_token_[a.id] = a.content;
    special_[a.id] = a.special;
  }
}

absl::StatusOr<std::vector<std::string>> EncoderTokenizer::Entries(absl::Span<const int32_t> ids,
                                                                   bool skip_special_tokens) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " at index ", i, " is outside the vocabulary [0, ", id_to_token_.size(), ")"));
    }
    if (skip_special_tokens && special_[id]) continue;
    out.push_back(id_to_token_[id]);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LoadEncoderTokenizer(const std::string& path) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  return EncoderTokenizerFromJson(j, path);
}

absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromJson(const nlohmann::json& j,
                                                                           const std::string& path) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no \"model\" object"));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(j["model"], "type", path));
  if (type == "WordPiece") {
    ASSIGN_OR_RETURN(std::unique_ptr<WordPieceTokenizer> t, WordPieceTokenizer::FromJson(j, path));
    return std::unique_ptr<EncoderTokenizer>(std::move(t));
  }
  if (type == "Unigram") {
    ASSIGN_OR_RETURN(std::unique_ptr<UnigramTokenizer> t, UnigramTokenizer::FromJson(j, path));
    return std::unique_ptr<EncoderTokenizer>(std::move(t));
  }
  if (type == "BPE" && SentencePieceBpeEncoder::Matches(j)) {
    ASSIGN_OR_RETURN(std::unique_ptr<SentencePieceBpeEncoder> t, SentencePieceBpeEncoder::FromJson(j, path));
    return std::unique_ptr<EncoderTokenizer>(std::move(t));
  }
  if (type == "BPE") {
    ASSIGN_OR_RETURN(std::unique_ptr<ByteLevelBpeEncoder> t, ByteLevelBpeEncoder::FromJson(j, path));
    return std::unique_ptr<EncoderTokenizer>(std::move(t));
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": model.type \"", type.value_or(""),
                                                 "\" is not supported by the encoder (WordPiece, Unigram or BPE)"));
}

}  // namespace attnserve
