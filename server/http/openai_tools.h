// OpenAI's tool calling on /v1/chat/completions ("tools", "tool_choice"),
// done as vLLM does it. A named function and "required" go through JSON
// schema mode, so they work with any model and the calls always parse;
// "auto" needs a model-specific parser (--tool-call-parser).
//
//   tool_choice {"type": "function", "function": {"name": N}}: the answer is
//     N's arguments, an instance of its "parameters" schema; the message
//     carries one tool call to N with that text as "arguments".
//   tool_choice "required": the answer is [{"name": ..., "parameters":
//     {...}}, ...], one or more calls, each to one of the tools (vLLM's
//     schema; the calls are a tagged union on "name"; exactly one with
//     parallel_tool_calls false); the message carries them with
//     finish_reason "tool_calls". Streamed, each call's id and name go out
//     once the name is whole, then its arguments as they are written
//     (tool_calls_reader.h), as vLLM streams them.
//   tool_choice "none": no calls.
//   tool_choice "auto" (OpenAI's default when tools are given): with
//     --tool-call-parser=hermes (vLLM's parser of that name; Qwen2.5,
//     Hermes-2-Pro and their fine-tunes), each <tool_call>{"name": ...,
//     "arguments": ...}</tool_call> of the answer is a call and the text
//     before the first is the message's content (finish_reason
//     "tool_calls"); an answer with a tag that does not hold such a call
//     is content, all of it, as vLLM falls back. Unless another format
//     holds the answer, each call after "<tool_call>\n" is held to one
//     call's schema ({"name", "arguments"}: the lazy format with that
//     trigger), so it always parses, and held calls are read as written
//     (hermes_calls_reader.h): streamed, each call's id and name once the
//     name is whole, then its arguments as they come. Calls not held are
//     streamed once the answer is whole; the content before the first tag
//     goes out as it comes. With
//     --tool-call-parser=llama3_json (vLLM's parser of that name), the
//     model answers freely and an answer that is {"name": ..., "parameters"
//     (or "arguments"): ...}, several joined by "; ", optionally after
//     <|python_tag|>, becomes the calls (finish_reason "tool_calls"); any
//     other answer is content. Unless another format holds the answer (a
//     response_format, ignore_eos, min_tokens), an answer that begins with
//     "{" is held to one call's schema from there on (RESPONSE_FORMAT_LAZY_
//     JSON_SCHEMA, as llama.cpp's lazy grammars hold a call): it is always
//     a call to one of the tools with arguments their schema accepts, and
//     a stream sends it as "required" sends a call. Without the flag
//     "auto" is refused, as vLLM refuses it without --tool-call-parser:
//     how a free answer writes a call depends on the model family.
//
// Where the chat template shows tools (llama3.1, qwen2.5: ToolSupport::
// template_shows_tools) the tools go into the prompt and messages with
// role "tool" or with "tool_calls" are taken; elsewhere the tools are not
// shown to the model and such messages are refused (openai_chat.cc).
#ifndef ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_
#define ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace attnserve {

inline constexpr size_t kMaxTools = 128;

// --tool-call-parser: how tool_choice "auto" reads calls out of a free
// answer (none: "auto" is refused).
enum class AutoToolParser { kNone, kLlama3Json, kHermes };

// "llama3_json", "hermes" or "" (kNone); INVALID_ARGUMENT otherwise.
absl::StatusOr<AutoToolParser> AutoToolParserFromName(absl::string_view name);

// What the server offers for tools: its chat template and its flags.
struct ToolSupport {
  bool template_shows_tools = false;  // tools go into the prompt; tool turns are taken
  AutoToolParser auto_parser = AutoToolParser::kNone;
};

struct ToolCallFormat {
  enum class Mode { kNone, kNamed, kRequired, kAuto };
  Mode mode = Mode::kNone;
  std::string function;  // kNamed: the function called
  // kAuto: an answer that begins with "{" is held to one call's schema
  // (the request's format is RESPONSE_FORMAT_LAZY_JSON_SCHEMA).
  bool call_schema = false;
  AutoToolParser parser = AutoToolParser::kNone;  // kAuto: how the answer is read (kNone: as llama3_json)
};

// Reads "tools" and "tool_choice" of the request `root` (`body` is its
// text, read again in order because a schema's property order is the
// answer's). For kNamed and kRequired, *schema is the JSON schema the
// answer must follow; for kAuto, that of one call {"name": ...,
// "parameters": ...} (the caller decides whether to hold a call to it).
// INVALID_ARGUMENT names the field.
absl::Status ParseToolChoice(const nlohmann::json& root, absl::string_view body, const ToolSupport& support,
                             ToolCallFormat* format, std::string* schema);

// OpenAI's "tool_calls" of an answer `text`: [{"id", "type": "function",
// "function": {"name", "arguments"}}]. kNamed: one call whose arguments are
// the text (cut short if the answer was); kRequired: the calls the text
// lists, their arguments as written (the last cut short, and *whole false,
// if the token limit cut the list; nullopt if it cut it before the first
// name was whole); kAuto: an answer held to the call schema as kRequired
// reads one call, hermes calls held after their tags as a stream reads them
// (HermesCallsReader: as written, *whole false if the last was cut, the text
// before them in *content), any other as its parser reads it
// (Llama3JsonToolCalls, HermesToolCalls, which also sets *content). Ids are
// `id_prefix` plus the call's position.
std::optional<nlohmann::json> ToolCalls(const ToolCallFormat& format, const std::string& text,
                                        const std::string& id_prefix, bool* whole = nullptr,
                                        std::string* content = nullptr);

// vLLM's llama3_json parser: the calls when `text` is one or more call
// objects as above, nullopt (the text is content) otherwise, as vLLM falls
// back when its parse fails. Arguments are written as json.dumps writes
// them.
std::optional<nlohmann::json> Llama3JsonToolCalls(const std::string& text, const std::string& id_prefix);

// vLLM's hermes parser: the calls when `text` has a <tool_call> tag and
// each tag holds a call object {"name": a string, "arguments": any JSON},
// up to its </tool_call> or, the last, to the end of the text (a call the
// token limit cut after its object closed); *content is the text before
// the first tag. nullopt (the text is content) otherwise. Arguments are
// written as json.dumps writes them.
std::optional<nlohmann::json> HermesToolCalls(const std::string& text, const std::string& id_prefix,
                                              std::string* content);

// How much of a hermes answer so far is content whatever follows: up to
// its first <tool_call>, or, without one, all but an end that may begin
// the tag.
size_t HermesContentBeforeCalls(absl::string_view text);

// A kAuto answer held to the call schema: it begins with "{".
bool BeginsSchemaToolCall(const ToolCallFormat& format, const std::string& text);

// The answer so far may still turn out to be calls (a stream holds it back
// until it knows).
bool MayBecomeLlama3JsonToolCall(const std::string& text);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_
