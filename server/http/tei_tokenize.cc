#include "server/http/tei_tokenize.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"

namespace attnserve {
namespace {

using nlohmann::json;

// [id, ...] into `request` (`field` names it in errors): json_fields' token
// ids, each also a possible id (not negative).
absl::Status ReadIds(const json& ids, const std::string& field, v1::DetokenizeRequest* request) {
  if (!ids.is_array()) return TypeError(field, "an array of token ids", ids);
  ASSIGN_OR_RETURN(const v1::TokenIds read, TokenIdsField(ids, field));
  for (int k = 0; k < read.ids_size(); ++k) {
    if (read.ids(k) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", k, "] = ", read.ids(k), ": not a token id"));
    }
  }
  *request->mutable_token_ids() = read.ids();
  return absl::OkStatus();
}

}  // namespace

bool IsTeiTokenize(const json& root) {
  return Field(root, "inputs") != nullptr && Field(root, "prompt") == nullptr && Field(root, "messages") == nullptr;
}

absl::StatusOr<std::vector<v1::TokenizeRequest>> ParseTeiTokenizeJson(const json& root) {
  const json* inputs = Field(root, "inputs");
  if (inputs == nullptr) return absl::InvalidArgumentError("inputs: required");
  bool add_special_tokens = true;
  RETURN_IF_ERROR(Optional<bool>(root, "add_special_tokens", BoolField, [&](bool v) { add_special_tokens = v; }));
  if (Field(root, "prompt_name") != nullptr) return Unsupported("prompt_name", "no prompts are configured");
  std::vector<std::string> texts;
  if (inputs->is_string()) {
    texts.push_back(inputs->get<std::string>());
  } else if (inputs->is_array() && !inputs->empty()) {
    for (size_t i = 0; i < inputs->size(); ++i) {
      if (!(*inputs)[i].is_string()) return TypeError(absl::StrCat("inputs[", i, "]"), "a string", (*inputs)[i]);
      texts.push_back((*inputs)[i].get<std::string>());
    }
  } else {
    return TypeError("inputs", "a string or a non-empty array of strings", *inputs);
  }
  std::vector<v1::TokenizeRequest> requests(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    requests[i].set_model(v1::MODEL_KIND_ENCODER);
    requests[i].set_text(std::move(texts[i]));
    requests[i].set_add_special_tokens(add_special_tokens);
  }
  return requests;
}

absl::StatusOr<json> TeiTokenizeResponse(const std::vector<v1::TokenizeRequest>& requests,
                                         const std::vector<v1::TokenizeResponse>& responses) {
  json out = json::array();
  for (size_t i = 0; i < requests.size() && i < responses.size(); ++i) {
    const std::string& text = requests[i].text();
    const v1::TokenizeResponse& r = responses[i];
    if (r.spans_size() != r.token_ids_size() || r.tokens_size() != r.token_ids_size()) {
      return absl::InternalError("tokenize: no span for every token (the encoder's tokenizer gives them)");
    }
    json tokens = json::array();
    for (int k = 0; k < r.token_ids_size(); ++k) {
      const v1::TokenSpan& span = r.spans(k);
      json token{{"id", r.token_ids(k)}, {"special", span.special()}};
      if (span.special()) {
        token["text"] = r.tokens(k);
        token["start"] = nullptr;
        token["stop"] = nullptr;
      } else {
        if (span.start() < 0 || span.end() < span.start() || static_cast<size_t>(span.end()) > text.size()) {
          return absl::InternalError("tokenize: a span leaves its text");
        }
        token["text"] = SanitizeUtf8(absl::string_view(text).substr(span.start(), span.end() - span.start()));
        token["start"] = span.start();
        token["stop"] = span.end();
      }
      tokens.push_back(std::move(token));
    }
    out.push_back(std::move(tokens));
  }
  return out;
}

absl::StatusOr<std::vector<v1::DetokenizeRequest>> ParseTeiDecodeRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  const json* ids = Field(root, "ids");
  if (ids == nullptr) return absl::InvalidArgumentError("ids: required");
  bool skip_special_tokens = true;
  RETURN_IF_ERROR(Optional<bool>(root, "skip_special_tokens", BoolField, [&](bool v) { skip_special_tokens = v; }));
  std::vector<v1::DetokenizeRequest> requests;
  if (!ids->is_array() || ids->empty()) return TypeError("ids", "[id, ...] or [[id, ...], ...]", *ids);
  if ((*ids)[0].is_array()) {
    for (size_t i = 0; i < ids->size(); ++i) {
      RETURN_IF_ERROR(ReadIds((*ids)[i], absl::StrCat("ids[", i, "]"), &requests.emplace_back()));
    }
  } else {
    RETURN_IF_ERROR(ReadIds(*ids, "ids", &requests.emplace_back()));
  }
  for (v1::DetokenizeRequest& r : requests) {
    r.set_model(v1::MODEL_KIND_ENCODER);
    r.set_skip_special_tokens(skip_special_tokens);
  }
  return requests;
}

}  // namespace attnserve
