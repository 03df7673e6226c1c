// Tool calls written in JSON schema mode read as the answer comes
// (tool_calls_reader.h).
#include "server/http/tool_calls_reader.h"

#include "nlohmann/json.hpp"

namespace attnserve {

void ToolCallsReader::Expect(absl::string_view literal, Next next) {
  state_ = State::kLiteral;
  literal_.assign(literal.data(), literal.size());
  next_ = next;
}

void ToolCallsReader::Feed(absl::string_view text, std::vector<Piece>* pieces) {
  // The piece of the call being read, added on its first news.
  auto piece = [&]() -> Piece& {
    if (pieces->empty() || pieces->back().index != calls_ - 1) {
      pieces->emplace_back();
      pieces->back().index = calls_ - 1;
    }
    return pieces->back();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state_) {
      case State::kLiteral:
        if (c != literal_[0]) {
          state_ = State::kBroken;
          return;
        }
        literal_.erase(0, 1);
        if (!literal_.empty()) break;
        switch (next_) {
          case Next::kName:
            state_ = State::kName;
            name_.clear();
            escaped_ = false;
            break;
          case Next::kArguments:
            state_ = State::kArguments;
            arguments_end_ = JsonValueEnd();
            break;
          case Next::kCallEnd:
            state_ = form_ == Form::kList ? State::kBetween : State::kDone;
            break;
        }
        break;
      case State::kName:
        if (c == '"' && !escaped_) {
          // The name as a JSON string's content, decoded.
          const nlohmann::json name = nlohmann::json::parse("\"" + name_ + "\"", nullptr, false);
          if (!name.is_string()) {
            state_ = State::kBroken;
            return;
          }
          ++calls_;
          Piece& p = piece();
          p.opens = true;
          p.name = name.get<std::string>();
          Expect(after_name_, Next::kArguments);
          break;
        }
        escaped_ = !escaped_ && c == '\\';
        name_ += c;
        break;
      case State::kArguments:
        if (arguments_end_.depth() == 0 && c != '{') {
          state_ = State::kBroken;
          return;
        }
        piece().arguments += c;
        if (arguments_end_.Feed(c)) Expect("}", Next::kCallEnd);
        break;
      case State::kBetween:
        if (c == ']') {
          state_ = State::kDone;
        } else if (c == ',') {
          Expect(" {\"name\": \"", Next::kName);
        } else {
          state_ = State::kBroken;
          return;
        }
        break;
      case State::kDone:
      case State::kBroken:
        state_ = State::kBroken;  // nothing may follow the list or the call
        return;
    }
  }
}

}  // namespace attnserve
