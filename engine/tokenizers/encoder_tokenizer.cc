#include "engine/tokenizers/encoder_tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unigram_tokenizer.h"
#include "engine/tokenizers/wordpiece.h"

namespace attnserve {

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
  return absl::InvalidArgumentError(absl::StrCat(path, ": model.type \"", type.value_or(""),
                                                 "\" is not supported by the encoder (WordPiece or Unigram)"));
}

}  // namespace attnserve
