// Qwen3's chat template (ChatFormat::kQwen3: Qwen3-0.6B to 32B, the models
// that think unless told not to) rendered in C++. ChatML with Qwen2.5's
// tools, calls and results but no default system message; an assistant's
// thinking (<think>...</think> in its content, or its reasoning_content)
// is dropped from the turns before the last user query and kept, as a
// <think> block, after it (a tool loop's interleaved thinking);
// enable_thinking=false ends the generation prompt with an empty think
// block. The Jinja text is in chat_template.cc's table.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN3_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN3_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/tokenizers/chat_template.h"

namespace attnserve {

// The template's text for `messages` (not empty); `add_generation_prompt`
// appends the assistant's header. INVALID_ARGUMENT where a tool or a call's
// arguments is not JSON.
absl::StatusOr<std::string> RenderQwen3(absl::Span<const ChatMessage> messages, bool add_generation_prompt,
                                        const ChatRenderOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_CHAT_RENDER_QWEN3_H_
