#include "engine/core/half.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

TEST(Bf16Test, ExactValuesRoundTrip) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.0f, 0.5f, 65536.0f, 1.5f}) {
    EXPECT_EQ(Bf16ToFloat(FloatToBf16(f)), f) << f;
  }
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
}

TEST(Bf16Test, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 (even) and 1.0078125 (odd).
  EXPECT_EQ(FloatToBf16(1.0f + 1.0f / 256), 0x3f80);
  // 1.0078125 + 2^-8 is halfway between 0x3f81 (odd) and 0x3f82 (even).
  EXPECT_EQ(FloatToBf16(1.0078125f + 1.0f / 256), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToBf16(1.0f + 1.0f / 256 + 1.0f / 65536), 0x3f81);
}

TEST(Bf16Test, NanStaysNanInfStaysInf) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(nan))));
  // A signalling NaN whose payload sits only in the low bits must not become Inf.
  float snan = BitsToFloat(0x7f800001u);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(snan))));
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(inf)), inf);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-inf)), -inf);
}

TEST(Bf16Test, RelativeErrorBounded) {
  for (float f = -1000.0f; f < 1000.0f; f += 0.37f) {
    float r = Bf16ToFloat(FloatToBf16(f));
    EXPECT_LE(std::fabs(r - f), std::fabs(f) * (1.0f / 256) + 1e-30f) << f;
  }
}

TEST(F16Test, KnownEncodings) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToF16(1e6f), 0x7c00);                   // overflow -> Inf
  EXPECT_EQ(FloatToF16(5.9604645e-8f), 0x0001);          // smallest subnormal
  EXPECT_EQ(F16ToFloat(0x0001), 5.9604645e-8f);
  EXPECT_EQ(F16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(F16ToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(F16ToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(F16ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::nanf("")))));
}

TEST(F16Test, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00) continue;  // Inf/NaN
    EXPECT_EQ(FloatToF16(F16ToFloat(bits)), bits) << std::hex << h;
  }
}

TEST(HalfTest, ArrayConversions) {
  std::vector<float> src = {1.0f, -0.5f, 3.0f, 1024.0f};
  std::vector<uint16_t> mid(src.size());
  std::vector<float> back(src.size());
  ConvertF32ToBf16(src.data(), mid.data(), 4);
  ConvertBf16ToF32(mid.data(), back.data(), 4);
  EXPECT_EQ(back, src);
  ConvertF32ToF16(src.data(), mid.data(), 4);
  ConvertF16ToF32(mid.data(), back.data(), 4);
  EXPECT_EQ(back, src);
}

}  // namespace
}  // namespace attnserve
