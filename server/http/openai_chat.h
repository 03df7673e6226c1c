// OpenAI's /v1/chat/completions on attnserve.v1 GenerateRequest's chat
// prompt: the messages become a ChatPrompt (rendered with the model's chat
// template by the core), the sampling fields are /v1/completions' (shared
// parsing, openai_api.h), and the answers are OpenAI's chat objects. Pure
// functions, tested on their own.
//
// Accepted beyond OpenAI's fields, as vLLM: add_generation_prompt,
// continue_final_message and the sampling extensions; tools with
// tool_choice "required", a named function, or "auto" with a tool-call
// parser (openai_tools.h). Refused with a 400 naming the field rather than
// ignored: "auto" without a parser, functions, non-text content parts,
// echo, and roles other than system / developer / user / assistant (and
// tool where the template has tool turns).
#ifndef ATTNSERVE_SERVER_HTTP_OPENAI_CHAT_H_
#define ATTNSERVE_SERVER_HTTP_OPENAI_CHAT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "server/http/hermes_calls_reader.h"
#include "server/http/openai_api.h"
#include "server/http/openai_tools.h"
#include "server/http/reasoning_splitter.h"
#include "server/http/tool_calls_reader.h"

namespace attnserve {

// {"messages": [{"role", "content": str | [{"type": "text", "text"}]}],
//  "model", "max_tokens" | "max_completion_tokens", "logprobs": bool,
//  "top_logprobs": int, "n", "stream", "stream_options", "stop", "seed",
//  "temperature", "top_p", the penalties, "logit_bias", ...}. Without a
// token limit the answer may run to the end of the context (the core's
// default for chat prompts). The result has format.chat set.
// `tools`: whether the template shows tools (tool turns taken, tools put
// in the prompt) and whether tool_choice "auto" has a parser.
absl::StatusOr<CompletionCall> ParseChatCompletionRequest(absl::string_view body, const ToolSupport& tools = {});

// --reasoning-parser on a parsed chat call: the answer's reasoning is set
// apart (format.reasoning), and where a format holds the answer
// (response_format, guided_json / guided_choice / guided_regex, named or
// required tools, tool_choice "auto"'s held calls) it holds what follows
// the thinking (sampling.constrain_after "</think>"), as vLLM's structured
// outputs do with a reasoning parser: the model thinks first. Not where
// Qwen3's template has closed the thinking in the prompt (qwen3 with
// enable_thinking false), nor with `in_reasoning` (vLLM's
// enable_in_reasoning: the format holds the thinking too). DeepSeek-R1's
// template always opens the thinking, and its parser would read a format
// held from the first token as unfinished thinking, so enable_thinking
// does not change it.
// A thinking_token_budget gets the end of the thinking to force
// (sampling.thinking_end "</think>"); without a parser it is refused
// (INVALID_ARGUMENT naming it), and with Qwen3's thinking switched off it is
// dropped (nothing to bound). `default_budget` (>= 0; --thinking-token-budget)
// is the budget of a call that sets none.
absl::Status ApplyReasoningParser(ReasoningParser parser, bool in_reasoning, CompletionCall* call,
                                  int default_budget = -1);

// {"id": "chatcmpl-..", "object": "chat.completion", "created", "model",
//  "choices": [{"index", "message": {"role": "assistant", "content"} (or
//  {"role", "content": null, "tool_calls": [...]} with a tool choice),
//  "logprobs": null | {"content": [...]}, "finish_reason", "stop_reason"}],
//  "usage"}: choice k from per_choice[k]'s stream chunks.
nlohmann::json ChatCompletionResponse(const std::vector<std::vector<v1::GenerateResponse>>& per_choice,
                                      const CompletionIdentity& id, const CompletionFormat& format);

// The first chunk of choice `index` in a stream: delta {"role":
// "assistant", "content": ""}, as OpenAI starts each choice; with
// format.return_token_ids also the prompt's "prompt_token_ids" from the
// choice's first message, as vLLM.
nlohmann::json ChatRoleChunk(const CompletionIdentity& id, int index, ChunkUsage usage,
                             const CompletionFormat& format, const v1::GenerateResponse& first);

// What a stream of one chat choice has sent so far (tool calls need it).
struct ChatChoiceStream {
  bool tool_call_opened = false;  // a named call's id and name went out
  std::string text;               // "auto": the answer so far; "required": until a call opens
  bool content = false;           // "auto": the answer is not calls, now streamed as content
  bool schema_call = false;       // "auto": the answer began a call held to the call schema
  ToolCallsReader calls;          // "required", and "auto"'s schema_call: the calls read so far
  size_t sent = 0;                // "auto" with hermes: the bytes of `text` sent as content
  HermesCallsReader hermes;       // "auto" with hermes, calls held: what the answer's calls are so far
  std::optional<ReasoningSplitter> reasoning;  // --reasoning-parser: where the reasoning ends
};

// One streamed "chat.completion.chunk" of choice `index`: delta {"content"}
// and, when asked, logprobs {"content": [...]}; the last carries
// finish_reason (and usage, as CompletionChunk). With a named tool choice
// the delta is {"tool_calls": [{"index": 0, "function": {"arguments"}}]}
// (the first also with the call's id, type and name); with "required" the
// same for each call of the list, its index its position, and with "auto"
// the same for a call held to the call schema (other answers that may be
// calls are held back and sent whole at the end).
nlohmann::json ChatCompletionChunk(const v1::GenerateResponse& chunk, const CompletionIdentity& id,
                                   const CompletionFormat& format, int index, ChunkUsage usage,
                                   ChatChoiceStream* stream);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_CHAT_H_
