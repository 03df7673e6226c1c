// Qwen2.5-Instruct's chat template (ChatFormat::kQwen25) rendered in C++:
// ChatML whose system turn carries the tools, one JSON line each; a call is
// <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call> in the
// assistant's turn; consecutive tool results are <tool_response> blocks of
// one user turn. The Jinja text is in chat_template.cc's table.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN25_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN25_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/tokenizers/chat_template.h"

namespace attnserve {

// The template's text for `messages` (not empty); `add_generation_prompt`
// appends the assistant's header. INVALID_ARGUMENT where a tool or a call's
// arguments is not JSON.
absl::StatusOr<std::string> RenderQwen25(absl::Span<const ChatMessage> messages, bool add_generation_prompt,
                                         const ChatRenderOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN25_H_
