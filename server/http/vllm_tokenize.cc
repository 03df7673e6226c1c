// vLLM's /tokenize and /detokenize (vllm_tokenize.h).
#include "server/http/vllm_tokenize.h"

#include <string>
#include <vector>

#include "engine/core/status_macros.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/openai_api.h"
#include "server/http/openai_chat.h"

namespace attnserve {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// The messages read by the chat completions parser: the same prompt
// /v1/chat/completions would render, tools shown as the client wrote them.
absl::StatusOr<v1::ChatPrompt> ChatOf(const ojson& root, const ToolSupport& tools) {
  ojson chat = ojson::object();
  for (const char* key : {"model", "messages", "add_generation_prompt", "continue_final_message", "tools",
                          "chat_template", "chat_template_kwargs"}) {
    if (const auto v = root.find(key); v != root.end()) chat[key] = *v;
  }
  // Counting writes nothing: the tools are shown, no call is asked for.
  if (chat.contains("tools")) chat["tool_choice"] = "none";
  ASSIGN_OR_RETURN(const CompletionCall call, ParseChatCompletionRequest(chat.dump(), tools));
  return call.requests[0].chat();
}

}  // namespace

absl::StatusOr<VllmTokenizeCall> ParseVllmTokenizeRequest(absl::string_view body, v1::ModelKind model,
                                                          const ToolSupport& tools) {
  ASSIGN_OR_RETURN(const ojson ordered, ParseOrderedJsonObject(body));
  const json root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  RETURN_IF_ERROR(CheckOpenAiModelField(root));
  VllmTokenizeCall call;
  call.request.set_model(model);
  RETURN_IF_ERROR(Optional<bool>(root, "return_token_strs", BoolField, [&](bool v) { call.return_token_strs = v; }));
  const json* prompt = Field(root, "prompt");
  const json* messages = Field(root, "messages");
  if ((prompt == nullptr) == (messages == nullptr)) {
    return absl::InvalidArgumentError("prompt, messages: exactly one is required (text, or a chat's messages)");
  }
  if (prompt != nullptr) {
    if (!prompt->is_string()) return TypeError("prompt", "a string", *prompt);
    call.request.set_text(prompt->get<std::string>());
    call.request.set_add_special_tokens(true);  // vLLM's default for a prompt
    RETURN_IF_ERROR(Optional<bool>(root, "add_special_tokens", BoolField,
                                   [&](bool v) { call.request.set_add_special_tokens(v); }));
    return call;
  }
  // The chat template writes the special tokens a chat's prompt has; vLLM's
  // add_special_tokens (default false here) would add BOS once more.
  if (const json* special = Field(root, "add_special_tokens"); special != nullptr) {
    ASSIGN_OR_RETURN(const bool add, BoolField(*special, "add_special_tokens"));
    if (add) {
      return Unsupported("add_special_tokens",
                         "with messages the chat template writes the prompt's special tokens; only false");
    }
  }
  if (model != v1::MODEL_KIND_DECODER) {
    return absl::InvalidArgumentError("messages: a chat needs a decoder model; this server has none");
  }
  ASSIGN_OR_RETURN(*call.request.mutable_chat(), ChatOf(ordered, tools));
  return call;
}

json VllmTokenizeResponse(const VllmTokenizeCall& call, const v1::TokenizeResponse& tokens, int max_model_len) {
  json out{{"count", tokens.token_ids_size()},
           {"max_model_len", max_model_len},
           {"tokens", json(std::vector<int32_t>(tokens.token_ids().begin(), tokens.token_ids().end()))},
           {"token_strs", json()}};
  if (call.return_token_strs) {
    json strs = json::array();
    for (const std::string& t : tokens.tokens()) strs.push_back(SanitizeUtf8(t));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

absl::StatusOr<v1::DetokenizeRequest> ParseVllmDetokenizeRequest(absl::string_view body, v1::ModelKind model) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  RETURN_IF_ERROR(CheckOpenAiModelField(root));
  const json* tokens = Field(root, "tokens");
  if (tokens == nullptr) return absl::InvalidArgumentError("tokens: required, an array of token ids");
  if (!tokens->is_array()) return TypeError("tokens", "an array of token ids", *tokens);
  ASSIGN_OR_RETURN(const v1::TokenIds ids, TokenIdsField(*tokens, "tokens"));
  v1::DetokenizeRequest request;
  request.set_model(model);
  *request.mutable_token_ids() = ids.ids();
  request.set_skip_special_tokens(false);  // transformers' decode keeps them
  return request;
}

json VllmDetokenizeResponse(const v1::DetokenizeResponse& text) { return json{{"prompt", SanitizeUtf8(text.text())}}; }

}  // namespace attnserve
