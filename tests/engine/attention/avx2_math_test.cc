// The vectorised exp of the softmax against std::exp (double) over its whole
// domain (x <= 0), including the values masking relies on.
#include "engine/attention/avx2_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/attention/flash_kernel.h"
#include "engine/core/cpu_features.h"
#include "gtest/gtest.h"

namespace attnserve::attention_internal {
namespace {

__attribute__((target("avx2,fma"))) std::vector<float> Exp(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 8) {
    _mm256_storeu_ps(y.data() + i, ExpNonPositive8(_mm256_loadu_ps(x.data() + i)));
  }
  return y;
}

TEST(Avx2MathTest, ExpNonPositiveRelativeErrorBelow3e7) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU without AVX2+FMA";
  std::vector<float> x;
  for (int i = 0; i <= 800000; ++i) x.push_back(-87.0f * static_cast<float>(i) / 800000);
  while (x.size() % 8) x.push_back(0.0f);
  const std::vector<float> y = Exp(x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::fabs(y[i] - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
}

TEST(Avx2MathTest, ExpNonPositiveEdgeValues) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU without AVX2+FMA";
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, -0.0f, -inf, std::nanf(""), -87.5f, -1000.0f, -1e30f, -1.0f};
  const std::vector<float> y = Exp(x);
  EXPECT_EQ(y[0], 1.0f);  // the online softmax skips rescaling when alpha == 1
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 0.0f);  // masked keys contribute exactly nothing
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 0.0f);
  EXPECT_NEAR(y[7], std::exp(-1.0), 3e-7 * std::exp(-1.0));
}

}  // namespace
}  // namespace attnserve::attention_internal
