// A bounded integer's or number's text, read a byte at a time against its
// bounds (JSON schema's minimum, maximum, exclusiveMinimum and
// exclusiveMaximum): whether the bytes so far can still end in range, so a
// token mask never leads into a number that cannot be finished.
//
// The language is xgrammar 0.2.9's for a bounded value:
//   integer: "0" or -?[1-9][0-9]* (no "-0");
//   number:  -?(0|[1-9][0-9]*)(\.[0-9]{1,6})?: no exponent, at most six
//            fractional digits (so a small model cannot run on writing
//            digits), no bare "-0"; a leading "-" only where the lower
//            bound is below zero (then "-0.0" is zero).
// Every value of a number is a multiple of 10^-6, so bounds are kept as
// integers in those units ("grid" units), rounded inwards: exact.
#ifndef ATTNSERVE_ENGINE_SAMPLING_NUMBER_RANGE_H_
#define ATTNSERVE_ENGINE_SAMPLING_NUMBER_RANGE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace attnserve {

inline constexpr int kMaxFractionDigits = 6;
inline constexpr int64_t kNumberGridUnit = 1'000'000;  // 10^kMaxFractionDigits
// A bounded number's bounds lie within ±kMaxNumberBound (so that its value
// in grid units, and one more digit, fit a uint64).
inline constexpr int64_t kMaxNumberBound = 1'000'000'000'000;

struct NumberRange {
  bool decimal = false;  // a number (grid units of 10^-6) rather than an integer
  bool has_min = false, has_max = false;
  int64_t min = 0, max = 0;  // inclusive, in grid units for a number
  // Whether the text may begin with '-': the lower bound is below zero (a
  // number's lower bound as written, not rounded: -1e-9 allows "-0.0").
  bool negative_sign = true;
  bool bounded() const { return has_min || has_max; }
};

// x * 10^scale_digits rounded up or down, exactly, where `text` is a JSON
// number (as JSON or as std::to_chars writes a double: "-1.5e-07");
// nullopt where the text is not a number or the result is beyond ±10^30.
std::optional<__int128> ScaledDecimal(std::string_view text, int scale_digits, bool round_up);

// The reading so far: `value` is the magnitude in the range's units
// (saturating past every bound), `flags` the sign, whether a digit and a
// '.' were written and how many fractional digits. Both start at zero; the
// acceptor keeps them in its own fields, since its state is copied per byte.
// Each returns whether the text can still end in range (Ends: ends here).
// The caller's JsonNumberLexer has already taken the byte (so the syntax
// it knows is not checked again): Start is given the first byte, Feed every
// byte the lexer took after it.
bool StartBoundedNumber(const NumberRange& range, uint8_t byte, uint64_t& value, uint8_t& flags);
bool FeedBoundedNumber(const NumberRange& range, uint8_t byte, uint64_t& value, uint8_t& flags);
bool BoundedNumberEnds(const NumberRange& range, uint64_t value, uint8_t flags);

// Whether every text the syntax lets go on from this reading is in range:
// the bounds refuse nothing more, so what may follow (a token mask) does
// not depend on the value, only on the syntax state and `flags`.
bool BoundedNumberIsFree(const NumberRange& range, uint64_t value, uint8_t flags);

// Whether a whole JSON number's text (an enum or const value as written) is
// in the range's language: what an alternative with this range would read.
bool NumberRangeTakes(const NumberRange& range, std::string_view text);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_NUMBER_RANGE_H_
