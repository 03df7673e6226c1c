#include "engine/ops/activation.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

// In double, in forms that keep the tails exact (0.5 (1 + tanh y) = σ(2y),
// 0.5 (1 + erf z) = 0.5 erfc(-z)), so the far-negative side is compared
// with its true tiny values, not with a rounded 0.
double Reference(Activation act, double v) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    case Activation::kGeluTanh:
      return v / (1 + std::exp(-2 * std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case Activation::kSilu: return v / (1 + std::exp(-v));
    case Activation::kRelu: return v > 0 ? v : 0;
  }
  return v;
}

std::string Name(Activation act) {
  switch (act) {
    case Activation::kNone: return "none";
    case Activation::kGeluErf: return "gelu_erf";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSilu: return "silu";
    case Activation::kRelu: return "relu";
  }
  return "?";
}

// -30 .. 30 in steps of 1/64 (both tails, the region around 0 where the
// sigmoid and erf forms switch branches), then a few large magnitudes.
std::vector<float> Inputs() {
  std::vector<float> x;
  for (int i = -30 * 64; i <= 30 * 64; ++i) x.push_back(static_cast<float>(i) / 64.0f);
  for (float v : {1e-7f, -1e-7f, 1e-3f, -1e-3f, 85.0f, -85.0f, 88.0f, -88.0f, 1e4f, -1e4f, 3e38f, -3e38f})
    x.push_back(v);
  x.push_back(0.3f);  // 12 extra values: the total is not a multiple of 8 (the tail path)
  return x;
}

// The error a careful f32 implementation can have: a few ulps of the result
// relative; for GELU-tanh 1e-5, since its exp argument 2y reaches -87 before
// the result underflows and the f32 rounding of y (6e-8 relative) becomes
// 87 × 6e-8 ≈ 5e-6 of the result; for GELU-erf plus the 1.5e-7 absolute
// error of the erf approximation scaled by |v| / 2.
double Tolerance(Activation act, double v, double want) {
  const double rel = (act == Activation::kGeluTanh ? 1e-5 : 1e-6) * std::fabs(want) + 1e-30;
  return act == Activation::kGeluErf ? rel + 1e-7 * std::fabs(v) : rel;
}

class ActivationTest : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationTest, VectorAndScalarMatchDoubleReference) {
  const Activation act = GetParam();
  const std::vector<float> x = Inputs();
  std::vector<float> vec = x, scalar = x;
  ApplyActivation(act, vec.data(), static_cast<int64_t>(vec.size()));
  ApplyActivationScalar(act, scalar.data(), static_cast<int64_t>(scalar.size()));
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = Reference(act, x[i]);
    ASSERT_NEAR(vec[i], want, Tolerance(act, x[i], want)) << Name(act) << "(" << x[i] << ") vector";
    // The scalar forms (1 + tanh, 1 + erf) round the far-negative tail to
    // 0: an absolute 1e-7 on top.
    ASSERT_NEAR(scalar[i], want, Tolerance(act, x[i], want) + 1e-7) << Name(act) << "(" << x[i] << ") scalar";
    worst = std::max(worst, std::fabs(vec[i] - want));
  }
  RecordProperty("max_abs_error_" + Name(act), std::to_string(worst));
}

TEST_P(ActivationTest, NanStaysNanAndLengthsAreExact) {
  const Activation act = GetParam();
  for (int n : {0, 1, 7, 8, 9, 31, 32, 33}) {
    std::vector<float> x(n + 2, 5.0f);
    const float guard = 123.0f;
    x[n] = guard;
    x[n + 1] = guard;
    if (n > 0) x[n - 1] = std::numeric_limits<float>::quiet_NaN();
    ApplyActivation(act, x.data(), n);
    EXPECT_EQ(x[n], guard) << Name(act) << " wrote past n = " << n;
    EXPECT_EQ(x[n + 1], guard);
    if (n > 0 && act != Activation::kRelu) {
      EXPECT_TRUE(std::isnan(x[n - 1])) << Name(act) << " n=" << n;
    }
    for (int i = 0; i + 1 < n; ++i) EXPECT_NEAR(x[i], Reference(act, 5.0), 1e-5) << Name(act);
  }
}

INSTANTIATE_TEST_SUITE_P(All, ActivationTest,
                         ::testing::Values(Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu,
                                           Activation::kRelu),
                         [](const auto& info) { return Name(info.param); });

TEST(SiluMulTest, MatchesReferenceAndMayAliasItsInputs) {
  const std::vector<float> gate = Inputs();
  std::vector<float> up(gate.size());
  for (size_t i = 0; i < up.size(); ++i) up[i] = 0.5f + static_cast<float>(i % 7) * 0.25f;
  std::vector<float> out(gate.size()), aliased = gate;
  SiluMul(gate.data(), up.data(), static_cast<int64_t>(gate.size()), out.data());
  SiluMul(aliased.data(), up.data(), static_cast<int64_t>(gate.size()), aliased.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double want = Reference(Activation::kSilu, gate[i]) * up[i];
    ASSERT_NEAR(out[i], want, 1e-6 * std::fabs(want) + 1e-30) << "silu(" << gate[i] << ") * " << up[i];
    ASSERT_EQ(aliased[i], out[i]);
  }
}

}  // namespace
}  // namespace attnserve
