// OpenAI's tool calling on /v1/chat/completions ("tools", "tool_choice"),
// done as vLLM does it without a model-specific tool-call parser: through
// JSON schema mode, so it works with any model and the calls always parse.
//
//   tool_choice {"type": "function", "function": {"name": N}}: the answer is
//     N's arguments, an instance of its "parameters" schema; the message
//     carries one tool call to N with that text as "arguments".
//   tool_choice "required": the answer is [{"name": ..., "parameters":
//     {...}}, ...], one or more calls, each to one of the tools (vLLM's
//     schema; the calls are a tagged union on "name"; exactly one with
//     parallel_tool_calls false); the message carries them with
//     finish_reason "tool_calls".
//   tool_choice "none": the tools are ignored.
//   tool_choice "auto" (OpenAI's default when tools are given): refused,
//     as vLLM refuses it without --tool-call-parser: whether a free answer
//     is a call depends on how each model family writes calls.
//
// The tools are not shown to the model: the built-in chat templates are
// published templates without tool sections (engine/tokenizers/
// chat_template.h), so what the model needs must be in the messages. For
// the same reason messages with role "tool" or with "tool_calls" are
// refused (openai_chat.cc).
#ifndef ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_
#define ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace attnserve {

inline constexpr size_t kMaxTools = 128;

struct ToolCallFormat {
  enum class Mode { kNone, kNamed, kRequired };
  Mode mode = Mode::kNone;
  std::string function;  // kNamed: the function called
};

// Reads "tools" and "tool_choice" of the request `root` (`body` is its
// text, read again in order because a schema's property order is the
// answer's). For kNamed and kRequired, *schema is the JSON schema the
// answer must follow. INVALID_ARGUMENT names the field.
absl::Status ParseToolChoice(const nlohmann::json& root, absl::string_view body, ToolCallFormat* format,
                             std::string* schema);

// OpenAI's "tool_calls" of an answer `text`: [{"id", "type": "function",
// "function": {"name", "arguments"}}]. kNamed: one call whose arguments are
// the text (cut short if the answer was); kRequired: the calls the text
// lists, nullopt when it is not a whole list (the token limit cut it).
// Ids are `id_prefix` plus the call's position.
std::optional<nlohmann::json> ToolCalls(const ToolCallFormat& format, const std::string& text,
                                        const std::string& id_prefix);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_TOOLS_H_
