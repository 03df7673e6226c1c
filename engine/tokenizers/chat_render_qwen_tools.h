// The tool blocks Qwen2.5's and Qwen3's chat templates share (qwen2.5,
// qwen3): the tools listed in the system turn one JSON line each, a call as
// a <tool_call> block in the assistant's turn, consecutive results as
// <tool_response> blocks of one user turn (what vLLM's hermes parser reads).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN_TOOLS_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN_TOOLS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/tokenizers/chat_template.h"

namespace attnserve {

// "# Tools\n\n...<tools>\n{tool}...\n</tools>\n\n...</tool_call>": each tool
// (a JSON object's text) as the template's `tojson` writes it.
// INVALID_ARGUMENT naming tools[i] where one is not JSON.
absl::Status AppendQwenTools(const std::vector<std::string>& tools, std::string* out);

// "<tool_call>\n{\"name\": ..., \"arguments\": ...}\n</tool_call>" for
// messages[message].tool_calls[call]; INVALID_ARGUMENT naming its arguments
// where they are not JSON.
absl::Status AppendQwenToolCall(const ChatToolCall& tool_call, size_t message, size_t call, std::string* out);

// messages[i], a tool's result: its <tool_response> block, in a user turn
// opened by the first of consecutive results and closed by the last.
void AppendQwenToolResult(absl::Span<const ChatMessage> messages, size_t i, std::string* out);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN_TOOLS_H_
