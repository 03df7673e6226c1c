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

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_LEXER_H_
