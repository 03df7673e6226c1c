#include "engine/tokenizers/chat_render_qwen3.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizers/chat_render_qwen_tools.h"

namespace attnserve {
namespace {

// Python's str.lstrip('\n') / rstrip('\n'): newlines only, not spaces.
absl::string_view LstripNewlines(absl::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
absl::string_view RstripNewlines(absl::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// A user message that is only a tool's result (a client that sends results
// as user turns): it does not count as the query a tool loop answers.
bool IsToolResponseText(absl::string_view content) {
  return absl::StartsWith(content, "<tool_response>") && absl::EndsWith(content, "</tool_response>");
}

struct AssistantText {
  std::string content;
  std::string reasoning;
};

// The template's split of an answer: reasoning_content when given (content
// then as it is), else the text between the last <think> before the first
// </think> and that </think>, and what follows the last </think>.
AssistantText SplitThinking(const ChatMessage& m) {
  if (m.reasoning_content.has_value()) return {m.content, *m.reasoning_content};
  const size_t first_close = m.content.find("</think>");
  if (first_close == std::string::npos) return {m.content, ""};
  const size_t last_close = m.content.rfind("</think>");
  absl::string_view before = RstripNewlines(absl::string_view(m.content).substr(0, first_close));
  if (const size_t open = before.rfind("<think>"); open != absl::string_view::npos) {
    before = before.substr(open + absl::string_view("<think>").size());
  }
  const absl::string_view after = absl::string_view(m.content).substr(last_close + absl::string_view("</think>").size());
  return {std::string(LstripNewlines(after)), std::string(LstripNewlines(before))};
}

}  // namespace

absl::StatusOr<std::string> RenderQwen3(absl::Span<const ChatMessage> m, bool gen, const ChatRenderOptions& o) {
  const int64_t n = static_cast<int64_t>(m.size());
  std::string out;
  if (!o.tools.empty()) {
    out += "<|im_start|>system\n";
    if (m[0].role == "system") absl::StrAppend(&out, m[0].content, "\n\n");
    if (absl::Status s = AppendQwenTools(o.tools, &out); !s.ok()) return s;
    out += "<|im_end|>\n";
  } else if (m[0].role == "system") {
    absl::StrAppend(&out, "<|im_start|>system\n", m[0].content, "<|im_end|>\n");
  }
  // The last user query (a tool result sent as a user turn is not one);
  // the last message when there is none.
  int64_t last_query = n - 1;
  for (int64_t i = n - 1; i >= 0; --i) {
    if (m[i].role == "user" && !IsToolResponseText(m[i].content)) {
      last_query = i;
      break;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const ChatMessage& msg = m[i];
    if (msg.role == "user" || (msg.role == "system" && i > 0)) {
      absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
    } else if (msg.role == "assistant") {
      const AssistantText text = SplitThinking(msg);
      // Thinking shows only after the last query: in the answer being
      // continued, and in a tool loop's earlier steps that have some.
      if (i > last_query && (i == n - 1 || !text.reasoning.empty())) {
        absl::StrAppend(&out, "<|im_start|>assistant\n<think>\n", RstripNewlines(LstripNewlines(text.reasoning)),
                        "\n</think>\n\n", LstripNewlines(text.content));
      } else {
        absl::StrAppend(&out, "<|im_start|>assistant\n", text.content);
      }
      for (size_t c = 0; c < msg.tool_calls.size(); ++c) {
        if (c > 0 || !text.content.empty()) out += "\n";
        if (absl::Status s = AppendQwenToolCall(msg.tool_calls[c], static_cast<size_t>(i), c, &out); !s.ok()) return s;
      }
      out += "<|im_end|>\n";
    } else if (msg.role == "tool") {
      AppendQwenToolResult(m, static_cast<size_t>(i), &out);  // results in a row share one user turn
    }
    // Any other role (a first system message: above) shows nothing.
  }
  if (gen) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace attnserve
