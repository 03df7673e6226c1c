// Test helpers for attention: random tensors and tolerant comparisons.
#ifndef ATTNSERVE_TESTS_ENGINE_ATTENTION_ATTENTION_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_ATTENTION_ATTENTION_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/core/half.h"
#include "gtest/gtest.h"

namespace attnserve::testing_util {

inline std::vector<float> RandomVec(int64_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  ConvertF32ToBf16(v.data(), out.data(), static_cast<int64_t>(v.size()));
  return out;
}

// Max of |got - want| / (atol + rtol * |want|) must stay <= 1.
inline ::testing::AssertionResult AllClose(const float* got, const float* want, int64_t n,
                                           double atol, double rtol) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(got[i]) || std::isnan(want[i]) ||
        std::fabs(double(got[i]) - want[i]) > atol + rtol * std::fabs(double(want[i]))) {
      return ::testing::AssertionFailure()
             << "mismatch at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult AllClose(const std::vector<float>& got,
                                           const std::vector<float>& want, double atol,
                                           double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  return AllClose(got.data(), want.data(), static_cast<int64_t>(got.size()), atol, rtol);
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_ATTENTION_ATTENTION_TEST_UTIL_H_
