#include "engine/sampling/json_lexer.h"

namespace attnserve {
namespace {

bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool IsHex(uint8_t b) { return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

}  // namespace

LexStep JsonStringLexer::Feed(uint8_t byte) {
  switch (mode_) {
    case Mode::kText:
      if (byte == '"') return LexStep::kDone;
      if (byte == '\\') {
        mode_ = Mode::kEscape;
        return LexStep::kMore;
      }
      if (byte < 0x20) return LexStep::kRefused;  // control characters must be escaped
      if (byte < 0x80) return LexStep::kMore;
      // The lead byte of a multi-byte character, and the range its first
      // continuation byte must fall in (RFC 3629's table).
      lo_ = 0x80;
      hi_ = 0xBF;
      if (byte >= 0xC2 && byte <= 0xDF) {
        left_ = 1;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        left_ = 2;
        if (byte == 0xE0) lo_ = 0xA0;  // no overlong forms
        if (byte == 0xED) hi_ = 0x9F;  // no surrogates
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        left_ = 3;
        if (byte == 0xF0) lo_ = 0x90;
        if (byte == 0xF4) hi_ = 0x8F;  // nothing past U+10FFFF
      } else {
        return LexStep::kRefused;
      }
      mode_ = Mode::kUtf8;
      return LexStep::kMore;
    case Mode::kUtf8:
      if (byte < lo_ || byte > hi_) return LexStep::kRefused;
      lo_ = 0x80;
      hi_ = 0xBF;
      if (--left_ == 0) mode_ = Mode::kText;
      return LexStep::kMore;
    case Mode::kEscape:
      switch (byte) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          mode_ = Mode::kText;
          return LexStep::kMore;
        case 'u':
          mode_ = Mode::kUnicode;
          left_ = 4;
          return LexStep::kMore;
        default:
          return LexStep::kRefused;
      }
    case Mode::kUnicode:
      if (!IsHex(byte)) return LexStep::kRefused;
      if (--left_ == 0) mode_ = Mode::kText;
      return LexStep::kMore;
  }
  return LexStep::kRefused;
}

LexStep JsonNumberLexer::Start(uint8_t byte) {
  if (byte == '-') {
    mode_ = Mode::kMinus;
  } else if (byte == '0') {
    mode_ = Mode::kZero;
  } else if (byte >= '1' && byte <= '9') {
    mode_ = Mode::kInt;
  } else {
    return LexStep::kRefused;
  }
  return LexStep::kMore;
}

LexStep JsonNumberLexer::Feed(uint8_t byte) {
  switch (mode_) {
    case Mode::kMinus:
      if (byte == '0' && !integer_) {
        mode_ = Mode::kZero;
        return LexStep::kMore;
      }
      if (byte >= '1' && byte <= '9') {
        mode_ = Mode::kInt;
        return LexStep::kMore;
      }
      return LexStep::kRefused;
    case Mode::kZero:
    case Mode::kInt:
      if (IsDigit(byte)) return mode_ == Mode::kInt ? LexStep::kMore : LexStep::kRefused;  // no leading zeros
      if (byte == '.' || byte == 'e' || byte == 'E') {
        if (integer_) return LexStep::kRefused;
        mode_ = byte == '.' ? Mode::kDot : Mode::kExp;
        return LexStep::kMore;
      }
      return LexStep::kDone;
    case Mode::kDot:
      if (!IsDigit(byte)) return LexStep::kRefused;
      mode_ = Mode::kFrac;
      return LexStep::kMore;
    case Mode::kFrac:
      if (IsDigit(byte)) return LexStep::kMore;
      if (byte == 'e' || byte == 'E') {
        mode_ = Mode::kExp;
        return LexStep::kMore;
      }
      return LexStep::kDone;
    case Mode::kExp:
      if (byte == '+' || byte == '-') {
        mode_ = Mode::kExpSign;
        return LexStep::kMore;
      }
      [[fallthrough]];
    case Mode::kExpSign:
      if (!IsDigit(byte)) return LexStep::kRefused;
      mode_ = Mode::kExpDigits;
      return LexStep::kMore;
    case Mode::kExpDigits:
      return IsDigit(byte) ? LexStep::kMore : LexStep::kDone;
  }
  return LexStep::kRefused;
}

}  // namespace attnserve
