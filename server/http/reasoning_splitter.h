// vLLM's reasoning parsers (--reasoning-parser): a reasoning model's
// answer <think>...</think> then the reply is returned as the message's
// "reasoning" (vLLM's current name; "reasoning_content", its former one, is
// sent beside it for clients written against older vLLM) and its "content".
//
//   deepseek_r1 (DeepSeek-R1 and its distills, QwQ): the answer is reasoning
//     from its start (a "<think>" there is dropped; R1's template writes it
//     into the prompt) up to "</think>", the rest content; without
//     "</think>" (cut by the token limit) all of it is reasoning.
//   qwen3 (the Qwen3 family): as deepseek_r1 (the Qwen3-2507 thinking
//     models' and Qwen3.5's templates write "<think>" into the prompt, the
//     first Qwen3's have the model write it), unless the prompt closed the
//     thinking (enable_thinking false: `thinking_off`): then all content.
//     vLLM's current parser (vllm/reasoning/qwen3_reasoning_parser.py);
//     vLLM before it read an answer without "<think>" as all content.
//
// Read as the answer comes, so a stream sends reasoning as it is written
// ("</think>", and an end that may begin it, held back until known); the
// unstreamed answer is split by the same reader, so a stream's deltas,
// joined, are the unstreamed message. vLLM reads a "<think>" anywhere in
// the unstreamed answer, dropping what precedes it, and so answers
// differently streamed and not for such text; here only a leading one
// counts.
#ifndef ATTNSERVE_SERVER_HTTP_REASONING_SPLITTER_H_
#define ATTNSERVE_SERVER_HTTP_REASONING_SPLITTER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace attnserve {

enum class ReasoningParser { kNone, kDeepSeekR1, kQwen3 };

// "deepseek_r1", "qwen3" or "" (kNone); INVALID_ARGUMENT otherwise.
absl::StatusOr<ReasoningParser> ReasoningParserFromName(absl::string_view name);

class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReasoningParser parser = ReasoningParser::kNone, bool thinking_off = false)
      : parser_(parser == ReasoningParser::kQwen3 && thinking_off ? ReasoningParser::kNone : parser) {}

  // Splits the answer's next bytes into reasoning and content (appended);
  // `last` (the answer is whole) gives out what was held back.
  void Feed(absl::string_view text, bool last, std::string* reasoning, std::string* content);

  // The answer has reasoning (its "reasoning" is a string, else null).
  bool reasoned() const { return reasoned_; }
  // Inside the thinking: what comes next is reasoning until "</think>".
  bool thinking() const { return state_ == State::kReasoning; }

 private:
  enum class State { kStart, kReasoning, kContent };

  ReasoningParser parser_;
  State state_ = State::kStart;
  std::string held_;  // kStart: a beginning of "<think>"; kReasoning: of "</think>"
  bool reasoned_ = false;
};

// A whole answer split: reasoning (nullopt when it has none) and content.
struct ReasonedAnswer {
  std::optional<std::string> reasoning;
  std::string content;
};
ReasonedAnswer SplitReasoning(ReasoningParser parser, absl::string_view text, bool thinking_off = false);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_REASONING_SPLITTER_H_
