#include "engine/sampling/logits_math.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double ReferenceLse(const std::vector<float>& v) {
  double mx = -INFINITY;
  for (float x : v) mx = std::max(mx, static_cast<double>(x));
  long double sum = 0;
  for (float x : v) sum += std::exp(static_cast<long double>(x) - mx);
  return mx + static_cast<double>(std::log(sum));
}

std::vector<float> RandomLogits(int n, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(LogitsMathTest, LogSumExpMatchesLongDoubleOverRealVocabularySizes) {
  // 32000 (Llama 2), 49152 (SmolLM), 151936 (Qwen2), odd sizes for the tail.
  for (int n : {1, 7, 8, 9, 512, 1000, 32000, 49152, 151936}) {
    for (float spread : {0.5f, 3.0f, 20.0f}) {
      const std::vector<float> v = RandomLogits(n, spread, static_cast<uint32_t>(n));
      const double want = ReferenceLse(v);
      EXPECT_NEAR(LogSumExpLogits(v), want, 2e-6 * std::max(1.0, std::fabs(want)))
          << "n=" << n << " spread=" << spread;
      EXPECT_NEAR(LogSumExpLogitsScalar(v), want, 1e-9 * std::max(1.0, std::fabs(want)));
    }
  }
}

TEST(LogitsMathTest, LogSumExpEdgeCases) {
  EXPECT_EQ(LogSumExpLogits({}), -kInf);
  EXPECT_EQ(LogSumExpLogits(std::vector<float>(17, -kInf)), -kInf);
  std::vector<float> with_inf(20, 1.0f);
  with_inf[13] = kInf;
  EXPECT_EQ(LogSumExpLogits(with_inf), kInf);
  // Masked (-inf) entries add nothing; NaN entries are ignored.
  std::vector<float> v(21, -kInf);
  v[3] = 2.0f;
  v[18] = 2.0f;
  v[20] = kNaN;
  EXPECT_NEAR(LogSumExpLogits(v), 2.0 + std::log(2.0), 1e-6);
  EXPECT_NEAR(LogSumExpLogitsScalar(v), 2.0 + std::log(2.0), 1e-12);
}

TEST(LogitsMathTest, ArgmaxIsTheFirstLargestLikeTheScalarLoop) {
  for (int n : {1, 5, 8, 9, 31, 49152}) {
    std::vector<float> v = RandomLogits(n, 4.0f, 7u + n);
    EXPECT_EQ(ArgmaxLogit(v), ArgmaxLogitScalar(v)) << n;
    // Ties: the first index wins, wherever it falls in a vector.
    if (n >= 9) {
      v[n - 1] = 100.0f;
      v[n / 2] = 100.0f;
      v[3] = 100.0f;
      EXPECT_EQ(ArgmaxLogit(v), 3) << n;
      EXPECT_EQ(ArgmaxLogitScalar(v), 3) << n;
      v[n - 1] = 101.0f;
      EXPECT_EQ(ArgmaxLogit(v), n - 1) << n;
    }
  }
  EXPECT_EQ(ArgmaxLogit(std::vector<float>(40, -kInf)), 0);
  std::vector<float> nan_first(40, 1.0f);
  nan_first[0] = kNaN;
  nan_first[30] = 5.0f;
  EXPECT_EQ(ArgmaxLogit(nan_first), ArgmaxLogitScalar(nan_first));
  std::vector<float> nan_later(40, 1.0f);
  nan_later[10] = kNaN;
  nan_later[30] = 5.0f;
  EXPECT_EQ(ArgmaxLogit(nan_later), 30);
  EXPECT_EQ(ArgmaxLogitScalar(nan_later), 30);
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

TEST(LogitsMathTest, ExpShiftedIsWithinF32OfDoubleAndDropsInfAndNaN) {
  for (int n : {1, 7, 8, 9, 1000, 32000}) {
    std::vector<float> v = RandomLogits(n, 3.0f, static_cast<uint32_t>(n) + 1);
    if (n > 9) {
      v[3] = -kInf;  // a token dropped by top-k
      v[n - 2] = kNaN;
    }
    float mx = -kInf;
    for (float x : v) mx = std::isnan(x) ? mx : std::max(mx, x);
    std::vector<double> got(n), want(n);
    const double sum = ExpShiftedLogits(v, mx, absl::MakeSpan(got));
    const double want_sum = ExpShiftedLogitsScalar(v, mx, absl::MakeSpan(want));
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      // The exp's 3e-7, plus v[i] - mx rounded to f32 (half an ulp of the
      // difference, which exp turns into a relative error).
      const double shift = std::isfinite(v[i]) ? std::fabs(static_cast<double>(v[i]) - mx) : 0.0;
      EXPECT_NEAR(got[i], want[i], (3e-7 + 6e-8 * shift) * want[i] + 1e-30) << "n=" << n << " i=" << i;
      total += got[i];
    }
    EXPECT_NEAR(sum, total, 1e-12 * total);
    EXPECT_NEAR(sum, want_sum, 2e-6 * want_sum);
    if (n > 9) {
      EXPECT_EQ(got[3], 0.0);
      EXPECT_EQ(got[n - 2], 0.0);
      EXPECT_EQ(want[3], 0.0);
    }
  }
}

}  // namespace
}  // namespace attnserve
