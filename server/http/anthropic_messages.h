// Anthropic's Messages API (POST /v1/messages), as llama.cpp's server and
// vLLM serve it for the anthropic SDK and the tools built on it, on the chat
// path: the body is rewritten as a /v1/chat/completions body ("system" a
// leading system message, text blocks messages, tool_use blocks an
// assistant's tool_calls, tool_result blocks tool messages, tools and
// tool_choice chat's) and parsed by ParseChatCompletionRequest, so
// templates, limits and tool calls are exactly chat's. The answer is a
// "message" with text and tool_use content blocks, after a thinking block
// with --reasoning-parser; streamed, the API's events (message_start ...
// message_stop). thinking {"type": "enabled" | "adaptive" | "disabled"} is
// the template's thinking switch (Qwen3's enable_thinking), and an
// assistant's thinking blocks given back its turn's reasoning_content.
//
// Refused (400 naming the field): image and document blocks, redacted
// thinking, thinking enabled without a reasoning parser, server tools and
// MCP servers, and a temperature outside Anthropic's [0, 1].
#ifndef ATTNSERVE_SERVER_HTTP_ANTHROPIC_MESSAGES_H_
#define ATTNSERVE_SERVER_HTTP_ANTHROPIC_MESSAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_chat.h"

namespace attnserve {

struct AnthropicCall {
  CompletionCall completion;  // one chat choice
  // Where chat message k came from ("system", "messages[2]"), so chat's
  // errors name what the client sent.
  std::vector<std::string> message_fields;
};

// `reasoning` (--reasoning-parser): whether thinking {"type": "enabled"}
// can be served (with none, it is refused: the model does not think apart).
absl::StatusOr<AnthropicCall> ParseAnthropicMessagesRequest(absl::string_view body, const ToolSupport& tools,
                                                            ReasoningParser reasoning = ReasoningParser::kNone);

// /v1/messages/count_tokens: the same body (max_tokens may be left out) as
// the decoder's tokenize request of the chat prompt a message would get,
// tools shown included; answered {"input_tokens": n}.
absl::StatusOr<v1::TokenizeRequest> ParseAnthropicCountTokensRequest(
    absl::string_view body, const ToolSupport& tools, ReasoningParser reasoning = ReasoningParser::kNone);

// A chat-path failure in the Messages API's terms: messages[k] becomes the
// message (or system) it came from, max_completion_tokens max_tokens,
// stop stop_sequences, tools[i].function tools[i].
absl::Status WithAnthropicFieldNames(const absl::Status& status, const AnthropicCall& call);

// {"type": "error", "error": {"type": "invalid_request_error" |
// "authentication_error" | "rate_limit_error" | "not_found_error" |
// "overloaded_error" | "api_error", "message"}}, as the SDK reads it.
nlohmann::json AnthropicError(const absl::Status& status);

struct AnthropicIdentity {
  std::string id;  // "msg_<request id>"
  std::string model;
};

// The message of an answer from its stream chunks: content blocks (text,
// or tool_use with the parsed arguments as input), stop_reason "end_turn",
// "max_tokens", "stop_sequence" or "tool_use", and usage (input_tokens
// without the cached ones, cache_read_input_tokens, output_tokens).
nlohmann::ordered_json AnthropicMessage(const AnthropicCall& call, const std::vector<v1::GenerateResponse>& chunks,
                                        const AnthropicIdentity& id);

// A streamed message: each event "event: <type>\ndata: {...}\n\n".
class AnthropicStream {
 public:
  AnthropicStream(const AnthropicCall& call, AnthropicIdentity id);

  // message_start, made when the answer's `first` chunk comes: its usage
  // has the prompt's tokens as input_tokens (message_delta's usage, at the
  // end, splits off those the prefix cache served as
  // cache_read_input_tokens, and counts the output).
  std::string Start(const v1::GenerateResponse& first);
  // The events of one chunk; the chunk that ends the answer closes the open
  // block and ends with message_delta and message_stop.
  std::string Next(const v1::GenerateResponse& chunk);
  // An error event, after the stream started.
  std::string Failed(const absl::Status& status);

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  // Closes the open block, if any.
  std::string Close();
  // Closes the open block and starts `block` (of `kind`) as the next one.
  std::string Open(Block kind, nlohmann::ordered_json block);
  // A content_block_delta of the open block.
  std::string Delta(nlohmann::ordered_json delta) const;

  const AnthropicCall& call_;
  const AnthropicIdentity id_;
  std::vector<v1::GenerateResponse> chunks_;
  ChatChoiceStream chat_;
  int blocks_ = 0;          // content blocks opened so far
  Block open_ = Block::kNone;  // the open block's kind
  int calls_ = 0;           // chat tool calls seen
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_ANTHROPIC_MESSAGES_H_
