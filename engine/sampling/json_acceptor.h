// JsonAcceptor: reads JSON text one byte at a time and says whether the
// bytes so far can still begin a valid document, and whether they already
// form one. The engine's JSON mode (OpenAI's response_format
// {"type": "json_object"}) masks every token whose bytes it would refuse,
// so the output is a JSON object whenever it ends by itself.
//
// What it accepts: RFC 8259 JSON whose top-level value is an object, with
// strings checked as strict UTF-8 (RFC 3629: no overlong forms, no encoded
// surrogates, nothing past U+10FFFF), nesting up to kMaxJsonDepth, and
// nothing after the closing brace. Whitespace between tokens is limited
// as llama.cpp's JSON grammar limits it (grammars/json.gbnf,
// `ws ::= | " " | "\n" [ \t]{0,20}`): at most one gap of either a single
// space or a newline followed by up to 20 spaces or tabs. Unbounded
// whitespace is the usual way a constrained model runs to its token limit
// without saying anything; this form still allows pretty-printing at two
// spaces an indent to depth 10. The gap is also allowed before the object.
//
// The state is a small value type: copying it and feeding a token's bytes
// to the copy is how a token is tested. No allocation.
#ifndef ATTNSERVE_ENGINE_SAMPLING_JSON_ACCEPTOR_H_
#define ATTNSERVE_ENGINE_SAMPLING_JSON_ACCEPTOR_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "engine/sampling/json_lexer.h"

namespace attnserve {

inline constexpr int kMaxJsonDepth = 64;
inline constexpr int kMaxJsonIndent = 20;  // spaces or tabs after a newline, as llama.cpp

class JsonAcceptor {
 public:
  // Feeds one byte. False: no valid document starts with the bytes so far
  // plus this one; the state is then unusable (callers test on a copy).
  bool Feed(uint8_t byte);
  // All of `bytes`, stopping at the first refusal.
  bool Feed(std::string_view bytes);
  // The bytes so far are a whole document (only end of output may follow).
  bool complete() const { return mode_ == Mode::kDone; }

  // Equal for two states exactly when every byte string gets the same
  // answer from both (fields a mode does not read are left out), so a
  // token mask computed for one serves the other. {nesting, the rest}.
  struct Key {
    uint64_t containers = 0;  // the open levels' kinds, bits below depth
    uint64_t local = 0;       // mode, depth and the mode's own fields
    bool operator==(const Key& o) const { return containers == o.containers && local == o.local; }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.containers, k.local);
    }
  };
  Key StateKey() const;

 private:
  enum class Mode : uint8_t {
    kStart,          // before the top-level object
    kObjectOpen,     // after '{': a key or '}'
    kKey,            // after ',' in an object: a key
    kColon,          // after a key: ':'
    kValue,          // after ':' or ',' in an array: a value
    kArrayOpen,      // after '[': a value or ']'
    kAfterValue,     // after a value: ',' or the container's closing bracket
    kString,         // inside a string (string_)
    kNumber,         // inside a number (number_)
    kLiteral,        // true / false / null (aux_: letters matched, literal_ which)
    kDone,           // the object is closed
  };
  enum class Gap : uint8_t { kNone, kSpace, kNewline };

  bool InObject() const { return depth_ > 0 && ((containers_ >> (depth_ - 1)) & 1u) != 0; }
  bool Whitespace(uint8_t byte);
  bool Open(bool object);
  bool Close(uint8_t byte);
  bool StartValue(uint8_t byte);
  void EndValue();
  bool AfterNumber(uint8_t byte);  // a byte that ends a number

  Mode mode_ = Mode::kStart;
  Gap gap_ = Gap::kNone;
  uint8_t indent_ = 0;      // spaces / tabs after the gap's newline
  uint8_t aux_ = 0;         // kLiteral: letters matched
  uint8_t literal_ = 0;     // 0 true, 1 false, 2 null
  JsonStringLexer string_;
  JsonNumberLexer number_;
  bool in_key_ = false;     // the string being read is an object key
  uint8_t depth_ = 0;
  uint64_t containers_ = 0;  // bit d: level d + 1 is an object (else an array)
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_ACCEPTOR_H_
