#include "engine/tokenizers/chat_render_qwen25.h"

#include "absl/strings/str_cat.h"
#include "engine/tokenizers/python_json.h"

namespace attnserve {
namespace {

constexpr char kDefaultSystem[] = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

}  // namespace

absl::StatusOr<std::string> RenderQwen25(absl::Span<const ChatMessage> m, bool gen, const ChatRenderOptions& o) {
  const bool first_is_system = m[0].role == "system";
  std::string out = "<|im_start|>system\n";
  absl::StrAppend(&out, first_is_system ? m[0].content : kDefaultSystem);
  if (!o.tools.empty()) {
    out +=
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
        "function signatures within <tools></tools> XML tags:\n<tools>";
    for (size_t t = 0; t < o.tools.size(); ++t) {
      absl::StatusOr<std::string> tool = PythonJsonDumpsText(o.tools[t], absl::StrCat("tools[", t, "]"));
      if (!tool.ok()) return tool.status();
      absl::StrAppend(&out, "\n", *tool);
    }
    out +=
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call>";
  }
  out += "<|im_end|>\n";
  for (size_t i = 0; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    const bool plain_assistant = msg.role == "assistant" && msg.tool_calls.empty();
    if (msg.role == "user" || (msg.role == "system" && i > 0) || plain_assistant) {
      absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
    } else if (msg.role == "assistant") {
      out += "<|im_start|>assistant";
      if (!msg.content.empty()) absl::StrAppend(&out, "\n", msg.content);
      for (size_t c = 0; c < msg.tool_calls.size(); ++c) {
        absl::StatusOr<std::string> arguments = PythonJsonDumpsText(
            msg.tool_calls[c].arguments, absl::StrCat("messages[", i, "].tool_calls[", c, "].function.arguments"));
        if (!arguments.ok()) return arguments.status();
        absl::StrAppend(&out, "\n<tool_call>\n{\"name\": \"", msg.tool_calls[c].name, "\", \"arguments\": ", *arguments,
                        "}\n</tool_call>");
      }
      out += "<|im_end|>\n";
    } else if (msg.role == "tool") {
      // Results in a row share one user turn.
      if (i == 0 || m[i - 1].role != "tool") out += "<|im_start|>user";
      absl::StrAppend(&out, "\n<tool_response>\n", msg.content, "\n</tool_response>");
      if (i + 1 == m.size() || m[i + 1].role != "tool") out += "<|im_end|>\n";
    }
    // Any other role (a first system message: above; "ipython"...) shows nothing.
  }
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace attnserve
