#include "server/http/anthropic_messages.h"

#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/core/status_macros.h"
#include "server/http/chat_rewrite.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/partial_json.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// A block's type, refused unless it is one of `allowed`.
absl::StatusOr<std::string> BlockType(const ojson& block, const std::string& field,
                                      std::initializer_list<const char*> allowed, const char* why) {
  if (!block.is_object()) return TypeError(field, "a content block object", block);
  ASSIGN_OR_RETURN(std::string type, RequiredString(block, "type", field));
  for (const char* a : allowed) {
    if (type == a) return type;
  }
  return Unsupported(field + ".type", absl::StrCat("'", SanitizeUtf8(type), "': ", why));
}

// A string, or text blocks joined with "\n" (system prompts, tool results).
absl::StatusOr<std::string> TextOf(const ojson& value, const std::string& field) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return TypeError(field, "a string or an array of text blocks", value);
  std::string text;
  for (size_t k = 0; k < value.size(); ++k) {
    const std::string block_field = absl::StrCat(field, "[", k, "]");
    RETURN_IF_ERROR(BlockType(value[k], block_field, {"text"}, "text blocks only").status());
    ASSIGN_OR_RETURN(const std::string part, RequiredString(value[k], "text", block_field));
    absl::StrAppend(&text, k == 0 ? "" : "\n", part);
  }
  return text;
}

// One Anthropic message as chat messages: a user message's tool_result
// blocks are tool messages (before its text), an assistant's tool_use
// blocks its tool_calls.
absl::Status AddMessage(const ojson& message, const std::string& field, ojson* messages,
                        std::vector<std::string>* fields) {
  if (!message.is_object()) return TypeError(field, "a message object", message);
  ASSIGN_OR_RETURN(const std::string role, RequiredString(message, "role", field));
  if (role != "user" && role != "assistant") {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".role: '", SanitizeUtf8(role), "' is not one of \"user\", \"assistant\""));
  }
  const ojson* content = Field(message, "content");
  if (content == nullptr) return absl::InvalidArgumentError(field + ".content: required");
  if (content->is_string()) {
    messages->push_back(ojson{{"role", role}, {"content", *content}});
    fields->push_back(field);
    return absl::OkStatus();
  }
  if (!content->is_array()) return TypeError(field + ".content", "a string or an array of content blocks", *content);
  ojson parts = ojson::array(), calls = ojson::array();
  std::string thinking;  // an assistant's thinking blocks, joined
  for (size_t k = 0; k < content->size(); ++k) {
    const ojson& block = (*content)[k];
    const std::string block_field = absl::StrCat(field, ".content[", k, "]");
    ASSIGN_OR_RETURN(const std::string type,
                     role == "user" ? BlockType(block, block_field, {"text", "tool_result"}, "text and tool_result only")
                                    : BlockType(block, block_field, {"text", "tool_use", "thinking"},
                                                "text, tool_use and thinking only (no redacted_thinking: this "
                                                "server writes none)"));
    if (type == "thinking") {
      // Thinking given back (as Anthropic asks in tool loops): the turn's
      // reasoning_content; the signature is not checked (this server's are
      // empty).
      ASSIGN_OR_RETURN(std::string text, RequiredString(block, "thinking", block_field));
      absl::StrAppend(&thinking, thinking.empty() ? "" : "\n\n", text);
    } else if (type == "text") {
      ASSIGN_OR_RETURN(std::string text, RequiredString(block, "text", block_field));
      parts.push_back(ojson{{"type", "text"}, {"text", std::move(text)}});
    } else if (type == "tool_use") {
      ASSIGN_OR_RETURN(const std::string id, RequiredString(block, "id", block_field));
      ASSIGN_OR_RETURN(const std::string name, RequiredString(block, "name", block_field));
      const ojson* input = Field(block, "input");
      if (input == nullptr || !input->is_object()) {
        return TypeError(block_field + ".input", "an object", input ? *input : ojson());
      }
      calls.push_back(
          ojson{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", input->dump()}}}});
    } else {  // tool_result: a tool message of its own
      ASSIGN_OR_RETURN(const std::string id, RequiredString(block, "tool_use_id", block_field));
      const ojson* result = Field(block, "content");
      std::string text;
      if (result != nullptr) {
        ASSIGN_OR_RETURN(text, TextOf(*result, block_field + ".content"));
      }
      messages->push_back(ojson{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(text)}});
      fields->push_back(block_field);
    }
  }
  if (!calls.empty()) {
    ojson m{{"role", "assistant"}, {"tool_calls", std::move(calls)}};
    if (!parts.empty()) m["content"] = std::move(parts);
    if (!thinking.empty()) m["reasoning_content"] = std::move(thinking);
    messages->push_back(std::move(m));
    fields->push_back(field);
  } else if (!parts.empty() || content->empty() || !thinking.empty()) {
    ojson m{{"role", role}, {"content", parts.empty() ? ojson("") : std::move(parts)}};
    if (!thinking.empty()) m["reasoning_content"] = std::move(thinking);
    messages->push_back(std::move(m));
    fields->push_back(field);
  }
  return absl::OkStatus();
}

// A client tool {"name", "description", "input_schema"} as chat's function.
absl::StatusOr<ojson> ChatFunction(const ojson& tool, const std::string& field) {
  if (const ojson* type = Field(tool, "type"); type != nullptr && *type != "custom") {
    return Unsupported(field + ".type", absl::StrCat(type->dump(), ": client tools only (no server tools)"));
  }
  ojson function = ojson::object();
  if (const ojson* v = Field(tool, "name"); v != nullptr) function["name"] = *v;
  if (const ojson* v = Field(tool, "description"); v != nullptr) function["description"] = *v;
  if (const ojson* v = Field(tool, "input_schema"); v != nullptr) function["parameters"] = *v;
  return function;
}

// tool_choice {"type": "auto" | "any" | "tool" | "none", "name",
// "disable_parallel_tool_use"} as chat's tool_choice and parallel_tool_calls.
absl::Status ChatToolChoice(const ojson& choice, ojson* chat) {
  if (!choice.is_object()) return TypeError("tool_choice", "an object", choice);
  ASSIGN_OR_RETURN(const std::string type, RequiredString(choice, "type", "tool_choice"));
  if (type == "auto" || type == "none") {
    (*chat)["tool_choice"] = type;
  } else if (type == "any") {
    (*chat)["tool_choice"] = "required";
  } else if (type == "tool") {
    ASSIGN_OR_RETURN(const std::string name, RequiredString(choice, "name", "tool_choice"));
    (*chat)["tool_choice"] = ojson{{"type", "function"}, {"function", {{"name", name}}}};
  } else {
    return absl::InvalidArgumentError(absl::StrCat("tool_choice.type: '", SanitizeUtf8(type),
                                                   "' is not one of \"auto\", \"any\", \"tool\", \"none\""));
  }
  if (const ojson* v = Field(choice, "disable_parallel_tool_use"); v != nullptr) {
    if (!v->is_boolean()) return TypeError("tool_choice.disable_parallel_tool_use", "a boolean", *v);
    (*chat)["parallel_tool_calls"] = !v->get<bool>();
  }
  return absl::OkStatus();
}

// thinking {"type": "enabled", "budget_tokens"} / {"type": "adaptive"} /
// {"type": "disabled"} as the template's thinking switch (Qwen3's
// enable_thinking; the other templates have none). Enabled needs a
// reasoning parser to set the thinking apart; budget_tokens is checked as
// Anthropic checks it (>= 1024, below max_tokens) and bounds the thinking
// as vLLM's thinking_token_budget (the end of the thinking is written once
// it is spent).
absl::Status ThinkingSwitch(const ojson& root, ReasoningParser reasoning, ojson* chat) {
  const ojson* thinking = Field(root, "thinking");
  if (thinking == nullptr || thinking->is_null()) return absl::OkStatus();
  if (!thinking->is_object()) return TypeError("thinking", "an object", *thinking);
  ASSIGN_OR_RETURN(const std::string type, RequiredString(*thinking, "type", "thinking"));
  if (type == "disabled") {
    (*chat)["chat_template_kwargs"] = ojson{{"enable_thinking", false}};
    return absl::OkStatus();
  }
  if (type != "enabled" && type != "adaptive") {
    return absl::InvalidArgumentError(absl::StrCat("thinking.type: '", SanitizeUtf8(type),
                                                   "' is not one of \"enabled\", \"adaptive\", \"disabled\""));
  }
  if (reasoning == ReasoningParser::kNone) {
    return Unsupported("thinking", "the model does not think apart (no --reasoning-parser); leave it out or send "
                                   "{\"type\": \"disabled\"}");
  }
  if (type == "enabled") {
    const ojson* budget = Field(*thinking, "budget_tokens");
    if (budget == nullptr) return absl::InvalidArgumentError("thinking.budget_tokens: required");
    if (!budget->is_number_integer()) return TypeError("thinking.budget_tokens", "an integer", *budget);
    const ojson* max_tokens = Field(root, "max_tokens");
    if (budget->get<int64_t>() < 1024) {
      return absl::InvalidArgumentError(absl::StrCat("thinking.budget_tokens = ", budget->dump(), ": must be >= 1024"));
    }
    if (max_tokens != nullptr && max_tokens->is_number_integer() && budget->get<int64_t>() >= max_tokens->get<int64_t>()) {
      return absl::InvalidArgumentError(absl::StrCat("thinking.budget_tokens = ", budget->dump(),
                                                     ": must be less than max_tokens (", max_tokens->dump(), ")"));
    }
    if (budget->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("thinking.budget_tokens = ", budget->dump(), ": too large"));
    }
    (*chat)["thinking_token_budget"] = budget->get<int64_t>();
  }
  (*chat)["chat_template_kwargs"] = ojson{{"enable_thinking", true}};
  return absl::OkStatus();
}

absl::Status RefuseUnsupported(const ojson& root) {
  if (const ojson* servers = Field(root, "mcp_servers"); servers != nullptr && !(servers->is_array() && servers->empty())) {
    return Unsupported("mcp_servers", "no server tools");
  }
  if (Field(root, "container") != nullptr) return Unsupported("container", "no server tools");
  return absl::OkStatus();
}

ojson Usage(const json& chat_usage) {
  const int64_t prompt = chat_usage.value("prompt_tokens", int64_t{0});
  const int64_t cached = chat_usage["prompt_tokens_details"].value("cached_tokens", int64_t{0});
  // Anthropic counts cached prompt tokens apart from input_tokens.
  return ojson{{"input_tokens", prompt - cached},
               {"cache_creation_input_tokens", 0},
               {"cache_read_input_tokens", cached},
               {"output_tokens", chat_usage.value("completion_tokens", int64_t{0})}};
}

// message_start's usage from a stream's first message: the prompt split as
// Usage splits it (the cache's part apart), nothing written yet.
ojson StartUsage(const v1::GenerateResponse& first) {
  const int64_t cached = first.cached_prompt_token_count();
  return ojson{{"input_tokens", first.prompt_token_count() - cached},
               {"cache_creation_input_tokens", 0},
               {"cache_read_input_tokens", cached},
               {"output_tokens", 0}};
}

}  // namespace

absl::StatusOr<AnthropicCall> ParseAnthropicMessagesRequest(absl::string_view body, const ToolSupport& tools,
                                                            ReasoningParser reasoning) {
  ASSIGN_OR_RETURN(const ojson root, ParseOrderedJsonObject(body));
  RETURN_IF_ERROR(RefuseUnsupported(root));
  AnthropicCall call;
  ojson chat{{"messages", ojson::array()}};
  RETURN_IF_ERROR(ThinkingSwitch(root, reasoning, &chat));
  if (const ojson* system = Field(root, "system"); system != nullptr) {
    ASSIGN_OR_RETURN(std::string text, TextOf(*system, "system"));
    chat["messages"].push_back(ojson{{"role", "system"}, {"content", std::move(text)}});
    call.message_fields.push_back("system");
  }
  const ojson* messages = Field(root, "messages");
  if (messages == nullptr) return absl::InvalidArgumentError("messages: required");
  if (!messages->is_array()) return TypeError("messages", "an array of messages", *messages);
  if (messages->empty()) return absl::InvalidArgumentError("messages: must not be empty");
  for (size_t j = 0; j < messages->size(); ++j) {
    RETURN_IF_ERROR(AddMessage((*messages)[j], absl::StrCat("messages[", j, "]"), &chat["messages"],
                               &call.message_fields));
  }
  // Anthropic requires max_tokens: there is no default length.
  const ojson* max_tokens = Field(root, "max_tokens");
  if (max_tokens == nullptr) return absl::InvalidArgumentError("max_tokens: required");
  chat["max_completion_tokens"] = *max_tokens;
  if (const ojson* t = Field(root, "temperature"); t != nullptr) {
    if (!t->is_number()) return TypeError("temperature", "a number", *t);
    if (t->get<double>() < 0 || t->get<double>() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("temperature = ", t->dump(), ": must be in [0, 1]"));
    }
    chat["temperature"] = *t;
  }
  // Anthropic's own fields, then vLLM's sampling extensions as chat takes them.
  for (const char* key : {"model", "top_p", "top_k", "stream", "seed", "min_p", "repetition_penalty", "min_tokens",
                          "ignore_eos"}) {
    if (const ojson* v = Field(root, key); v != nullptr) chat[key] = *v;
  }
  if (const ojson* stop = Field(root, "stop_sequences"); stop != nullptr) {
    if (!stop->is_array()) return TypeError("stop_sequences", "an array of strings", *stop);
    chat["stop"] = *stop;
  }
  if (const ojson* v = Field(root, "tools"); v != nullptr) {
    ASSIGN_OR_RETURN(chat["tools"], ChatFunctionTools(*v, ChatFunction));
  }
  if (const ojson* v = Field(root, "tool_choice"); v != nullptr) RETURN_IF_ERROR(ChatToolChoice(*v, &chat));
  // Structured outputs: output_config.format {"type": "json_schema", "schema"}.
  if (const ojson* config = Field(root, "output_config"); config != nullptr) {
    if (!config->is_object()) return TypeError("output_config", "an object", *config);
    if (Field(*config, "effort") != nullptr) {
      return Unsupported("output_config.effort", "the model does not reason apart");
    }
    if (const ojson* format = Field(*config, "format"); format != nullptr) {
      if (!format->is_object()) return TypeError("output_config.format", "an object", *format);
      ASSIGN_OR_RETURN(const std::string type, RequiredString(*format, "type", "output_config.format"));
      if (type != "json_schema") {
        return Unsupported("output_config.format.type", absl::StrCat("'", SanitizeUtf8(type), "': json_schema only"));
      }
      const ojson* schema = Field(*format, "schema");
      if (schema == nullptr) return absl::InvalidArgumentError("output_config.format.schema: required");
      chat["response_format"] = ojson{{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", *schema}}}};
    }
  }
  absl::StatusOr<CompletionCall> completion = ParseChatCompletionRequest(chat.dump(), tools);
  if (!completion.ok()) return WithAnthropicFieldNames(completion.status(), call);
  call.completion = std::move(*completion);
  return call;
}

absl::StatusOr<v1::TokenizeRequest> ParseAnthropicCountTokensRequest(absl::string_view body, const ToolSupport& tools,
                                                                     ReasoningParser reasoning) {
  ASSIGN_OR_RETURN(ojson root, ParseOrderedJsonObject(body));
  // Counting writes nothing: a length is not needed, so any will do (past
  // a thinking budget, which must be below it).
  if (Field(root, "max_tokens") == nullptr) root["max_tokens"] = int64_t{1} << 30;
  ASSIGN_OR_RETURN(const AnthropicCall call, ParseAnthropicMessagesRequest(root.dump(), tools, reasoning));
  v1::TokenizeRequest request;
  request.set_model(v1::MODEL_KIND_DECODER);
  *request.mutable_chat() = call.completion.requests[0].chat();
  return request;
}

absl::Status WithAnthropicFieldNames(const absl::Status& status, const AnthropicCall& call) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  std::string message = NameChatMessage(std::string(status.message()), call.message_fields);
  if (absl::StartsWith(message, "stop:") || absl::StartsWith(message, "stop[")) {
    message = absl::StrCat("stop_sequences", message.substr(4));
  }
  message = NameResponseSchema(message, call.completion.format.tools, "output_config.format.schema");
  message = absl::StrReplaceAll(message, {{"max_completion_tokens", "max_tokens"},
                                          {"response_format", "output_config.format"},
                                          {".function.parameters", ".input_schema"},
                                          {".function.", "."}});
  return absl::InvalidArgumentError(message);
}

json AnthropicError(const absl::Status& status) {
  const char* type = "api_error";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: type = "invalid_request_error"; break;
    case absl::StatusCode::kUnauthenticated: type = "authentication_error"; break;
    case absl::StatusCode::kPermissionDenied: type = "permission_error"; break;
    case absl::StatusCode::kNotFound: type = "not_found_error"; break;
    case absl::StatusCode::kResourceExhausted: type = "rate_limit_error"; break;
    case absl::StatusCode::kUnavailable: type = "overloaded_error"; break;
    default: break;
  }
  return json{{"type", "error"}, {"error", {{"type", type}, {"message", SanitizeUtf8(status.message())}}}};
}

ojson AnthropicMessage(const AnthropicCall& call, const std::vector<v1::GenerateResponse>& chunks,
                       const AnthropicIdentity& id) {
  const json chat = ChatCompletionResponse({chunks}, CompletionIdentity{id.id, 0, id.model}, call.completion.format);
  const json& choice = chat["choices"][0];
  const json& message = choice["message"];
  ojson content = ojson::array();
  // The thinking first (--reasoning-parser), as Anthropic gives it; the
  // signature empty (nothing is signed here).
  if (message.contains("reasoning") && message["reasoning"].is_string() &&
      !message["reasoning"].get_ref<const std::string&>().empty()) {
    content.push_back(ojson{{"type", "thinking"}, {"thinking", message["reasoning"]}, {"signature", ""}});
  }
  // Text first: hermes writes text before its calls.
  if (message["content"].is_string() && !message["content"].get_ref<const std::string&>().empty()) {
    content.push_back(ojson{{"type", "text"}, {"text", message["content"]}});
  }
  if (message.contains("tool_calls")) {
    for (const json& c : message["tool_calls"]) {
      const std::string& arguments = c["function"]["arguments"].get_ref<const std::string&>();
      ojson input = ojson::parse(arguments, nullptr, /*allow_exceptions=*/false);
      if (!input.is_object()) {
        // A call cut by max_tokens: its input as far as it was written, as
        // the anthropic SDK reads a streamed one (jiter's partial mode; none
        // written: the {} its content_block_start carries).
        std::optional<ojson> partial = arguments.empty() ? ojson::object() : PartialJsonValue(arguments);
        if (!partial.has_value() || !partial->is_object()) {
          content.push_back(ojson{{"type", "text"}, {"text", arguments}});
          continue;
        }
        input = std::move(*partial);
      }
      content.push_back(ojson{{"type", "tool_use"}, {"id", c["id"]}, {"name", c["function"]["name"]},
                              {"input", std::move(input)}});
    }
  }
  const std::string finish = choice["finish_reason"];
  const json& stop = choice["stop_reason"];
  ojson stop_reason = "end_turn", stop_sequence;
  if (finish == "length") {
    stop_reason = "max_tokens";
  } else if (message.contains("tool_calls")) {
    stop_reason = "tool_use";
  } else if (stop.is_string()) {
    stop_reason = "stop_sequence";
    stop_sequence = stop.get<std::string>();
  }
  return ojson{{"id", id.id},
               {"type", "message"},
               {"role", "assistant"},
               {"model", id.model},
               {"content", std::move(content)},
               {"stop_reason", std::move(stop_reason)},
               {"stop_sequence", std::move(stop_sequence)},
               {"usage", Usage(chat["usage"])}};
}

AnthropicStream::AnthropicStream(const AnthropicCall& call, AnthropicIdentity id) : call_(call), id_(std::move(id)) {}

std::string AnthropicStream::Start(const v1::GenerateResponse& first) {
  return TypedSseEvent(ojson{{"type", "message_start"},
                   {"message",
                    {{"id", id_.id},
                     {"type", "message"},
                     {"role", "assistant"},
                     {"model", id_.model},
                     {"content", ojson::array()},
                     {"stop_reason", nullptr},
                     {"stop_sequence", nullptr},
                     {"usage", StartUsage(first)}}}});
}

std::string AnthropicStream::Close() {
  if (open_ == Block::kNone) return "";
  open_ = Block::kNone;
  return TypedSseEvent(ojson{{"type", "content_block_stop"}, {"index", blocks_ - 1}});
}

std::string AnthropicStream::Open(Block kind, ojson block) {
  std::string events = Close();
  events += TypedSseEvent(
      ojson{{"type", "content_block_start"}, {"index", blocks_++}, {"content_block", std::move(block)}});
  open_ = kind;
  return events;
}

std::string AnthropicStream::Delta(ojson delta) const {
  return TypedSseEvent(ojson{{"type", "content_block_delta"}, {"index", blocks_ - 1}, {"delta", std::move(delta)}});
}

std::string AnthropicStream::Next(const v1::GenerateResponse& chunk) {
  chunks_.push_back(chunk);
  const json delta_chunk = ChatCompletionChunk(chunk, CompletionIdentity{id_.id, 0, id_.model}, call_.completion.format,
                                               0, ChunkUsage::kNone, &chat_);
  const json& delta = delta_chunk["choices"][0]["delta"];
  std::string events;
  if (const auto thinking = delta.find("reasoning"); thinking != delta.end() && thinking->is_string() &&
                                                     !thinking->get_ref<const std::string&>().empty()) {
    if (open_ != Block::kThinking) {
      events += Open(Block::kThinking, ojson{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    }
    events += Delta(ojson{{"type", "thinking_delta"}, {"thinking", *thinking}});
  }
  if (const auto text = delta.find("content"); text != delta.end() && text->is_string() &&
                                               !text->get_ref<const std::string&>().empty()) {
    if (open_ != Block::kText) events += Open(Block::kText, ojson{{"type", "text"}, {"text", ""}});
    events += Delta(ojson{{"type", "text_delta"}, {"text", *text}});
  }
  if (const auto tool_calls = delta.find("tool_calls"); tool_calls != delta.end()) {
    for (const json& c : *tool_calls) {
      const json function = c.value("function", json::object());
      if (c["index"].get<int>() >= calls_) {  // chat opens a call with its id and name
        ++calls_;
        events += Open(Block::kToolUse, ojson{{"type", "tool_use"},
                                              {"id", c.value("id", "")},
                                              {"name", function.value("name", "")},
                                              {"input", ojson::object()}});
      }
      const std::string arguments = function.value("arguments", "");
      if (arguments.empty()) continue;
      events += Delta(ojson{{"type", "input_json_delta"}, {"partial_json", arguments}});
    }
  }
  if (chunk.finish_reason() == v1::FINISH_REASON_UNSPECIFIED) return events;
  const ojson message = AnthropicMessage(call_, chunks_, id_);
  events += Close();
  events += TypedSseEvent(ojson{{"type", "message_delta"},
                      {"delta", {{"stop_reason", message["stop_reason"]}, {"stop_sequence", message["stop_sequence"]}}},
                      {"usage", message["usage"]}});
  events += TypedSseEvent(ojson{{"type", "message_stop"}});
  return events;
}

std::string AnthropicStream::Failed(const absl::Status& status) {
  return TypedSseEvent(ojson::parse(AnthropicError(status).dump()));
}

}  // namespace attnserve
