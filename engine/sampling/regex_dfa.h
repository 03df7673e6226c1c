// Regular expressions as byte-level DFAs: for JSON schema mode's "pattern"
// (a string's text must match the whole pattern, anchored at both ends as
// xgrammar reads a pattern, written without escapes) and for a whole output
// held to a regex.
//
// Syntax (the common subset of ECMA-262 and Python's re): literals (UTF-8),
// "." (any allowed character), classes [a-z] [^...] with \d \w \s inside,
// the escapes \d \D \w \W \s \S \n \t \r \f \v \xHH \uHHHH and escaped
// punctuation, groups (...) (?:...) (?<name>...) (?P<name>...),
// alternation |, the quantifiers * + ? {n} {n,} {n,m} (a lazy "?" after one
// changes nothing here: the language is the same), and ^ / $ at the very
// start / end. Refused with the reason: lookaround, backreferences, \b and
// other anchors, possessive quantifiers, flags.
//
// Compiled once per schema: a Thompson NFA over bytes (each code point
// range split into UTF-8 byte sequences), then subset construction over
// byte classes, then every state from which no accepting state can be
// reached removed, so a state that exists can always still match: a mask
// built from it never leads into a dead end.
#ifndef ATTNSERVE_ENGINE_SAMPLING_REGEX_DFA_H_
#define ATTNSERVE_ENGINE_SAMPLING_REGEX_DFA_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace attnserve {

inline constexpr int kMaxRegexBytes = 4096;
inline constexpr int kMaxRegexNfaStates = 20000;
inline constexpr int kMaxRegexDfaStates = 4096;
// NFA states visited while building the DFA (about 20 ms of one core).
inline constexpr int64_t kMaxRegexWork = 10'000'000;

struct RegexDfa {
  std::array<uint8_t, 256> byte_class{};  // byte -> its class
  int num_classes = 0;
  int start = 0;
  std::vector<int32_t> next;  // state * num_classes + class -> state, or -1
  std::vector<uint8_t> accepting;
  std::vector<uint8_t> has_next;  // some byte leads on from the state
  // Characters (not bytes) still to write from a state to a match: the
  // fewest, and the most (-1: no bound). A state inside a character has
  // counted that character already.
  std::vector<int32_t> min_chars, max_chars;
  int32_t max_min_chars = 0;  // the largest min_chars of a state that can match
  // Every state's match lengths form an interval [min_chars, max_chars]
  // (no gaps, as (ab)+'s 2, 4, 6... have), so a reader holding a string
  // to minLength and maxLength at once never reaches a dead end by
  // checking those two numbers.
  bool lengths_are_intervals = true;

  int Step(int state, uint8_t byte) const { return next[state * num_classes + byte_class[byte]]; }
  int64_t bytes() const {
    return static_cast<int64_t>(next.size() * sizeof(int32_t) + accepting.size() + has_next.size() +
                                (min_chars.size() + max_chars.size()) * sizeof(int32_t) + sizeof(*this));
  }
};

// `pattern` as a DFA over the UTF-8 bytes of its matches, every character
// of which lies in [0x20, 0x10FFFF] but '"' and '\\' (a JSON string's
// characters that need no escape) and is no surrogate. INVALID_ARGUMENT
// with the reason and where in the pattern.
absl::StatusOr<RegexDfa> CompileJsonStringRegex(std::string_view pattern);

// `pattern` over the bytes between a JSON string's quotes as written,
// escapes included: '"' and '\\' are bytes like any other here, so the
// pattern itself must keep every '\\' the start of a valid escape and every
// '"' right after one. Only for hand-written patterns (the "format"s whose
// grammar has escapes, as email's quoted local part). A state with a '"'
// transition is then never accepting, so a reader can tell an escaped quote
// from the closing one by asking the automaton.
absl::StatusOr<RegexDfa> CompileEscapedJsonStringRegex(std::string_view pattern);

// `pattern` over any text: every character but surrogates ("." any, a
// newline too, as xgrammar reads it), for a whole output held to a regex
// (vLLM's guided_regex, TGI's regex grammar).
absl::StatusOr<RegexDfa> CompileTextRegex(std::string_view pattern);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_REGEX_DFA_H_
