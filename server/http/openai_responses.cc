#include "server/http/openai_responses.h"

#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/core/status_macros.h"
#include "server/http/chat_rewrite.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// What this server cannot do of the Responses API: refused by name rather
// than ignored, since each would change the answer or promise a later one.
absl::Status RefuseUnsupported(const ojson& root) {
  static constexpr std::pair<const char*, const char*> kRefused[] = {
      {"previous_response_id", "responses are not stored: send the whole conversation as input"},
      {"conversation", "responses are not stored: send the whole conversation as input"},
      {"prompt", "no prompt templates are stored"},
      {"max_tool_calls", "the tool calls are bounded by tool_choice and parallel_tool_calls"},
  };
  for (const auto& [field, why] : kRefused) {
    if (Field(root, field) != nullptr) return Unsupported(field, why);
  }
  for (const char* field : {"store", "background"}) {
    const ojson* v = Field(root, field);
    if (v != nullptr && !v->is_boolean()) return TypeError(field, "a boolean", *v);
    if (v != nullptr && v->get<bool>()) {
      return Unsupported(field, std::string(field) == "store" ? "responses are not stored; send false or leave it out"
                                                              : "responses are answered in the request");
    }
  }
  if (const ojson* reasoning = Field(root, "reasoning"); reasoning != nullptr) {
    if (!reasoning->is_object()) return TypeError("reasoning", "an object", *reasoning);
    for (const auto& [key, value] : reasoning->items()) {
      if (!value.is_null()) return Unsupported(absl::StrCat("reasoning.", key), "the model does not reason apart");
    }
  }
  if (const ojson* include = Field(root, "include"); include != nullptr) {
    if (!include->is_array()) return TypeError("include", "an array of strings", *include);
    for (size_t i = 0; i < include->size(); ++i) {
      if ((*include)[i] != "message.output_text.logprobs") {
        return Unsupported(absl::StrCat("include[", i, "]"),
                           absl::StrCat((*include)[i].dump(), ": only \"message.output_text.logprobs\""));
      }
    }
  }
  if (const ojson* truncation = Field(root, "truncation"); truncation != nullptr && *truncation != "disabled") {
    return Unsupported("truncation", "only \"disabled\": a conversation over the context is refused");
  }
  return absl::OkStatus();
}

// A content part's text: input_text / output_text / text parts; others are
// refused (text only).
absl::StatusOr<std::string> PartText(const ojson& part, const std::string& field) {
  if (!part.is_object()) return TypeError(field, "a content part object", part);
  const ojson* type = Field(part, "type");
  const std::string t = type != nullptr && type->is_string() ? type->get<std::string>() : "";
  if (t != "input_text" && t != "output_text" && t != "text") {
    return Unsupported(absl::StrCat(field, ".type"), absl::StrCat("'", SanitizeUtf8(t), "': text parts only"));
  }
  const ojson* text = Field(part, "text");
  if (text == nullptr || !text->is_string()) return TypeError(field + ".text", "a string", text ? *text : ojson());
  return text->get<std::string>();
}

// A message's content: a string, or text parts (joined with "\n" as chat
// joins its parts).
absl::StatusOr<ojson> MessageContent(const ojson& content, const std::string& field) {
  if (content.is_string()) return content;
  if (!content.is_array()) return TypeError(field, "a string or an array of content parts", content);
  ojson parts = ojson::array();
  for (size_t k = 0; k < content.size(); ++k) {
    ASSIGN_OR_RETURN(std::string text, PartText(content[k], absl::StrCat(field, "[", k, "]")));
    parts.push_back(ojson{{"type", "text"}, {"text", std::move(text)}});
  }
  return parts;
}

// A reasoning item's thinking: its reasoning_text parts, joined (or, with
// none, its summary_text parts, joined by blank lines). Encrypted content,
// which this server never writes, is refused.
absl::StatusOr<std::string> ReasoningItemText(const ojson& item, const std::string& field) {
  if (const ojson* encrypted = Field(item, "encrypted_content"); encrypted != nullptr && !encrypted->is_null()) {
    return Unsupported(field + ".encrypted_content", "this server writes none: give the thinking as content");
  }
  auto texts = [&](const char* key, const char* type, const char* separator) -> absl::StatusOr<std::string> {
    const ojson* parts = Field(item, key);
    if (parts == nullptr || parts->is_null()) return std::string();
    const std::string where = absl::StrCat(field, ".", key);
    if (!parts->is_array()) return TypeError(where, "an array", *parts);
    std::string joined;
    for (size_t k = 0; k < parts->size(); ++k) {
      const std::string part = absl::StrCat(where, "[", k, "]");
      const ojson& p = (*parts)[k];
      if (!p.is_object()) return TypeError(part, absl::StrCat("a ", type, " part"), p);
      if (const ojson* t = Field(p, "type"); t == nullptr || *t != type) {
        return Unsupported(part + ".type", absl::StrCat("only \"", type, "\""));
      }
      ASSIGN_OR_RETURN(const std::string text, RequiredString(p, "text", part));
      absl::StrAppend(&joined, k == 0 ? "" : separator, text);
    }
    return joined;
  };
  ASSIGN_OR_RETURN(std::string content, texts("content", "reasoning_text", ""));
  ASSIGN_OR_RETURN(std::string summary, texts("summary", "summary_text", "\n\n"));
  return content.empty() ? summary : content;
}

// input (a string, or message / function_call / function_call_output /
// reasoning items) and instructions as chat messages; fields[k] names
// message k's source. A reasoning item (a thinking given back, as the
// Responses API asks of clients that keep the conversation) becomes the
// reasoning_content of the assistant turn after it (a message or calls),
// or an assistant turn of its own where none follows.
absl::Status AddMessages(const ojson& root, ojson* messages, std::vector<std::string>* fields) {
  if (const ojson* instructions = Field(root, "instructions"); instructions != nullptr) {
    if (!instructions->is_string()) return TypeError("instructions", "a string", *instructions);
    messages->push_back(ojson{{"role", "system"}, {"content", *instructions}});
    fields->push_back("instructions");
  }
  const ojson* input = Field(root, "input");
  if (input == nullptr) return absl::InvalidArgumentError("input: required");
  if (input->is_string()) {
    messages->push_back(ojson{{"role", "user"}, {"content", *input}});
    fields->push_back("input");
    return absl::OkStatus();
  }
  if (!input->is_array()) return TypeError("input", "a string or an array of input items", *input);
  if (input->empty()) return absl::InvalidArgumentError("input: must not be empty");
  bool after_call = false;  // the item before was a function_call
  std::optional<std::string> thinking;  // a reasoning item's, for the next assistant turn
  std::string thinking_field;
  auto flush_thinking = [&] {
    if (!thinking.has_value()) return;
    messages->push_back(ojson{{"role", "assistant"}, {"content", ""}, {"reasoning_content", *thinking}});
    fields->push_back(thinking_field);
    thinking.reset();
  };
  for (size_t j = 0; j < input->size(); ++j) {
    const ojson& item = (*input)[j];
    const std::string field = absl::StrCat("input[", j, "]");
    if (!item.is_object()) return TypeError(field, "an input item object", item);
    const ojson* type = Field(item, "type");
    const std::string t = type == nullptr ? "message" : (type->is_string() ? type->get<std::string>() : "");
    const bool call_follows_call = after_call && t == "function_call" && !thinking.has_value();
    after_call = t == "function_call";
    if (t == "reasoning") {
      flush_thinking();  // two in a row: the first is a turn of its own
      ASSIGN_OR_RETURN(thinking, ReasoningItemText(item, field));
      thinking_field = field;
      continue;
    }
    // The thinking goes with the assistant turn this item begins.
    const bool assistant = t == "function_call" ||
                           (t == "message" && Field(item, "role") != nullptr && *Field(item, "role") == "assistant");
    if (!assistant) flush_thinking();
    if (t == "message") {
      ASSIGN_OR_RETURN(const std::string role, RequiredString(item, "role", field));
      const ojson* content = Field(item, "content");
      if (content == nullptr) return absl::InvalidArgumentError(field + ".content: required");
      ASSIGN_OR_RETURN(ojson text, MessageContent(*content, field + ".content"));
      messages->push_back(ojson{{"role", role}, {"content", std::move(text)}});
    } else if (t == "function_call") {
      ASSIGN_OR_RETURN(const std::string call_id, RequiredString(item, "call_id", field));
      ASSIGN_OR_RETURN(const std::string name, RequiredString(item, "name", field));
      ASSIGN_OR_RETURN(const std::string arguments, RequiredString(item, "arguments", field));
      ojson call{{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
      // Calls in a row are one assistant turn, as chat writes them.
      if (call_follows_call) {
        messages->back()["tool_calls"].push_back(std::move(call));
        continue;
      }
      messages->push_back(ojson{{"role", "assistant"}, {"tool_calls", ojson::array({std::move(call)})}});
    } else if (t == "function_call_output") {
      ASSIGN_OR_RETURN(const std::string call_id, RequiredString(item, "call_id", field));
      const ojson* output = Field(item, "output");
      if (output == nullptr) return absl::InvalidArgumentError(field + ".output: required");
      ASSIGN_OR_RETURN(ojson text, MessageContent(*output, field + ".output"));
      messages->push_back(ojson{{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(text)}});
    } else {
      return Unsupported(field + ".type", absl::StrCat("'", SanitizeUtf8(t),
                                                       "': messages, function_call, function_call_output and "
                                                       "reasoning only"));
    }
    if (thinking.has_value()) {
      messages->back()["reasoning_content"] = *thinking;
      thinking.reset();
    }
    fields->push_back(field);
  }
  flush_thinking();
  return absl::OkStatus();
}

// A function tool {"type": "function", "name", ...} as chat's function.
absl::StatusOr<ojson> ChatFunction(const ojson& tool, const std::string& field) {
  ASSIGN_OR_RETURN(const std::string type, RequiredString(tool, "type", field));
  if (type != "function") {
    return Unsupported(field + ".type", absl::StrCat("'", SanitizeUtf8(type), "': function tools only"));
  }
  ojson function = ojson::object();
  for (const char* key : {"name", "description", "parameters", "strict"}) {
    if (const ojson* v = Field(tool, key); v != nullptr) function[key] = *v;
  }
  return function;
}

absl::StatusOr<ojson> ChatToolChoice(const ojson& choice) {
  if (choice.is_string()) return choice;
  if (!choice.is_object()) return TypeError("tool_choice", "\"auto\", \"none\", \"required\" or a function", choice);
  const ojson* type = Field(choice, "type");
  if (type == nullptr || *type != "function") {
    return Unsupported("tool_choice.type", "only {\"type\": \"function\", \"name\": ...} beside the strings");
  }
  ASSIGN_OR_RETURN(const std::string name, RequiredString(choice, "name", "tool_choice"));
  return ojson{{"type", "function"}, {"function", {{"name", name}}}};
}

// text.format as chat's response_format (none for "text").
absl::StatusOr<ojson> ChatResponseFormat(const ojson& text) {
  if (!text.is_object()) return TypeError("text", "an object", text);
  const ojson* format = Field(text, "format");
  if (format == nullptr) return ojson();
  if (!format->is_object()) return TypeError("text.format", "an object", *format);
  ASSIGN_OR_RETURN(const std::string type, RequiredString(*format, "type", "text.format"));
  if (type == "text") return ojson();
  if (type == "json_object") return ojson{{"type", "json_object"}};
  if (type != "json_schema") {
    return Unsupported("text.format.type", absl::StrCat("'", SanitizeUtf8(type), "': text, json_object or json_schema"));
  }
  ojson schema = ojson::object();
  for (const char* key : {"name", "description", "schema", "strict"}) {
    if (const ojson* v = Field(*format, key); v != nullptr) schema[key] = *v;
  }
  return ojson{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

// The request's fields a response object repeats, with their defaults.
ojson Echo(const ojson& root) {
  auto value = [&](const char* key, ojson fallback) {
    const ojson* v = Field(root, key);
    return v != nullptr ? *v : fallback;
  };
  ojson format{{"type", "text"}};
  if (const ojson* text = Field(root, "text"); text != nullptr) {
    if (const ojson* f = Field(*text, "format"); f != nullptr) format = *f;
  }
  return ojson{{"instructions", value("instructions", nullptr)},
               {"max_output_tokens", value("max_output_tokens", nullptr)},
               {"metadata", value("metadata", ojson::object())},
               {"parallel_tool_calls", value("parallel_tool_calls", true)},
               {"previous_response_id", nullptr},
               {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
               {"store", false},
               {"temperature", value("temperature", 1.0)},
               {"text", {{"format", format}}},
               {"tool_choice", value("tool_choice", "auto")},
               {"tools", value("tools", ojson::array())},
               {"top_p", value("top_p", 1.0)},
               {"truncation", "disabled"},
               {"user", value("user", nullptr)}};
}

std::string Suffix(const ResponseIdentity& id) {
  return absl::StartsWith(id.id, "resp_") ? id.id.substr(5) : id.id;
}

// The answer's tokens up to the one whose text ends its thinking (each
// chunk is a token's message): a chunk counts while the reader is in the
// thinking before or after it. 0 without a reasoning parser.
int64_t ReasoningTokens(const CompletionFormat& format, const std::vector<v1::GenerateResponse>& chunks) {
  if (format.reasoning == ReasoningParser::kNone) return 0;
  ReasoningSplitter splitter(format.reasoning, format.thinking_off);
  int64_t tokens = 0;
  for (const v1::GenerateResponse& chunk : chunks) {
    const bool before = splitter.thinking();
    std::string reasoning, content;
    splitter.Feed(chunk.text(), chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED, &reasoning, &content);
    if (before || splitter.thinking() || !reasoning.empty()) tokens += chunk.token_ids_size();
  }
  return tokens;
}

ojson Usage(const json& chat_usage, int64_t reasoning_tokens) {
  const int64_t input = chat_usage.value("prompt_tokens", int64_t{0});
  const int64_t output = chat_usage.value("completion_tokens", int64_t{0});
  return ojson{{"input_tokens", input},
               {"input_tokens_details", {{"cached_tokens", chat_usage["prompt_tokens_details"]["cached_tokens"]}}},
               {"output_tokens", output},
               {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
               {"total_tokens", input + output},
               {"peak_kv_cache_bytes", chat_usage.value("peak_kv_cache_bytes", int64_t{0})}};
}

// A chat chunk's logprobs entries ({token, logprob, bytes, top_logprobs},
// the Responses API's shape too), or none.
ojson DeltaLogprobs(const json& chat_chunk) {
  const json& logprobs = chat_chunk["choices"][0]["logprobs"];
  return logprobs.is_object() ? ojson::parse(logprobs["content"].dump()) : ojson::array();
}

ojson OutputText(const std::string& text) {
  return ojson{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
}

ojson MessageItem(const std::string& id, const char* status, ojson content) {
  return ojson{{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

ojson ReasoningText(const std::string& text) { return ojson{{"type", "reasoning_text"}, {"text", text}}; }

ojson ReasoningItem(const std::string& id, const char* status, ojson content) {
  return ojson{{"id", id}, {"type", "reasoning"}, {"summary", ojson::array()}, {"content", std::move(content)},
               {"status", status}};
}

// The index in `output` of its first item of `type`, or -1.
int ItemIndex(const ojson& output, const char* type) {
  for (size_t i = 0; i < output.size(); ++i) {
    if (output[i]["type"] == type) return static_cast<int>(i);
  }
  return -1;
}

ojson CallItem(const std::string& id, const std::string& call_id, const std::string& name,
               const std::string& arguments, const char* status) {
  return ojson{{"id", id},           {"type", "function_call"}, {"status", status},
               {"arguments", arguments}, {"call_id", call_id},  {"name", name}};
}

}  // namespace

absl::StatusOr<ResponsesCall> ParseResponsesRequest(absl::string_view body, const ToolSupport& tools) {
  ASSIGN_OR_RETURN(const ojson root, ParseOrderedJsonObject(body));
  RETURN_IF_ERROR(RefuseUnsupported(root));
  ResponsesCall call;
  ojson chat = ojson::object();
  ojson messages = ojson::array();
  RETURN_IF_ERROR(AddMessages(root, &messages, &call.message_fields));
  chat["messages"] = std::move(messages);
  // OpenAI's own fields, then vLLM's sampling extensions as chat takes them.
  for (const char* key : {"model", "user", "temperature", "top_p", "stream", "parallel_tool_calls", "seed", "top_k",
                          "min_p", "repetition_penalty", "min_tokens", "ignore_eos"}) {
    if (const ojson* v = Field(root, key); v != nullptr) chat[key] = *v;
  }
  if (const ojson* v = Field(root, "max_output_tokens"); v != nullptr) chat["max_completion_tokens"] = *v;
  // Logprobs: asked by include (and top_logprobs, the alternatives a token).
  const ojson* include = Field(root, "include");
  const ojson* top = Field(root, "top_logprobs");
  if ((include != nullptr && !include->empty()) || (top != nullptr && *top != 0)) chat["logprobs"] = true;
  if (top != nullptr && *top != 0) chat["top_logprobs"] = *top;
  if (const ojson* v = Field(root, "metadata"); v != nullptr && !v->is_object()) {
    return TypeError("metadata", "an object of strings", *v);
  }
  if (const ojson* v = Field(root, "text"); v != nullptr) {
    ASSIGN_OR_RETURN(ojson format, ChatResponseFormat(*v));
    if (!format.is_null()) chat["response_format"] = std::move(format);
  }
  if (const ojson* v = Field(root, "tools"); v != nullptr) {
    ASSIGN_OR_RETURN(chat["tools"], ChatFunctionTools(*v, ChatFunction));
  }
  if (const ojson* v = Field(root, "tool_choice"); v != nullptr) {
    ASSIGN_OR_RETURN(chat["tool_choice"], ChatToolChoice(*v));
  }
  absl::StatusOr<CompletionCall> completion = ParseChatCompletionRequest(chat.dump(), tools);
  if (!completion.ok()) return WithResponsesFieldNames(completion.status(), call);
  call.completion = std::move(*completion);
  call.echo = Echo(root);
  return call;
}

absl::Status WithResponsesFieldNames(const absl::Status& status, const ResponsesCall& call) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  // messages[k] -> the input item (or instructions) it came from.
  std::string message = NameChatMessage(std::string(status.message()), call.message_fields);
  message = NameResponseSchema(message, call.completion.format.tools, "text.format.schema");
  message = absl::StrReplaceAll(message, {{"max_completion_tokens", "max_output_tokens"},
                                          {"'max_tokens'", "'max_output_tokens'"},
                                          {"response_format.json_schema.", "text.format."},
                                          {"response_format", "text.format"},
                                          {".function.", "."}});
  return absl::InvalidArgumentError(message);
}

ojson ResponseObject(const ResponsesCall& call, const std::vector<v1::GenerateResponse>& chunks,
                     const ResponseIdentity& id) {
  const json chat =
      ChatCompletionResponse({chunks}, CompletionIdentity{id.id, id.created_at, id.model}, call.completion.format);
  const json& choice = chat["choices"][0];
  const json& message = choice["message"];
  const bool cut = choice["finish_reason"] == "length";
  const char* item_status = cut ? "incomplete" : "completed";
  ojson output = ojson::array();
  // A reasoning model's thinking first (--reasoning-parser), as vLLM and
  // OpenAI give it: a reasoning item whose content is the text.
  const bool thought = message.contains("reasoning") && message["reasoning"].is_string() &&
                       !message["reasoning"].get_ref<const std::string&>().empty();
  if (thought) {
    output.push_back(ReasoningItem(absl::StrCat("rs_", Suffix(id)), item_status,
                                   ojson::array({ReasoningText(message["reasoning"].get<std::string>())})));
  }
  // The text, unless the answer is calls or thinking alone (hermes writes
  // text before its calls: a message item, then theirs, as a stream opens
  // them).
  const bool calls = message.contains("tool_calls");
  const bool has_text =
      message["content"].is_string() && !message["content"].get_ref<const std::string&>().empty();
  if (has_text || (!calls && !thought)) {
    ojson text = OutputText(has_text ? message["content"].get<std::string>() : "");
    if (call.completion.format.logprobs) text["logprobs"] = ojson::parse(choice["logprobs"]["content"].dump());
    output.push_back(MessageItem(absl::StrCat("msg_", Suffix(id)), item_status, ojson::array({std::move(text)})));
  }
  if (calls) {
    for (size_t i = 0; i < message["tool_calls"].size(); ++i) {
      const json& c = message["tool_calls"][i];
      output.push_back(CallItem(absl::StrCat("fc_", Suffix(id), "_", i), c["id"], c["function"]["name"],
                                c["function"]["arguments"], item_status));
    }
  }
  ojson out{{"id", id.id},
            {"object", "response"},
            {"created_at", id.created_at},
            {"status", cut ? "incomplete" : "completed"},
            {"error", nullptr},
            {"incomplete_details", cut ? ojson{{"reason", "max_output_tokens"}} : ojson()},
            {"model", id.model},
            {"output", std::move(output)}};
  for (const auto& [key, value] : call.echo.items()) out[key] = value;
  out["usage"] = Usage(chat["usage"], ReasoningTokens(call.completion.format, chunks));
  return out;
}

ResponsesStream::ResponsesStream(const ResponsesCall& call, ResponseIdentity id) : call_(call), id_(std::move(id)) {}

std::string ResponsesStream::Event(ojson event) {
  event["sequence_number"] = sequence_++;
  return TypedSseEvent(event);
}

ojson ResponsesStream::Shell(const char* status) const {
  ojson out{{"id", id_.id},         {"object", "response"}, {"created_at", id_.created_at}, {"status", status},
            {"error", nullptr},     {"incomplete_details", nullptr}, {"model", id_.model},
            {"output", ojson::array()}};
  for (const auto& [key, value] : call_.echo.items()) out[key] = value;
  out["usage"] = nullptr;
  return out;
}

std::string ResponsesStream::Start(const v1::GenerateResponse& /*first*/) {
  // One statement each: the events number themselves in the order made.
  std::string events = Event(ojson{{"type", "response.created"}, {"response", Shell("in_progress")}});
  events += Event(ojson{{"type", "response.in_progress"}, {"response", Shell("in_progress")}});
  return events;
}

std::string ResponsesStream::OpenTextItem(int index, ojson item, ojson part) {
  const ojson item_id = item["id"];
  std::string events = Event(ojson{{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
  events += Event(ojson{{"type", "response.content_part.added"},
                        {"item_id", item_id},
                        {"output_index", index},
                        {"content_index", 0},
                        {"part", std::move(part)}});
  return events;
}

std::string ResponsesStream::CloseTextItem(int index, const ojson& item, const char* done_type, bool logprobs) {
  const ojson& part = item["content"][0];
  ojson done{{"type", done_type},
             {"item_id", item["id"]},
             {"output_index", index},
             {"content_index", 0},
             {"text", part["text"]}};
  if (logprobs) done["logprobs"] = part["logprobs"];
  std::string events = Event(std::move(done));
  events += Event(ojson{{"type", "response.content_part.done"},
                        {"item_id", item["id"]},
                        {"output_index", index},
                        {"content_index", 0},
                        {"part", part}});
  events += Event(ojson{{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  return events;
}

std::string ResponsesStream::OpenMessage() {
  message_index_ = output_items_++;
  return OpenTextItem(message_index_, MessageItem(absl::StrCat("msg_", Suffix(id_)), "in_progress", ojson::array()),
                      OutputText(""));
}

std::string ResponsesStream::OpenReasoning() {
  reasoning_index_ = output_items_++;
  return OpenTextItem(reasoning_index_,
                      ReasoningItem(absl::StrCat("rs_", Suffix(id_)), "in_progress", ojson::array()),
                      ReasoningText(""));
}

std::string ResponsesStream::Next(const v1::GenerateResponse& chunk) {
  chunks_.push_back(chunk);
  const json delta_chunk = ChatCompletionChunk(chunk, CompletionIdentity{id_.id, id_.created_at, id_.model},
                                               call_.completion.format, 0, ChunkUsage::kNone, &chat_);
  const json& delta = delta_chunk["choices"][0]["delta"];
  std::string events;
  if (const auto reasoning = delta.find("reasoning"); reasoning != delta.end() && reasoning->is_string() &&
                                                      !reasoning->get_ref<const std::string&>().empty()) {
    if (reasoning_index_ < 0) events += OpenReasoning();
    events += Event(ojson{{"type", "response.reasoning_text.delta"},
                          {"item_id", absl::StrCat("rs_", Suffix(id_))},
                          {"output_index", reasoning_index_},
                          {"content_index", 0},
                          {"delta", *reasoning}});
  }
  if (const auto content = delta.find("content"); content != delta.end() && content->is_string() &&
                                                  !content->get_ref<const std::string&>().empty()) {
    if (message_index_ < 0) events += OpenMessage();
    text_ += content->get<std::string>();
    events += Event(ojson{{"type", "response.output_text.delta"},
                          {"item_id", absl::StrCat("msg_", Suffix(id_))},
                          {"output_index", message_index_},
                          {"content_index", 0},
                          {"delta", *content},
                          {"logprobs", DeltaLogprobs(delta_chunk)}});
  }
  if (const auto tool_calls = delta.find("tool_calls"); tool_calls != delta.end()) {
    for (const json& c : *tool_calls) {
      const size_t index = c["index"].get<size_t>();
      const json function = c.value("function", json::object());
      if (index >= calls_.size()) {  // chat opens a call with its id and name
        calls_.push_back(Call{output_items_++, absl::StrCat("fc_", Suffix(id_), "_", index), c.value("id", ""),
                              function.value("name", ""), ""});
        const Call& opened = calls_.back();
        events += Event(ojson{{"type", "response.output_item.added"},
                              {"output_index", opened.output_index},
                              {"item", CallItem(opened.item_id, opened.call_id, opened.name, "", "in_progress")}});
      }
      Call& call = calls_[index];
      const std::string arguments = function.value("arguments", "");
      if (arguments.empty()) continue;
      call.arguments += arguments;
      events += Event(ojson{{"type", "response.function_call_arguments.delta"},
                            {"item_id", call.item_id},
                            {"output_index", call.output_index},
                            {"delta", arguments}});
    }
  }
  if (chunk.finish_reason() == v1::FINISH_REASON_UNSPECIFIED) return events;
  // The answer ended: close its items, then the whole response.
  const ojson response = ResponseObject(call_, chunks_, id_);
  const ojson& output = response["output"];
  if (reasoning_index_ >= 0) {
    events += CloseTextItem(reasoning_index_, output[static_cast<size_t>(reasoning_index_)],
                            "response.reasoning_text.done", /*logprobs=*/false);
  }
  if (calls_.empty() && message_index_ < 0 && ItemIndex(output, "message") >= 0) events += OpenMessage();
  for (const Call& call : calls_) {
    events += Event(ojson{{"type", "response.function_call_arguments.done"},
                          {"item_id", call.item_id},
                          {"output_index", call.output_index},
                          {"name", call.name},
                          {"arguments", call.arguments}});
    events += Event(ojson{{"type", "response.output_item.done"},
                          {"output_index", call.output_index},
                          {"item", static_cast<size_t>(call.output_index) < output.size()
                                      ? output[static_cast<size_t>(call.output_index)]
                                      : ojson()}});
  }
  if (message_index_ >= 0) {
    events += CloseTextItem(message_index_, output[static_cast<size_t>(message_index_)], "response.output_text.done",
                            /*logprobs=*/true);
  }

  const bool cut = response["status"] == "incomplete";
  events += Event(ojson{{"type", cut ? "response.incomplete" : "response.completed"}, {"response", response}});
  return events;
}

std::string ResponsesStream::Failed(const absl::Status& status) {
  ojson response = Shell("failed");
  response["error"] = ojson{{"code", "server_error"}, {"message", SanitizeUtf8(status.message())}};
  return Event(ojson{{"type", "response.failed"}, {"response", std::move(response)}});
}

}  // namespace attnserve
