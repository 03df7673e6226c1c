// vLLM's reasoning parsers, read as the answer comes (reasoning_splitter.h).
#include "server/http/reasoning_splitter.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http/partial_tag.h"

namespace attnserve {
namespace {

constexpr absl::string_view kStart = "<think>";
constexpr absl::string_view kEnd = "</think>";

}  // namespace

absl::StatusOr<ReasoningParser> ReasoningParserFromName(absl::string_view name) {
  if (name.empty()) return ReasoningParser::kNone;
  if (name == "deepseek_r1") return ReasoningParser::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParser::kQwen3;
  return absl::InvalidArgumentError(
      absl::StrCat("--reasoning-parser=", name, ": must be deepseek_r1, qwen3 or empty"));
}

void ReasoningSplitter::Feed(absl::string_view text, bool last, std::string* reasoning, std::string* content) {
  if (parser_ == ReasoningParser::kNone) {
    content->append(text.data(), text.size());
    return;
  }
  held_.append(text.data(), text.size());
  while (true) {
    switch (state_) {
      case State::kStart:
        if (absl::StartsWith(held_, kStart)) {
          held_.erase(0, kStart.size());
          state_ = State::kReasoning;
          reasoned_ = true;
        } else if (absl::StartsWith(kStart, held_) && !last) {
          return;  // may still become "<think>"
        } else {
          state_ = State::kReasoning;  // the template opened the thinking in the prompt
          reasoned_ = true;
        }
        break;
      case State::kReasoning: {
        const size_t end = held_.find(kEnd.data(), 0, kEnd.size());
        if (end != std::string::npos) {
          reasoning->append(held_, 0, end);
          held_.erase(0, end + kEnd.size());
          state_ = State::kContent;
          break;
        }
        const size_t keep = last ? 0 : TagStartAtEnd(held_, kEnd);
        reasoning->append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::kContent:
        content->append(held_);
        held_.clear();
        return;
    }
  }
}

ReasonedAnswer SplitReasoning(ReasoningParser parser, absl::string_view text, bool thinking_off) {
  ReasoningSplitter splitter(parser, thinking_off);
  std::string reasoning;
  ReasonedAnswer out;
  splitter.Feed(text, /*last=*/true, &reasoning, &out.content);
  if (splitter.reasoned()) out.reasoning = std::move(reasoning);
  return out;
}

}  // namespace attnserve
