#include "engine/tokenizers/chat_render_qwen25.h"

#include "absl/strings/str_cat.h"
#include "engine/tokenizers/chat_render_qwen_tools.h"

namespace attnserve {
namespace {

constexpr char kDefaultSystem[] = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

}  // namespace

absl::StatusOr<std::string> RenderQwen25(absl::Span<const ChatMessage> m, bool gen, const ChatRenderOptions& o) {
  const bool first_is_system = m[0].role == "system";
  std::string out = "<|im_start|>system\n";
  absl::StrAppend(&out, first_is_system ? m[0].content : kDefaultSystem);
  if (!o.tools.empty()) {
    out += "\n\n";
    if (absl::Status s = AppendQwenTools(o.tools, &out); !s.ok()) return s;
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
        out += "\n";
        if (absl::Status s = AppendQwenToolCall(msg.tool_calls[c], i, c, &out); !s.ok()) return s;
      }
      out += "<|im_end|>\n";
    } else if (msg.role == "tool") {
      AppendQwenToolResult(m, i, &out);  // results in a row share one user turn
    }
    // Any other role (a first system message: above; "ipython"...) shows nothing.
  }
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace attnserve
