// Hermes calls held by the lazy format, read as the answer comes
// (hermes_calls_reader.h).
#include "server/http/hermes_calls_reader.h"

#include <utility>

#include "absl/strings/match.h"

namespace attnserve {
namespace {

constexpr absl::string_view kTag = "<tool_call>";

// Adds what a call reader told about its call (index 0 there) to `out` as
// call `index` of the answer, merged into that call's piece when the last
// one is already its.
void MergePieces(std::vector<ToolCallsReader::Piece>& local, int index, HermesCallsReader::Output* out) {
  for (ToolCallsReader::Piece& p : local) {
    if (!out->pieces.empty() && out->pieces.back().index == index) {
      ToolCallsReader::Piece& into = out->pieces.back();
      if (p.opens) {
        into.opens = true;
        into.name = std::move(p.name);
      }
      into.arguments += p.arguments;
    } else {
      p.index = index;
      out->pieces.push_back(std::move(p));
    }
  }
  local.clear();
}

}  // namespace

void HermesCallsReader::Feed(absl::string_view text, Output* out) {
  std::vector<ToolCallsReader::Piece> local;
  for (const char c : text) {
    switch (state_) {
      case State::kContent:
      case State::kBetween: {
        pending_ += c;
        if (pending_ == kTag) {
          pending_.clear();
          state_ = State::kAfterTag;
        } else if (!absl::StartsWith(kTag, pending_)) {
          // Not the tag: all of it is text, but a '<' may begin the tag
          // (the tag has no other '<').
          std::string text_part = std::move(pending_);
          pending_.clear();
          if (c == '<') {
            text_part.pop_back();
            pending_ = "<";
          }
          if (state_ == State::kContent) out->content += text_part;
        }
        break;
      }
      case State::kAfterTag:
        if (c == '\n') {
          state_ = State::kCall;
          call_ = ToolCallsReader(ToolCallsReader::Form::kOneCall, "arguments");
        } else {
          state_ = calls_ == 0 ? State::kUnheld : State::kStopped;
        }
        break;
      case State::kCall: {
        const int before = call_.calls();
        call_.Feed(absl::string_view(&c, 1), &local);
        if (call_.calls() > before) ++calls_;
        MergePieces(local, calls_ - 1, out);
        if (call_.complete()) {
          state_ = State::kBetween;
        } else if (call_.broken()) {
          state_ = State::kStopped;
        }
        break;
      }
      case State::kUnheld:
      case State::kStopped:
        return;
    }
  }
}

}  // namespace attnserve
