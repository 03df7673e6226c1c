// Bounded integers and numbers read a byte at a time (number_range.h).
#include "engine/sampling/number_range.h"

#include <string>
#include <utility>

#include "engine/sampling/json_lexer.h"

namespace attnserve {
namespace {

constexpr uint8_t kNegative = 1, kDigits = 2, kDot = 4, kCountShift = 3, kCountMask = 7 << kCountShift;
// Past every bound: integers' are within int64, numbers' within 10^18 grid
// units. A magnitude at or above a tenth of this saturates with its next
// digit.
constexpr uint64_t kHugeMagnitude = 10'000'000'000'000'000'000u;
// Beyond every magnitude a reading can reach, for a side without a bound.
constexpr __int128 kFar = __int128{1} << 100;

__int128 Pow10(int n) {
  __int128 p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

int FractionDigits(uint8_t flags) { return (flags & kCountMask) >> kCountShift; }

// A range's bounds (kFar where a side has none) and unit, wide.
struct Bounds {
  __int128 lo, hi, unit;
};

Bounds BoundsOf(const NumberRange& r) {
  return {r.has_min ? r.min : -kFar, r.has_max ? r.max : kFar, r.decimal ? kNumberGridUnit : 1};
}

// The magnitudes a text can reach from a reading that takes no more integer
// digits (after a '.', or an integer part "0"): first..last.
std::pair<__int128, __int128> ClosedSpan(const Bounds& b, uint64_t value, uint8_t flags) {
  // "n." needs a digit: anything to n.999999; "n.ddd": n.ddd to n.ddd999;
  // "0": 0 and any fraction.
  if (!(flags & kDot)) return {0, b.unit - 1};
  const int count = FractionDigits(flags);
  const __int128 v = value;
  return {v, v + (count == 0 ? b.unit : Pow10(kMaxFractionDigits - count)) - 1};
}

// Whether some text going on from this reading (or ending here, `whole`)
// has a value within the range.
bool Reachable(const NumberRange& r, uint64_t value, uint8_t flags, bool whole) {
  const bool negative = flags & kNegative;
  if (negative && !r.negative_sign) return false;
  // "-" alone: a negative-signed value (or "-0.0", zero) lies in range,
  // since the lower bound is below zero and the range is not empty.
  if (!(flags & kDigits)) return true;
  const Bounds b = BoundsOf(r);
  auto meets = [&](__int128 first, __int128 last) {  // magnitudes first..last with the sign
    const __int128 vlo = negative ? -last : first, vhi = negative ? -first : last;
    return vlo <= b.hi && vhi >= b.lo;
  };
  const __int128 v = value;
  if (whole) return !(negative && value == 0 && !(flags & kDot)) && meets(v, v);  // never a bare "-0"
  if ((flags & kDot) || value == 0) {
    const auto [first, last] = ClosedSpan(b, value, flags);
    return meets(first, last);
  }
  // k more integer digits (and any fraction): magnitudes v*10^k up to
  // (v + unit)*10^k - 1.
  for (__int128 span = 1;; span *= 10) {
    const __int128 a = v * span;
    if (meets(a, a + b.unit * span - 1)) return true;
    if (a > (__int128{1} << 70)) return false;
  }
}

}  // namespace

std::optional<__int128> ScaledDecimal(std::string_view text, int scale_digits, bool round_up) {
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;
  int exponent = scale_digits;
  bool dot = false;
  for (; i < text.size() && (json_lexer_internal::IsDigit(static_cast<uint8_t>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (dot) return std::nullopt;
      dot = true;
      continue;
    }
    if (dot) --exponent;
    if (!digits.empty() || text[i] != '0') digits += text[i];
  }
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') return std::nullopt;
    ++i;
    int sign = 1;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) sign = text[i++] == '-' ? -1 : 1;
    if (i == text.size()) return std::nullopt;
    int e = 0;
    for (; i < text.size(); ++i) {
      if (!json_lexer_internal::IsDigit(static_cast<uint8_t>(text[i]))) return std::nullopt;
      if (e < 100000) e = e * 10 + (text[i] - '0');
    }
    exponent += sign * e;
  }
  if (digits.empty()) return __int128{0};
  // digits * 10^exponent, beyond ±10^30 refused.
  if (static_cast<int>(digits.size()) > 31 || static_cast<int>(digits.size()) + exponent > 31) return std::nullopt;
  __int128 mantissa = 0;
  for (char c : digits) mantissa = mantissa * 10 + (c - '0');
  __int128 magnitude;
  bool inexact = false;
  if (exponent >= 0) {
    magnitude = mantissa * Pow10(exponent);
  } else if (-exponent > 31) {  // below one unit (the mantissa has at most 31 digits)
    magnitude = 0;
    inexact = true;
  } else {
    const __int128 divisor = Pow10(-exponent);
    magnitude = mantissa / divisor;
    inexact = mantissa % divisor != 0;
  }
  if (magnitude > Pow10(30)) return std::nullopt;
  // Rounding a magnitude away from zero rounds a negative value down.
  if (inexact && round_up != negative) ++magnitude;
  return negative ? -magnitude : magnitude;
}

bool StartBoundedNumber(const NumberRange& range, uint8_t byte, uint64_t& value, uint8_t& flags) {
  flags = byte == '-' ? kNegative : kDigits;
  value = byte == '-' ? 0 : static_cast<uint64_t>(byte - '0') * (range.decimal ? kNumberGridUnit : 1);
  return Reachable(range, value, flags, false);
}

bool FeedBoundedNumber(const NumberRange& range, uint8_t byte, uint64_t& value, uint8_t& flags) {
  if (byte == '.') {
    flags |= kDot;
  } else if (json_lexer_internal::IsDigit(byte)) {
    const uint64_t digit = byte - '0';
    if (flags & kDot) {
      const int count = FractionDigits(flags);
      if (count == kMaxFractionDigits) return false;
      value += digit * static_cast<uint64_t>(Pow10(kMaxFractionDigits - 1 - count));
      flags = static_cast<uint8_t>((flags & ~kCountMask) | (count + 1) << kCountShift);
    } else {
      value = value >= kHugeMagnitude / 10 ? kHugeMagnitude
                                           : value * 10 + digit * (range.decimal ? kNumberGridUnit : 1);
      flags |= kDigits;
    }
  } else {
    return false;  // an exponent: a bounded number has none
  }
  return Reachable(range, value, flags, false);
}

bool BoundedNumberEnds(const NumberRange& range, uint64_t value, uint8_t flags) {
  return Reachable(range, value, flags, true);
}

bool BoundedNumberIsFree(const NumberRange& r, uint64_t value, uint8_t flags) {
  const bool negative = flags & kNegative;
  const Bounds b = BoundsOf(r);
  // "-": every negative value may follow (and a number's "-0.0", zero).
  if (!(flags & kDigits)) return !r.has_min && b.hi >= (r.decimal ? 0 : -1);
  if ((flags & kDot) || value == 0) {
    const auto [first, last] = ClosedSpan(b, value, flags);
    const __int128 vlo = negative ? -last : first, vhi = negative ? -first : last;
    return vlo >= b.lo && vhi <= b.hi;
  }
  // Integer digits that more may follow: magnitudes from v up, without end.
  const __int128 v = value;
  return negative ? !r.has_min && -v <= b.hi : !r.has_max && v >= b.lo;
}

bool NumberRangeTakes(const NumberRange& range, std::string_view text) {
  if (text.empty()) return false;
  JsonNumberLexer lexer(!range.decimal);
  uint64_t value = 0;
  uint8_t flags = 0;
  const uint8_t first = static_cast<uint8_t>(text[0]);
  if (lexer.Start(first) == LexStep::kRefused || !StartBoundedNumber(range, first, value, flags)) return false;
  for (size_t i = 1; i < text.size(); ++i) {
    const uint8_t byte = static_cast<uint8_t>(text[i]);
    if (lexer.Feed(byte) != LexStep::kMore || !FeedBoundedNumber(range, byte, value, flags)) return false;
  }
  return lexer.Feed(',') == LexStep::kDone && BoundedNumberEnds(range, value, flags);
}

}  // namespace attnserve
