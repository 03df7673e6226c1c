// OpenAI's Responses API (POST /v1/responses), the interface the openai
// client and agent frameworks now default to, on the chat path: the body is
// rewritten as a /v1/chat/completions body (input items become messages,
// "instructions" a leading system message, function tools and tool_choice
// chat's, text.format chat's response_format) and parsed by
// ParseChatCompletionRequest, so limits, sampling ranges, JSON schema mode
// and tool calls are exactly chat's. The answer is a "response" object whose
// output is a message (output_text) or function_call items; streamed, the
// Responses API's typed events (response.created ... response.completed).
//
// Not stored: previous_response_id, conversation, store: true and
// background are refused (400 naming the field), as are built-in tools,
// non-text inputs, reasoning, include of anything but the output text's
// logprobs, and truncation "auto".
#ifndef ATTNSERVE_SERVER_HTTP_OPENAI_RESPONSES_H_
#define ATTNSERVE_SERVER_HTTP_OPENAI_RESPONSES_H_

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

struct ResponsesCall {
  CompletionCall completion;  // one chat choice
  // The request fields a response object repeats (instructions,
  // max_output_tokens, metadata, temperature, text, tools, tool_choice, ...),
  // with their defaults when absent.
  nlohmann::ordered_json echo;
  // Where chat message k came from ("instructions", "input[2]"), so chat's
  // errors name what the client sent.
  std::vector<std::string> message_fields;
};

absl::StatusOr<ResponsesCall> ParseResponsesRequest(absl::string_view body, const ToolSupport& tools);

// A chat-path failure in the Responses API's terms: messages[k] becomes the
// input item it came from, max_completion_tokens max_output_tokens,
// response_format text.format, tools[i].function tools[i].
absl::Status WithResponsesFieldNames(const absl::Status& status, const ResponsesCall& call);

// What every object of one response shares.
struct ResponseIdentity {
  std::string id;  // "resp_<request id>"
  int64_t created_at = 0;
  std::string model;
};

// The response object of an answer from its stream chunks: status
// "completed", or "incomplete" with incomplete_details {"reason":
// "max_output_tokens"} when the token limit cut it.
nlohmann::ordered_json ResponseObject(const ResponsesCall& call, const std::vector<v1::GenerateResponse>& chunks,
                                      const ResponseIdentity& id);

// A streamed response: the events, in order, each an SSE block
// ("event: <type>\ndata: {...}\n\n") with its sequence_number.
class ResponsesStream {
 public:
  ResponsesStream(const ResponsesCall& call, ResponseIdentity id);

  // response.created and response.in_progress, made when the answer's
  // first chunk comes (OpenAI's response has no usage until it ends).
  std::string Start(const v1::GenerateResponse& first);
  // The events of one chunk; the chunk that ends the answer also closes its
  // items and ends with response.completed (or response.incomplete)
  // carrying ResponseObject.
  std::string Next(const v1::GenerateResponse& chunk);
  // response.failed with the error, after the stream started.
  std::string Failed(const absl::Status& status);

 private:
  std::string Event(nlohmann::ordered_json event);
  nlohmann::ordered_json Shell(const char* status) const;
  // output_item.added for `item` at `index`, then content_part.added for
  // its first part.
  std::string OpenTextItem(int index, nlohmann::ordered_json item, nlohmann::ordered_json part);
  std::string OpenMessage();
  std::string OpenReasoning();
  // `item` (at `index`, as the response object has it) closed: its text's
  // `done_type` event (with the part's logprobs when asked), then
  // content_part.done and output_item.done.
  std::string CloseTextItem(int index, const nlohmann::ordered_json& item, const char* done_type, bool logprobs);
  std::string CloseItems();

  const ResponsesCall& call_;
  const ResponseIdentity id_;
  int64_t sequence_ = 0;
  std::vector<v1::GenerateResponse> chunks_;
  ChatChoiceStream chat_;
  int output_items_ = 0;        // items opened so far
  int message_index_ = -1;      // the message item's output_index, when open
  int reasoning_index_ = -1;    // the reasoning item's, when open (it comes first)
  std::string text_;            // its text so far
  struct Call {
    int output_index;
    std::string item_id, call_id, name, arguments;
  };
  std::vector<Call> calls_;     // function_call items, by chat's tool call index
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_RESPONSES_H_
