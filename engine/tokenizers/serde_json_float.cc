#include "engine/tokenizers/serde_json_float.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>

namespace attnserve {
namespace {

// serde_json's POW10: 1e0 .. 1e308, each the correctly rounded double.
const std::array<double, 309>& Pow10() {
  static const std::array<double, 309> table = [] {
    std::array<double, 309> t{};
    for (int i = 0; i < 309; ++i) {
      char text[8];
      text[0] = '1';
      text[1] = 'e';
      auto [end, ec] = std::to_chars(text + 2, text + sizeof(text), i);
      (void)ec;
      std::from_chars(text, end, t[static_cast<size_t>(i)]);
    }
    return t;
  }();
  return table;
}

}  // namespace

double SerdeJsonFloat(double correctly_rounded) {
  if (!std::isfinite(correctly_rounded)) return correctly_rounded;
  // Shortest round-trip digits, as "d.ddde-x" (scientific keeps the parse
  // below to one form).
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof(text), correctly_rounded, std::chars_format::scientific);
  if (ec != std::errc()) return correctly_rounded;
  const char* p = text;
  const bool negative = *p == '-';
  if (negative) ++p;
  uint64_t significand = 0;
  int exponent = 0;
  bool seen_point = false;
  for (; p < end && *p != 'e'; ++p) {
    if (*p == '.') {
      seen_point = true;
      continue;
    }
    // At most 17 significant digits: the u64 never overflows.
    significand = significand * 10 + static_cast<uint64_t>(*p - '0');
    if (seen_point) --exponent;
  }
  if (p < end) {  // "e+dd" / "e-ddd"; to_chars writes no terminating NUL
    ++p;
    const bool negative_exponent = p < end && *p == '-';
    if (p < end && (*p == '+' || *p == '-')) ++p;
    int written = 0;
    std::from_chars(p, end, written);
    exponent += negative_exponent ? -written : written;
  }
  // An integer (below 2^53) comes out exact either way.
  if (correctly_rounded == std::trunc(correctly_rounded) && std::abs(correctly_rounded) < 9007199254740992.0) {
    return correctly_rounded;
  }
  // serde_json's f64_from_parts.
  double f = static_cast<double>(significand);
  const std::array<double, 309>& pow10 = Pow10();
  while (true) {
    const int magnitude = std::abs(exponent);
    if (magnitude < 309) {
      if (exponent >= 0) {
        f *= pow10[static_cast<size_t>(magnitude)];
      } else {
        f /= pow10[static_cast<size_t>(magnitude)];
      }
      break;
    }
    if (f == 0.0 || exponent >= 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

}  // namespace attnserve
