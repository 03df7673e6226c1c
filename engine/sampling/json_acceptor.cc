#include "engine/sampling/json_acceptor.h"

namespace attnserve {
namespace {

constexpr std::string_view kLiterals[3] = {"true", "false", "null"};

}  // namespace

JsonAcceptor::Key JsonAcceptor::StateKey() const {
  uint64_t gap = 0, lexer = 0, aux = 0, literal = 0, in_key = 0;
  switch (mode_) {
    case Mode::kStart:
    case Mode::kObjectOpen:
    case Mode::kKey:
    case Mode::kColon:
    case Mode::kValue:
    case Mode::kArrayOpen:
    case Mode::kAfterValue:
      gap = static_cast<uint64_t>(gap_) | (gap_ == Gap::kNewline ? uint64_t{indent_} << 2 : 0);
      break;
    case Mode::kString:
      lexer = string_.Key();
      in_key = in_key_;
      break;
    case Mode::kNumber:
      lexer = number_.Key();
      break;
    case Mode::kLiteral:
      aux = aux_;
      literal = literal_;
      break;
    case Mode::kDone:
      break;
  }
  const uint64_t open = depth_ == 0 ? 0 : containers_ & (~uint64_t{0} >> (64 - depth_));
  return {open, static_cast<uint64_t>(mode_) | uint64_t{depth_} << 5 | gap << 12 | aux << 19 | literal << 22 |
                    in_key << 24 | lexer << 25};
}

bool JsonAcceptor::Feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

// Whitespace between tokens: one gap per position, a single space or a
// newline with up to kMaxJsonIndent spaces or tabs. The gap resets when a
// token byte is read.
bool JsonAcceptor::Whitespace(uint8_t byte) {
  switch (gap_) {
    case Gap::kNone:
      if (byte == ' ') {
        gap_ = Gap::kSpace;
        return true;
      }
      if (byte == '\n') {
        gap_ = Gap::kNewline;
        indent_ = 0;
        return true;
      }
      return false;
    case Gap::kSpace:
      return false;
    case Gap::kNewline:
      if ((byte == ' ' || byte == '\t') && indent_ < kMaxJsonIndent) {
        ++indent_;
        return true;
      }
      return false;
  }
  return false;
}

bool JsonAcceptor::Open(bool object) {
  if (depth_ >= kMaxJsonDepth) return false;
  if (object) {
    containers_ |= uint64_t{1} << depth_;
  } else {
    containers_ &= ~(uint64_t{1} << depth_);
  }
  ++depth_;
  mode_ = object ? Mode::kObjectOpen : Mode::kArrayOpen;
  return true;
}

bool JsonAcceptor::Close(uint8_t byte) {
  if (depth_ == 0 || (byte == '}') != InObject()) return false;
  --depth_;
  EndValue();
  return true;
}

void JsonAcceptor::EndValue() { mode_ = depth_ == 0 ? Mode::kDone : Mode::kAfterValue; }

bool JsonAcceptor::StartValue(uint8_t byte) {
  switch (byte) {
    case '{': return Open(true);
    case '[': return Open(false);
    case '"':
      mode_ = Mode::kString;
      string_ = JsonStringLexer();
      in_key_ = false;
      return true;
    case 't': literal_ = 0; break;
    case 'f': literal_ = 1; break;
    case 'n': literal_ = 2; break;
    default:
      number_ = JsonNumberLexer();
      if (number_.Start(byte) == LexStep::kRefused) return false;
      mode_ = Mode::kNumber;
      return true;
  }
  mode_ = Mode::kLiteral;
  aux_ = 1;
  return true;
}

// A number ends at the first byte that cannot continue it, which is then
// read as whatever follows a value.
bool JsonAcceptor::AfterNumber(uint8_t byte) {
  EndValue();  // numbers are never top-level here, so this is kAfterValue
  return Feed(byte);
}

bool JsonAcceptor::Feed(uint8_t byte) {
  switch (mode_) {
    case Mode::kStart:
      if (byte == '{') {
        gap_ = Gap::kNone;
        return Open(true);
      }
      return Whitespace(byte);
    case Mode::kObjectOpen:
      if (byte == '}') {
        gap_ = Gap::kNone;
        return Close(byte);
      }
      [[fallthrough]];
    case Mode::kKey:
      if (byte == '"') {
        gap_ = Gap::kNone;
        mode_ = Mode::kString;
        string_ = JsonStringLexer();
        in_key_ = true;
        return true;
      }
      return Whitespace(byte);
    case Mode::kColon:
      if (byte == ':') {
        gap_ = Gap::kNone;
        mode_ = Mode::kValue;
        return true;
      }
      return Whitespace(byte);
    case Mode::kArrayOpen:
      if (byte == ']') {
        gap_ = Gap::kNone;
        return Close(byte);
      }
      [[fallthrough]];
    case Mode::kValue:
      if (byte == ' ' || byte == '\n' || byte == '\t' || byte == '\r') return Whitespace(byte);
      gap_ = Gap::kNone;
      return StartValue(byte);
    case Mode::kAfterValue:
      if (byte == ',') {
        gap_ = Gap::kNone;
        mode_ = InObject() ? Mode::kKey : Mode::kValue;
        return true;
      }
      if (byte == '}' || byte == ']') {
        gap_ = Gap::kNone;
        return Close(byte);
      }
      return Whitespace(byte);
    case Mode::kString:
      switch (string_.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone:
          if (in_key_) {
            mode_ = Mode::kColon;
          } else {
            EndValue();
          }
          return true;
      }
      return false;
    case Mode::kNumber:
      switch (number_.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone: return AfterNumber(byte);
      }
      return false;
    case Mode::kLiteral: {
      const std::string_view word = kLiterals[literal_];
      if (byte != static_cast<uint8_t>(word[aux_])) return false;
      if (++aux_ == word.size()) EndValue();
      return true;
    }
    case Mode::kDone:
      return false;
  }
  return false;
}

}  // namespace attnserve
