#include "server/http/openai_chat.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/sampling/json_schema.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/openai_tools.h"

namespace attnserve {
namespace {

using nlohmann::json;

// A message's content: a string, or text parts joined with "\n" (as vLLM).
absl::StatusOr<std::string> MessageContent(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return TypeError(field, "a string or an array of text parts", content);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string part_field = absl::StrCat(field, "[", j, "]");
    if (!part.is_object()) return TypeError(part_field, "an object", part);
    const json* type = Field(part, "type");
    if (type == nullptr || !type->is_string()) return absl::InvalidArgumentError(part_field + ".type: required");
    if (type->get<std::string>() != "text") {
      return Unsupported(part_field + ".type",
                         absl::StrCat("'", SanitizeUtf8(type->get<std::string>().substr(0, 32)), "': text only"));
    }
    const json* t = Field(part, "text");
    if (t == nullptr || !t->is_string()) return TypeError(part_field + ".text", "a string", t ? *t : json());
    if (j > 0) text += "\n";
    text += t->get<std::string>();
  }
  return text;
}

// An assistant's "tool_calls": [{"id", "type": "function", "function":
// {"name", "arguments": a JSON object's text}}].
absl::Status ParseToolCalls(const json& calls, const std::string& field, v1::ChatMessage* out) {
  if (!calls.is_array()) return TypeError(field, "an array of tool calls", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    const std::string f = absl::StrCat(field, "[", k, "]");
    if (!c.is_object()) return TypeError(f, "an object", c);
    const json* function = Field(c, "function");
    if (function == nullptr || !function->is_object()) return absl::InvalidArgumentError(f + ".function: required");
    const json* name = Field(*function, "name");
    if (name == nullptr || !name->is_string()) return absl::InvalidArgumentError(f + ".function.name: required");
    const json* arguments = Field(*function, "arguments");
    if (arguments == nullptr || !arguments->is_string()) {
      return absl::InvalidArgumentError(f + ".function.arguments: required, a JSON object's text");
    }
    // The template is given the arguments as an object (vLLM parses them).
    if (!json::parse(arguments->get<std::string>(), nullptr, /*allow_exceptions=*/false).is_object()) {
      return absl::InvalidArgumentError(f + ".function.arguments: not a JSON object's text");
    }
    v1::ChatToolCall* call = out->add_tool_calls();
    if (const json* id = Field(c, "id"); id != nullptr && id->is_string()) call->set_id(id->get<std::string>());
    call->set_name(name->get<std::string>());
    call->set_arguments(arguments->get<std::string>());
  }
  return absl::OkStatus();
}

// An assistant's thinking given back (vLLM's and transformers' names for
// it: "reasoning_content", "reasoning"; this server's answers carry both,
// with one text), for templates that show it (qwen3).
absl::Status ParseReasoning(const json& m, const std::string& field, v1::ChatMessage* out) {
  std::optional<std::string> text;
  for (const char* key : {"reasoning_content", "reasoning"}) {
    const json* r = Field(m, key);
    if (r == nullptr || r->is_null()) continue;
    const std::string f = absl::StrCat(field, ".", key);
    if (!r->is_string()) return TypeError(f, "a string or null", *r);
    if (out->role() != "assistant") return absl::InvalidArgumentError(f + ": only an assistant's");
    if (text.has_value() && *text != r->get<std::string>()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".reasoning, ", field, ".reasoning_content: two different texts; give one"));
    }
    text = r->get<std::string>();
  }
  if (text.has_value()) out->set_reasoning_content(*text);
  return absl::OkStatus();
}

absl::Status ParseMessages(const json& root, bool tool_turns, v1::ChatPrompt* chat) {
  const json* messages = Field(root, "messages");
  if (messages == nullptr) return absl::InvalidArgumentError("messages: required");
  if (!messages->is_array()) return TypeError("messages", "an array of messages", *messages);
  if (messages->empty()) return absl::InvalidArgumentError("messages: the conversation is empty");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return TypeError(field, "an object", m);
    const json* role = Field(m, "role");
    if (role == nullptr) return absl::InvalidArgumentError(field + ".role: required");
    if (!role->is_string()) return TypeError(field + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system message
    if (r != "system" && r != "user" && r != "assistant" && !(tool_turns && r == "tool")) {
      return Unsupported(field + ".role",
                         absl::StrCat("'", SanitizeUtf8(r.substr(0, 32)), "': only system, developer, user",
                                      tool_turns ? ", assistant and tool"
                                                 : " and assistant (this chat template has no tool turns)"));
    }
    if (Field(m, "function_call") != nullptr) {
      return Unsupported(field + ".function_call", "OpenAI's deprecated function calling; use tool_calls");
    }
    v1::ChatMessage* out = chat->add_messages();
    out->set_role(r);
    const json* calls = Field(m, "tool_calls");
    if (calls != nullptr && !calls->is_null()) {
      if (!tool_turns) return Unsupported(field + ".tool_calls", "this chat template has no tool turns");
      if (r != "assistant") return absl::InvalidArgumentError(field + ".tool_calls: only an assistant's");
      RETURN_IF_ERROR(ParseToolCalls(*calls, field + ".tool_calls", out));
    }
    if (r == "tool") {
      if (const json* id = Field(m, "tool_call_id"); id != nullptr && id->is_string()) {
        out->set_tool_call_id(id->get<std::string>());
      }
    }
    RETURN_IF_ERROR(ParseReasoning(m, field, out));
    const json* content = Field(m, "content");
    // An assistant's message of calls may have no content (OpenAI sends null).
    if (out->tool_calls_size() > 0 && (content == nullptr || content->is_null())) continue;
    if (content == nullptr) return absl::InvalidArgumentError(field + ".content: required");
    ASSIGN_OR_RETURN(std::string text, MessageContent(*content, field + ".content"));
    out->set_content(std::move(text));
    if (content->is_array()) {
      for (const json& part : *content) out->add_content_parts(part["text"].get<std::string>());
    }
  }
  return absl::OkStatus();
}

// vLLM's chat_template_kwargs, the template's own variables: the ones the
// built-in formats read are Qwen3's enable_thinking and Llama-3.1/3.2's
// date_string (the other templates do not read them and, as in vLLM, they
// change nothing there); any other is refused rather than ignored, since no
// built-in template would read it.
absl::Status ParseChatTemplateKwargs(const json& root, v1::ChatPrompt* chat) {
  const json* kwargs = Field(root, "chat_template_kwargs");
  if (kwargs == nullptr || kwargs->is_null()) return absl::OkStatus();
  if (!kwargs->is_object()) return TypeError("chat_template_kwargs", "an object", *kwargs);
  for (const auto& [key, value] : kwargs->items()) {
    const std::string field = absl::StrCat("chat_template_kwargs.", SanitizeUtf8(key.substr(0, 64)));
    if (key == "enable_thinking") {
      ASSIGN_OR_RETURN(const bool enable, BoolField(value, field));
      chat->set_enable_thinking(enable);
    } else if (key == "date_string") {
      if (!value.is_string()) return TypeError(field, "a string (\"26 Jul 2024\")", value);
      chat->set_date_string(value.get<std::string>());
    } else {
      return Unsupported(field,
                         "the built-in chat templates read only enable_thinking (qwen3's) and date_string "
                         "(llama3.1's and llama3.2's)");
    }
  }
  return absl::OkStatus();
}

// Options this server cannot honour, refused rather than ignored.
absl::Status RefuseUnsupported(const json& root) {
  if (Field(root, "functions") != nullptr) {
    return Unsupported("functions", "OpenAI's deprecated function calling; use tools and tool_choice");
  }
  // A template of the request's own (vLLM's chat_template, Jinja) or
  // arguments for one: there is no Jinja here, the server's format applies.
  if (Field(root, "chat_template") != nullptr) {
    return Unsupported("chat_template", "templates are the server's (--chat-template); no Jinja");
  }
  if (const json* echo = Field(root, "echo"); echo != nullptr) {
    ASSIGN_OR_RETURN(const bool e, BoolField(*echo, "echo"));
    if (e) return Unsupported("echo", "not for chat");
  }
  // vLLM's add_special_tokens: true puts BOS before what the template wrote
  // (a second BOS where the template writes one), as /tokenize refuses it.
  if (const json* add = Field(root, "add_special_tokens"); add != nullptr) {
    ASSIGN_OR_RETURN(const bool a, BoolField(*add, "add_special_tokens"));
    if (a) return Unsupported("add_special_tokens", "true: the chat template writes the special tokens");
  }
  // Output other than text, and OpenAI's built-in web search: answered
  // with plain text they would look served.
  if (const json* modalities = Field(root, "modalities"); modalities != nullptr) {
    if (!modalities->is_array()) return TypeError("modalities", "an array of strings", *modalities);
    for (size_t i = 0; i < modalities->size(); ++i) {
      const json& m = (*modalities)[i];
      if (!m.is_string() || m.get_ref<const std::string&>() != "text") {
        return Unsupported(absl::StrCat("modalities[", i, "]"), "text output only");
      }
    }
  }
  if (Field(root, "audio") != nullptr) return Unsupported("audio", "text output only");
  if (Field(root, "web_search_options") != nullptr) return Unsupported("web_search_options", "no web search");
  // vLLM's documents go to a Jinja template that shows them; the built-in
  // formats show none, so the model would answer without them.
  if (const json* docs = Field(root, "documents"); docs != nullptr && !(docs->is_array() && docs->empty())) {
    return Unsupported("documents", "the built-in chat formats show no documents");
  }
  return absl::OkStatus();
}

// Tool call ids: unique within the response, and across responses by its id.
std::string ToolCallIdPrefix(const CompletionIdentity& id, size_t index) {
  return absl::StrCat("call_", id.id, "_", index, "_");
}

// OpenAI's chat logprobs entries of a chunk's tokens: {"token", "logprob",
// "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}.
json TokenBytes(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// With return_tokens_as_token_ids a token is "token_id:<id>", and its
// bytes are that name's (as vLLM).
json ChatLogprobEntries(const v1::GenerateResponse& chunk, bool as_ids) {
  json entries = json::array();
  for (int i = 0; i < chunk.token_ids_size() && i < chunk.logprobs_size(); ++i) {
    const v1::PositionLogprobs& position = chunk.logprobs(i);
    const std::string text = as_ids ? LogprobTokenName("", chunk.token_ids(i), true) : ChunkTokenText(chunk, i);
    json top = json::array();
    for (const v1::TokenLogprob& alt : position.top()) {
      const std::string alt_text = as_ids ? LogprobTokenName("", alt.token_id(), true) : alt.text();
      top.push_back(
          json{{"token", SanitizeUtf8(alt_text)}, {"logprob", alt.logprob()}, {"bytes", TokenBytes(alt_text)}});
    }
    entries.push_back(json{{"token", SanitizeUtf8(text)},
                           {"logprob", position.logprob()},
                           {"bytes", TokenBytes(text)},
                           {"top_logprobs", std::move(top)}});
  }
  return entries;
}

}  // namespace

absl::StatusOr<CompletionCall> ParseChatCompletionRequest(absl::string_view body, const ToolSupport& tools) {
  absl::StatusOr<json> parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  RETURN_IF_ERROR(CheckOpenAiModelField(root));
  RETURN_IF_ERROR(RefuseUnsupported(root));
  CompletionCall call;
  call.format.chat = true;
  v1::GenerateRequest prompt;
  v1::ChatPrompt* chat = prompt.mutable_chat();
  RETURN_IF_ERROR(ParseMessages(root, tools.template_shows_tools, chat));
  RETURN_IF_ERROR(Optional<bool>(root, "add_generation_prompt", BoolField,
                                 [&](bool v) { chat->set_add_generation_prompt(v); }));
  RETURN_IF_ERROR(Optional<bool>(root, "continue_final_message", BoolField,
                                 [&](bool v) { chat->set_continue_final_message(v); }));
  RETURN_IF_ERROR(ParseChatTemplateKwargs(root, chat));
  // vLLM's default: a continued message gets no new header.
  if (chat->continue_final_message() && !chat->has_add_generation_prompt()) chat->set_add_generation_prompt(false);
  v1::GenerateRequest shared;
  RETURN_IF_ERROR(ParseSharedCompletionFields(root, body, 1, &call, &shared));
  v1::SamplingParams* sampling = shared.mutable_sampling();
  // vLLM's thinking_token_budget: bounds the thinking of a reasoning model
  // (ApplyReasoningParser gives it the end of the thinking).
  RETURN_IF_ERROR(Optional<int32_t>(root, "thinking_token_budget", Int32Field, [&](int32_t v) {
    sampling->set_thinking_token_budget(v);
  }));
  if (sampling->has_thinking_token_budget() && sampling->thinking_token_budget() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("thinking_token_budget: ", sampling->thinking_token_budget(), ", must be >= 0"));
  }
  std::string tool_schema;
  RETURN_IF_ERROR(ParseToolChoice(root, body, tools, &call.format.tools, &tool_schema));
  if (tools.template_shows_tools && Field(root, "tools") != nullptr) {
    // Shown to the model as the client wrote them (key order kept), as vLLM
    // hands them to the template whatever the tool_choice.
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
    for (const nlohmann::ordered_json& tool : ordered["tools"]) chat->add_tools(tool.dump());
  }
  if (call.format.tools.mode == ToolCallFormat::Mode::kNamed ||
      call.format.tools.mode == ToolCallFormat::Mode::kRequired) {
    if (sampling->response_format() != v1::RESPONSE_FORMAT_TEXT) {
      return absl::InvalidArgumentError(
          "tool_choice: tool calls and a response_format, guided_json or guided_choice exclude each other");
    }
    sampling->set_response_format(v1::RESPONSE_FORMAT_JSON_SCHEMA);
    sampling->set_json_schema(tool_schema);
  }
  // "auto": a call the model begins is held to the tools' schemas, unless
  // the answer has a format of its own, must run past where a call ends,
  // or a tool's parameters use what JSON schema mode does not implement
  // (the model then writes its calls freely, as before: vLLM takes any
  // schema with "auto", and so does this).
  // hermes: each call after its "<tool_call>\n", the form Qwen2.5's
  // template asks for (a call written otherwise is left free).
  if (call.format.tools.mode == ToolCallFormat::Mode::kAuto &&
      sampling->response_format() == v1::RESPONSE_FORMAT_TEXT && !sampling->ignore_eos() &&
      sampling->min_tokens() == 0 && CompileJsonSchema(tool_schema).ok()) {
    sampling->set_response_format(v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA);
    sampling->set_json_schema(tool_schema);
    if (call.format.tools.parser == AutoToolParser::kHermes) sampling->set_lazy_trigger("<tool_call>\n");
    call.format.tools.call_schema = true;
  }
  // hermes, as vLLM's parser: special tokens are written into the answer
  // unless the client says otherwise, since some models' <tool_call> tags
  // are special tokens, which would vanish before the parser saw them.
  if (call.format.tools.mode == ToolCallFormat::Mode::kAuto &&
      call.format.tools.parser == AutoToolParser::kHermes && !sampling->has_skip_special_tokens()) {
    sampling->set_skip_special_tokens(false);
  }
  // OpenAI's newer name wins over the deprecated max_tokens, as vLLM.
  RETURN_IF_ERROR(Optional<int32_t>(root, "max_completion_tokens", Int32Field,
                                    [&](int32_t v) { sampling->set_max_new_tokens(v); }));
  bool logprobs = false;
  RETURN_IF_ERROR(Optional<bool>(root, "logprobs", BoolField, [&](bool v) { logprobs = v; }));
  if (const json* top = Field(root, "top_logprobs"); top != nullptr) {
    ASSIGN_OR_RETURN(const int32_t n, Int32Field(*top, "top_logprobs"));
    if (n < 0 || n > kOpenAiMaxTopLogprobs) {
      return absl::InvalidArgumentError(
          absl::StrCat("top_logprobs: ", n, " is outside [0, ", kOpenAiMaxTopLogprobs, "]"));
    }
    if (!logprobs) return absl::InvalidArgumentError("top_logprobs: only with \"logprobs\": true");
    sampling->set_top_logprobs(n);
  }
  if (logprobs) {
    call.format.logprobs = true;
    sampling->set_logprobs(true);
  }
  RETURN_IF_ERROR(ParsePromptLogprobs(root, &call, sampling));
  ExpandCompletionChoices({prompt}, shared, &call);
  return call;
}

absl::Status ApplyReasoningParser(ReasoningParser parser, bool in_reasoning, CompletionCall* call,
                                  int default_budget) {
  call->format.reasoning = parser;
  if (call->requests.empty()) return absl::OkStatus();
  if (!call->requests[0].sampling().has_thinking_token_budget() && default_budget >= 0 &&
      parser != ReasoningParser::kNone) {
    for (v1::GenerateRequest& r : call->requests) r.mutable_sampling()->set_thinking_token_budget(default_budget);
  }
  const bool budget = call->requests[0].sampling().has_thinking_token_budget();
  if (budget && parser == ReasoningParser::kNone) {
    return absl::InvalidArgumentError(
        "thinking_token_budget: only with --reasoning-parser (which says where the thinking ends)");
  }
  if (parser == ReasoningParser::kNone) return absl::OkStatus();
  const v1::ChatPrompt& chat = call->requests[0].chat();
  if (parser == ReasoningParser::kQwen3 && chat.has_enable_thinking() && !chat.enable_thinking()) {
    // No thinking to split off, bound, or wait for (the template closed it).
    call->format.thinking_off = true;
    for (v1::GenerateRequest& r : call->requests) r.mutable_sampling()->clear_thinking_token_budget();
    return absl::OkStatus();
  }
  for (v1::GenerateRequest& r : call->requests) {
    if (budget) r.mutable_sampling()->set_thinking_end("</think>");
  }
  if (in_reasoning || call->requests[0].sampling().response_format() == v1::RESPONSE_FORMAT_TEXT) {
    return absl::OkStatus();
  }
  for (v1::GenerateRequest& r : call->requests) r.mutable_sampling()->set_constrain_after("</think>");
  return absl::OkStatus();
}

json ChatCompletionResponse(const std::vector<std::vector<v1::GenerateResponse>>& per_choice,
                            const CompletionIdentity& id, const CompletionFormat& format) {
  json choices = json::array();
  v1::GenerateUsage total;
  for (size_t index = 0; index < per_choice.size(); ++index) {
    std::string text;
    json entries = json::array();
    json finish = "stop", stop_reason;
    v1::GenerateUsage usage;
    for (const v1::GenerateResponse& chunk : per_choice[index]) {
      text += chunk.text();
      if (format.logprobs) {
        for (json& e : ChatLogprobEntries(chunk, format.tokens_as_ids)) entries.push_back(std::move(e));
      }
      if (chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
        finish = OpenAiFinishReason(chunk.finish_reason());
        stop_reason = StopReason(chunk);
      }
      if (chunk.has_usage()) usage = chunk.usage();
    }
    AddCompletionUsage(usage, &total);
    // The reasoning apart; what follows it is the answer tools are read from.
    ReasonedAnswer answer = SplitReasoning(format.reasoning, text, format.thinking_off);
    text = std::move(answer.content);
    json message = {{"role", "assistant"}, {"content", SanitizeUtf8(text)}};
    if (answer.reasoning.has_value() && text.empty()) message["content"] = nullptr;  // vLLM: content or None
    bool whole = true;
    std::string content;  // hermes: the text before the calls
    if (std::optional<json> calls = ToolCalls(format.tools, text, ToolCallIdPrefix(id, index), &whole, &content);
        calls.has_value()) {
      message = {{"role", "assistant"},
                 {"content", content.empty() ? json() : json(SanitizeUtf8(content))},
                 {"tool_calls", std::move(*calls)}};
      // "required" and "auto": the answer was calls; a named call, or a
      // list the token limit cut, keeps the engine's reason ("length").
      if (format.tools.mode != ToolCallFormat::Mode::kNamed && whole) finish = "tool_calls";
    }
    if (format.reasoning != ReasoningParser::kNone) {
      const json reasoning = answer.reasoning.has_value() ? json(SanitizeUtf8(*answer.reasoning)) : json();
      message["reasoning"] = reasoning;
      message["reasoning_content"] = reasoning;  // vLLM's name before "reasoning"
    }
    json choice{{"index", index},
                {"message", std::move(message)},
                {"logprobs", format.logprobs ? json{{"content", std::move(entries)}} : json()},
                {"finish_reason", std::move(finish)},
                {"stop_reason", std::move(stop_reason)}};
    AddTokenIds(format, per_choice[index], &choice);
    choices.push_back(std::move(choice));
  }
  json out{{"id", id.id},
           {"object", "chat.completion"},
           {"created", id.created},
           {"model", id.model},
           {"choices", std::move(choices)},
           {"usage", CompletionUsage(total)}};
  // vLLM's: the conversation's prompt, once for the response.
  if (format.prompt_logprobs >= 0 && !per_choice.empty() && !per_choice[0].empty()) {
    out["prompt_logprobs"] = VllmPromptLogprobs(per_choice[0][0], format.prompt_logprobs);
  }
  if (format.return_token_ids) {
    out["prompt_token_ids"] = per_choice.empty() || per_choice[0].empty() ? json::array()
                                                                          : PromptTokenIds(per_choice[0][0]);
  }
  return out;
}

namespace {

// The delta's "tool_calls" for what a ToolCallsReader read from `text`:
// each call's id, type and name once its name is whole, then its
// arguments as they come.
void AddCallPieces(std::vector<ToolCallsReader::Piece>& pieces, const std::string& id_prefix, json* delta) {
  json calls = json::array();
  for (ToolCallsReader::Piece& p : pieces) {
    json call = {{"index", p.index}, {"function", {{"arguments", SanitizeUtf8(p.arguments)}}}};
    if (p.opens) {
      call["id"] = id_prefix + std::to_string(p.index);
      call["type"] = "function";
      call["function"]["name"] = p.name;
    }
    calls.push_back(std::move(call));
  }
  if (!calls.empty()) (*delta)["tool_calls"] = std::move(calls);
}

void AddCallDeltas(absl::string_view text, const std::string& id_prefix, ToolCallsReader* reader, json* delta) {
  std::vector<ToolCallsReader::Piece> pieces;
  reader->Feed(text, &pieces);
  AddCallPieces(pieces, id_prefix, delta);
}

// The last chunk of a stream of calls read by stream.calls: finish_reason
// "tool_calls" when they are whole; a text cut before the first name was
// whole is content, as ChatCompletionResponse has it.
void EndCallDeltas(const ChatChoiceStream& stream, json* delta, json* finish) {
  if (stream.calls.complete()) {
    *finish = "tool_calls";
  } else if (stream.calls.calls() == 0) {
    (*delta)["content"] = SanitizeUtf8(stream.text);
  }
}

// A hermes answer streamed: its text as content up to its first
// <tool_call> (an end that may begin the tag held back); then, when the
// calls are held, each call's id and name once the name is whole and its
// arguments as written (hermes_calls_reader.h); otherwise held, and at the
// end the calls if HermesToolCalls reads the whole answer as calls, else
// the held text as content. Joined, the deltas are what
// ChatCompletionResponse answers.
void HermesChunkDelta(const std::string& piece, bool last, const ToolCallFormat& tools, const std::string& id_prefix,
                      ChatChoiceStream* stream, json* delta, json* finish) {
  if (tools.call_schema) {
    // The text is kept for the end in case no held call is read.
    if (stream->hermes.calls() == 0) stream->text += piece;
    HermesCallsReader::Output out;
    stream->hermes.Feed(piece, &out);
    stream->sent += out.content.size();
    AddCallPieces(out.pieces, id_prefix, delta);
    std::string content = std::move(out.content);
    if (last && stream->hermes.calls() > 0) {
      if (stream->hermes.complete()) *finish = "tool_calls";  // else the engine's reason ("length")
    } else if (last && stream->sent < stream->text.size()) {
      if (std::optional<json> calls = ToolCalls(tools, stream->text, id_prefix); calls.has_value()) {
        for (size_t i = 0; i < calls->size(); ++i) (*calls)[i]["index"] = i;
        (*delta)["tool_calls"] = std::move(*calls);
        *finish = "tool_calls";
      } else {
        content += stream->text.substr(stream->sent);
      }
    }
    if (!content.empty()) (*delta)["content"] = SanitizeUtf8(content);
    return;
  }
  stream->text += piece;
  // Only the unsent part is looked at: it begins at the first tag or at an
  // end that may begin one, so a long held answer is not searched again
  // from its start on every chunk.
  const absl::string_view unsent = absl::string_view(stream->text).substr(stream->sent);
  const bool whole = last && unsent.find("<tool_call>") == absl::string_view::npos;
  const size_t content_end = stream->sent + (whole ? unsent.size() : HermesContentBeforeCalls(unsent));
  std::string content;
  if (content_end > stream->sent) {
    content = stream->text.substr(stream->sent, content_end - stream->sent);
    stream->sent = content_end;
  }
  if (last && stream->sent < stream->text.size()) {
    if (std::optional<json> calls = ToolCalls(tools, stream->text, id_prefix); calls.has_value()) {
      for (size_t i = 0; i < calls->size(); ++i) (*calls)[i]["index"] = i;
      (*delta)["tool_calls"] = std::move(*calls);
      *finish = "tool_calls";
    } else {
      content += stream->text.substr(stream->sent);
      stream->sent = stream->text.size();
    }
  }
  if (!content.empty()) (*delta)["content"] = SanitizeUtf8(content);
}

json ChunkEnvelope(const CompletionIdentity& id, json choice) {
  return json{{"id", id.id},
              {"object", "chat.completion.chunk"},
              {"created", id.created},
              {"model", id.model},
              {"choices", json::array({std::move(choice)})}};
}

}  // namespace

json ChatRoleChunk(const CompletionIdentity& id, int index, ChunkUsage usage, const CompletionFormat& format,
                   const v1::GenerateResponse& first) {
  json out = ChunkEnvelope(id, json{{"index", index},
                                    {"delta", {{"role", "assistant"}, {"content", ""}}},
                                    {"logprobs", json()},
                                    {"finish_reason", json()}});
  if (usage == ChunkUsage::kNull) out["usage"] = json();
  if (format.return_token_ids) out["prompt_token_ids"] = PromptTokenIds(first);
  return out;
}

json ChatCompletionChunk(const v1::GenerateResponse& chunk, const CompletionIdentity& id,
                         const CompletionFormat& format, int index, ChunkUsage usage, ChatChoiceStream* stream) {
  const bool last = chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
  json delta = json::object();
  json finish = last ? json(OpenAiFinishReason(chunk.finish_reason())) : json();
  // The reasoning apart; `text` is this chunk's part of what follows it,
  // read below as the answer.
  std::string text, reasoning;
  if (format.reasoning == ReasoningParser::kNone) {
    text = chunk.text();
  } else {
    if (!stream->reasoning.has_value()) stream->reasoning.emplace(format.reasoning, format.thinking_off);
    stream->reasoning->Feed(chunk.text(), last, &reasoning, &text);
    if (!reasoning.empty()) {
      delta["reasoning"] = SanitizeUtf8(reasoning);
      delta["reasoning_content"] = delta["reasoning"];  // vLLM's name before "reasoning"
    }
  }
  switch (format.tools.mode) {
    case ToolCallFormat::Mode::kNone:
      // A chunk that only held a tag back still says something (an empty
      // content), as every chunk does; one with reasoning says that.
      if (!text.empty() || (!last && reasoning.empty())) delta["content"] = SanitizeUtf8(text);
      break;
    case ToolCallFormat::Mode::kNamed: {
      // The call's arguments as they come; its id and name with the first.
      if (text.empty() && stream->tool_call_opened) break;
      json call = {{"index", 0}, {"function", {{"arguments", SanitizeUtf8(text)}}}};
      if (!stream->tool_call_opened) {
        call["id"] = ToolCallIdPrefix(id, index) + "0";
        call["type"] = "function";
        call["function"]["name"] = format.tools.function;
      }
      stream->tool_call_opened = true;
      delta["tool_calls"] = json::array({std::move(call)});
      break;
    }
    case ToolCallFormat::Mode::kRequired: {
      // Each call's id and name once the name is whole, then its arguments
      // as they come; a list cut before its first name ends as content,
      // as ChatCompletionResponse has it.
      // The text is kept only while it may still end as content.
      if (stream->calls.calls() == 0) stream->text += text;
      AddCallDeltas(text, ToolCallIdPrefix(id, index), &stream->calls, &delta);
      if (last) EndCallDeltas(*stream, &delta, &finish);
      break;
    }
    case ToolCallFormat::Mode::kAuto: {
      if (format.tools.parser == AutoToolParser::kHermes) {
        HermesChunkDelta(text, last, format.tools, ToolCallIdPrefix(id, index), stream, &delta, &finish);
        break;
      }
      // Held back while the answer may still be calls; once it cannot be,
      // what was held and all that follows is content.
      if (stream->content) {
        if (!text.empty() || (!last && reasoning.empty())) delta["content"] = SanitizeUtf8(text);
        break;
      }
      stream->text += text;
      // A call held to the call schema: streamed as "required" streams one
      // (ChatCompletionResponse reads the same text so).
      if (!stream->schema_call && BeginsSchemaToolCall(format.tools, stream->text)) {
        stream->schema_call = true;
        stream->calls = ToolCallsReader(ToolCallsReader::Form::kOneCall);
        AddCallDeltas(stream->text, ToolCallIdPrefix(id, index), &stream->calls, &delta);
      } else if (stream->schema_call) {
        AddCallDeltas(text, ToolCallIdPrefix(id, index), &stream->calls, &delta);
      }
      if (stream->schema_call && !stream->calls.broken()) {
        if (last) EndCallDeltas(*stream, &delta, &finish);
        break;
      }
      if (!MayBecomeLlama3JsonToolCall(stream->text)) {
        stream->content = true;
        delta["content"] = SanitizeUtf8(stream->text);
        break;
      }
      if (!last) break;
      // The calls once the answer is whole; the text if it was not calls.
      std::optional<json> calls = ToolCalls(format.tools, stream->text, ToolCallIdPrefix(id, index));
      if (!calls.has_value()) {
        delta["content"] = SanitizeUtf8(stream->text);
        break;
      }
      for (size_t i = 0; i < calls->size(); ++i) (*calls)[i]["index"] = i;
      delta["tool_calls"] = std::move(*calls);
      finish = "tool_calls";
      break;
    }
  }
  json logprobs = format.logprobs ? json{{"content", ChatLogprobEntries(chunk, format.tokens_as_ids)}} : json();
  json choice{{"index", index},
              {"delta", std::move(delta)},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", std::move(finish)},
              {"stop_reason", StopReason(chunk)}};
  if (format.return_token_ids) {
    choice["token_ids"] = std::vector<int32_t>(chunk.token_ids().begin(), chunk.token_ids().end());
  }
  json out = ChunkEnvelope(id, std::move(choice));
  if (usage == ChunkUsage::kNull) out["usage"] = json();
  if (usage == ChunkUsage::kOnLast && last && chunk.has_usage()) out["usage"] = CompletionUsage(chunk.usage());
  return out;
}

}  // namespace attnserve
