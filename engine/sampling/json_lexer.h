// JSON's strings and numbers read a byte at a time: the lexical pieces the
// JSON acceptor (JSON mode) and the JSON-schema acceptor share. Small value
// types, copied with the acceptors that hold them.
#ifndef ATTNSERVE_ENGINE_SAMPLING_JSON_LEXER_H_
#define ATTNSERVE_ENGINE_SAMPLING_JSON_LEXER_H_

#include <cstdint>

namespace attnserve {

enum class LexStep : uint8_t {
  kMore,     // the byte was taken; the token goes on
  kDone,     // the token is whole (a string: the byte was its closing quote;
             // a number: the byte ends it and was NOT taken)
  kRefused,  // no valid token continues with the byte
};

// A string's bytes after its opening quote, through the closing quote:
// escapes, no raw control characters, strict UTF-8 (RFC 3629: no overlong
// forms, no encoded surrogates, nothing past U+10FFFF).
class JsonStringLexer {
 public:
  LexStep Feed(uint8_t byte);
  // The state, for keys of cached token masks.
  uint32_t Key() const {
    return static_cast<uint32_t>(mode_) | uint32_t{left_} << 2 | uint32_t{lo_} << 8 | uint32_t{hi_} << 16;
  }

 private:
  enum class Mode : uint8_t { kText, kEscape, kUnicode, kUtf8 };
  Mode mode_ = Mode::kText;
  uint8_t left_ = 0;               // kUnicode: hex digits left; kUtf8: continuation bytes left
  uint8_t lo_ = 0x80, hi_ = 0xBF;  // kUtf8: the range of the next byte (0x80-0xBF otherwise)
};

// A number, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; with `integer`,
// "0" or -?[1-9][0-9]* only (no fraction, exponent or "-0", as xgrammar's
// integers).
class JsonNumberLexer {
 public:
  explicit JsonNumberLexer(bool integer = false) : integer_(integer) {}
  // The first byte ('-' or a digit); kMore or kRefused.
  LexStep Start(uint8_t byte);
  LexStep Feed(uint8_t byte);
  uint32_t Key() const { return static_cast<uint32_t>(mode_) | uint32_t{integer_} << 4; }

 private:
  enum class Mode : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };
  Mode mode_ = Mode::kInt;
  bool integer_;
};

// Inline: the acceptors call these per byte of every token a mask walk
// tries (out of line, a cold JSON-mode mask walk measured ~10 % slower).
namespace json_lexer_internal {

inline bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
inline bool IsHex(uint8_t b) { return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

}  // namespace json_lexer_internal

inline LexStep JsonStringLexer::Feed(uint8_t byte) {
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
      if (!json_lexer_internal::IsHex(byte)) return LexStep::kRefused;
      if (--left_ == 0) mode_ = Mode::kText;
      return LexStep::kMore;
  }
  return LexStep::kRefused;
}

inline LexStep JsonNumberLexer::Start(uint8_t byte) {
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

inline LexStep JsonNumberLexer::Feed(uint8_t byte) {
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
      if (json_lexer_internal::IsDigit(byte)) return mode_ == Mode::kInt ? LexStep::kMore : LexStep::kRefused;  // no leading zeros
      if (byte == '.' || byte == 'e' || byte == 'E') {
        if (integer_) return LexStep::kRefused;
        mode_ = byte == '.' ? Mode::kDot : Mode::kExp;
        return LexStep::kMore;
      }
      return LexStep::kDone;
    case Mode::kDot:
      if (!json_lexer_internal::IsDigit(byte)) return LexStep::kRefused;
      mode_ = Mode::kFrac;
      return LexStep::kMore;
    case Mode::kFrac:
      if (json_lexer_internal::IsDigit(byte)) return LexStep::kMore;
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
      if (!json_lexer_internal::IsDigit(byte)) return LexStep::kRefused;
      mode_ = Mode::kExpDigits;
      return LexStep::kMore;
    case Mode::kExpDigits:
      return json_lexer_internal::IsDigit(byte) ? LexStep::kMore : LexStep::kDone;
  }
  return LexStep::kRefused;
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_LEXER_H_
