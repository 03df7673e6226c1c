#include "engine/sampling/json_acceptor.h"

namespace attnserve {
namespace {

bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool IsHex(uint8_t b) { return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

constexpr std::string_view kLiterals[3] = {"true", "false", "null"};

}  // namespace

JsonAcceptor::Key JsonAcceptor::StateKey() const {
  uint64_t gap = 0, aux = 0, utf8 = 0, literal = 0, in_key = 0;
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
    case Mode::kUtf8:
      utf8 = uint64_t{utf8_lo_} | uint64_t{utf8_hi_} << 8;
      [[fallthrough]];
    case Mode::kUnicodeEscape:
      aux = aux_;
      [[fallthrough]];
    case Mode::kString:
    case Mode::kEscape:
      in_key = in_key_;
      break;
    case Mode::kLiteral:
      aux = aux_;
      literal = literal_;
      break;
    default:
      break;
  }
  const uint64_t open = depth_ == 0 ? 0 : containers_ & (~uint64_t{0} >> (64 - depth_));
  return {open, static_cast<uint64_t>(mode_) | uint64_t{depth_} << 5 | gap << 12 | aux << 19 | utf8 << 22 |
                    literal << 38 | in_key << 40};
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
      in_key_ = false;
      return true;
    case '-': mode_ = Mode::kNumMinus; return true;
    case '0': mode_ = Mode::kNumZero; return true;
    case 't': literal_ = 0; break;
    case 'f': literal_ = 1; break;
    case 'n': literal_ = 2; break;
    default:
      if (byte >= '1' && byte <= '9') {
        mode_ = Mode::kNumInt;
        return true;
      }
      return false;
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
      if (byte == '"') {
        if (in_key_) {
          mode_ = Mode::kColon;
        } else {
          EndValue();
        }
        return true;
      }
      if (byte == '\\') {
        mode_ = Mode::kEscape;
        return true;
      }
      if (byte < 0x20) return false;  // control characters must be escaped
      if (byte < 0x80) return true;
      // The lead byte of a multi-byte character, and the range its first
      // continuation byte must fall in (RFC 3629's table).
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (byte >= 0xC2 && byte <= 0xDF) {
        aux_ = 1;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        aux_ = 2;
        if (byte == 0xE0) utf8_lo_ = 0xA0;  // no overlong forms
        if (byte == 0xED) utf8_hi_ = 0x9F;  // no surrogates
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        aux_ = 3;
        if (byte == 0xF0) utf8_lo_ = 0x90;
        if (byte == 0xF4) utf8_hi_ = 0x8F;  // nothing past U+10FFFF
      } else {
        return false;
      }
      mode_ = Mode::kUtf8;
      return true;
    case Mode::kUtf8:
      if (byte < utf8_lo_ || byte > utf8_hi_) return false;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (--aux_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kEscape:
      switch (byte) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          mode_ = Mode::kString;
          return true;
        case 'u':
          mode_ = Mode::kUnicodeEscape;
          aux_ = 4;
          return true;
        default:
          return false;
      }
    case Mode::kUnicodeEscape:
      if (!IsHex(byte)) return false;
      if (--aux_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kNumMinus:
      if (byte == '0') {
        mode_ = Mode::kNumZero;
        return true;
      }
      if (byte >= '1' && byte <= '9') {
        mode_ = Mode::kNumInt;
        return true;
      }
      return false;
    case Mode::kNumZero:
    case Mode::kNumInt:
      if (IsDigit(byte) && mode_ == Mode::kNumInt) return true;
      if (byte == '.') {
        mode_ = Mode::kNumDot;
        return true;
      }
      if (byte == 'e' || byte == 'E') {
        mode_ = Mode::kNumExp;
        return true;
      }
      if (IsDigit(byte)) return false;  // no leading zeros
      return AfterNumber(byte);
    case Mode::kNumDot:
      if (!IsDigit(byte)) return false;
      mode_ = Mode::kNumFrac;
      return true;
    case Mode::kNumFrac:
      if (IsDigit(byte)) return true;
      if (byte == 'e' || byte == 'E') {
        mode_ = Mode::kNumExp;
        return true;
      }
      return AfterNumber(byte);
    case Mode::kNumExp:
      if (byte == '+' || byte == '-') {
        mode_ = Mode::kNumExpSign;
        return true;
      }
      [[fallthrough]];
    case Mode::kNumExpSign:
      if (!IsDigit(byte)) return false;
      mode_ = Mode::kNumExpDigits;
      return true;
    case Mode::kNumExpDigits:
      if (IsDigit(byte)) return true;
      return AfterNumber(byte);
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
