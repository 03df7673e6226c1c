#include "engine/tokenizers/chat_render_qwen_tools.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizers/python_json.h"

namespace attnserve {

absl::Status AppendQwenTools(const std::vector<std::string>& tools, std::string* out) {
  *out +=
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
      "function signatures within <tools></tools> XML tags:\n<tools>";
  for (size_t t = 0; t < tools.size(); ++t) {
    absl::StatusOr<std::string> tool = PythonJsonDumpsText(tools[t], absl::StrCat("tools[", t, "]"));
    if (!tool.ok()) return tool.status();
    absl::StrAppend(out, "\n", *tool);
  }
  *out +=
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call>";
  return absl::OkStatus();
}

absl::Status AppendQwenToolCall(const ChatToolCall& tool_call, size_t message, size_t call, std::string* out) {
  absl::StatusOr<std::string> arguments = PythonJsonDumpsText(
      tool_call.arguments, absl::StrCat("messages[", message, "].tool_calls[", call, "].function.arguments"));
  if (!arguments.ok()) return arguments.status();
  absl::StrAppend(out, "<tool_call>\n{\"name\": \"", tool_call.name, "\", \"arguments\": ", *arguments,
                  "}\n</tool_call>");
  return absl::OkStatus();
}

void AppendQwenToolResult(absl::Span<const ChatMessage> m, size_t i, std::string* out) {
  if (i == 0 || m[i - 1].role != "tool") *out += "<|im_start|>user";
  absl::StrAppend(out, "\n<tool_response>\n", m[i].content, "\n</tool_response>");
  if (i + 1 == m.size() || m[i + 1].role != "tool") *out += "<|im_end|>\n";
}

}  // namespace attnserve
