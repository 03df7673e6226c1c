#include "engine/ops/bf16_rows.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/core/half.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The vector rounding equals FloatToBf16 bit for bit: random values over the
// whole exponent range, rounding ties both ways, subnormals, infinities and
// NaNs (which stay NaN), at lengths that leave every tail size and cross the
// parallel threshold.
TEST(RoundRowsToBf16Test, BitExactWithTheScalarRounding) {
  std::mt19937 rng(3);
  std::vector<float> src(300'017);
  for (float& v : src) v = FromBits(static_cast<uint32_t>(rng()));
  const float specials[] = {0.0f, -0.0f, 1.0f, FromBits(0x3f808000u) /* tie, even stays */,
                            FromBits(0x3f818000u) /* tie, odd rounds up */, FromBits(0x00000001u),
                            FromBits(0x807fffffu), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            FromBits(0x7f800001u) /* signalling NaN */, FromBits(0x7f7fffffu) /* max, rounds to inf */};
  for (size_t i = 0; i < std::size(specials); ++i) src[i * 7] = specials[i];
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{1000},
                    static_cast<int64_t>(src.size())}) {
    std::vector<uint16_t> got(n + 1, 0xabcd), want(n + 1, 0xabcd);
    RoundRowsToBf16(src.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i) want[i] = FloatToBf16(src[i]);
    ASSERT_EQ(got, want) << "n = " << n;  // and nothing past n written
  }
  std::vector<uint16_t> nan(1);
  RoundRowsToBf16(&specials[10], nan.data(), 1);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(nan[0])));
}

}  // namespace
}  // namespace attnserve
