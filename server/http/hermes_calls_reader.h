// A hermes answer (Qwen2.5, Hermes-2-Pro: text, then <tool_call> blocks)
// whose calls are held by the lazy format, read as it comes, so a stream
// sends each call's id and name once the name is whole and then its
// arguments as they are written, as vLLM's hermes parser streams them.
//
// Held means: after each "<tool_call>\n" the answer is one call in JSON
// schema mode's one way of writing, {"name": "N", "arguments": {...}}
// (openai_chat.cc sets the trigger; tool_calls_reader.h reads the call).
// What the reader makes of an answer:
//   - the text before the first "<tool_call>" is content;
//   - each "<tool_call>\n" opens a call, read to its closing brace;
//   - text between a call and the next "<tool_call>" (its "\n</tool_call>"
//     and anything else) is not part of the answer, as vLLM's regex reads it;
//   - a "<tool_call>" not followed by "\n" was not held: before any call it
//     leaves the answer to be read whole at its end (HermesToolCalls, vLLM's
//     reading), after one it ends the calls (what was streamed stands).
// The unstreamed answer is read by the same reader over the whole text, so
// a stream's deltas, joined, are the unstreamed message.
#ifndef ATTNSERVE_SERVER_HTTP_HERMES_CALLS_READER_H_
#define ATTNSERVE_SERVER_HTTP_HERMES_CALLS_READER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/http/tool_calls_reader.h"

namespace attnserve {

class HermesCallsReader {
 public:
  // What one Feed learned: content to send (the text before the first tag,
  // an end that may begin the tag held back), and what it read of calls,
  // a piece per call touched, indexed across the answer's calls.
  struct Output {
    std::string content;
    std::vector<ToolCallsReader::Piece> pieces;
  };

  void Feed(absl::string_view text, Output* out);

  // Calls opened (their names whole).
  int calls() const { return calls_; }
  // The last call opened was read to its closing brace.
  bool complete() const { return calls_ > 0 && state_ != State::kCall; }
  // The first "<tool_call>" was not followed by "\n": no call is read
  // here; the caller reads the whole answer at its end.
  bool unheld() const { return state_ == State::kUnheld; }

 private:
  enum class State { kContent, kAfterTag, kCall, kBetween, kUnheld, kStopped };

  // kContent, kBetween: looks for the next tag in `pending_`.
  void FindTag(Output* out);

  State state_ = State::kContent;
  std::string pending_;  // kContent, kBetween: text that may hold (part of) the tag
  ToolCallsReader call_{ToolCallsReader::Form::kOneCall, "arguments"};
  int calls_ = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_HERMES_CALLS_READER_H_
