#include "engine/sampling/logits_math.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/avx2_exp.h"
#include "engine/core/cpu_features.h"

namespace attnserve {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Largest non-NaN value (-inf if none): max_ps(x, acc) returns acc when x is NaN.
__attribute__((target("avx2,fma"))) float MaxAvx2(const float* v, int64_t n) {
  __m256 acc = _mm256_set1_ps(kNegInf);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(v + i), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float mx = kNegInf;
  for (float x : lanes) mx = std::max(mx, x);
  for (; i < n; ++i) mx = std::max(mx, v[i]);  // std::max(mx, NaN) keeps mx
  return mx;
}

__attribute__((target("avx2,fma"))) int64_t FindAvx2(const float* v, int64_t n, float value) {
  const __m256 want = _mm256_set1_ps(value);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + i), want, _CMP_EQ_OQ));
    if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i) {
    if (v[i] == value) return i;
  }
  return 0;
}

// sum exp(v[i] - mx) with every v[i] - mx <= 0 (NaN terms are 0).
__attribute__((target("avx2,fma"))) double SumExpAvx2(const float* v, int64_t n, float mx) {
  constexpr int64_t kBlock = 1024;  // floats summed in f32 lanes before going to double
  const __m256 m = _mm256_set1_ps(mx);
  double total = 0.0;
  int64_t i = 0;
  while (i + 8 <= n) {
    const int64_t end = std::min(n, i + kBlock) / 8 * 8;
    __m256 acc = _mm256_setzero_ps();
    for (; i < end; i += 8)
      acc = _mm256_add_ps(acc, avx2::ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(v + i), m)));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (float x : lanes) total += x;
  }
  for (; i < n; ++i) {
    if (!std::isnan(v[i])) total += std::exp(static_cast<double>(v[i]) - mx);
  }
  return total;
}

__attribute__((target("avx2,fma"))) double ExpShiftedAvx2(const float* v, int64_t n, float mx, double* out) {
  const __m256 m = _mm256_set1_ps(mx);
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = avx2::ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(v + i), m));
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(e));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1));
    _mm256_storeu_pd(out + i, lo);
    _mm256_storeu_pd(out + i + 4, hi);
    acc_lo = _mm256_add_pd(acc_lo, lo);
    acc_hi = _mm256_add_pd(acc_hi, hi);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc_lo, acc_hi));
  double total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) {
    out[i] = std::isnan(v[i]) ? 0.0 : std::exp(static_cast<double>(v[i]) - mx);
    total += out[i];
  }
  return total;
}

}  // namespace

double ExpShiftedLogitsScalar(absl::Span<const float> v, float mx, absl::Span<double> out) {
  double total = 0.0;
  for (size_t i = 0; i < v.size(); ++i) {
    out[i] = std::isnan(v[i]) ? 0.0 : std::exp(static_cast<double>(v[i]) - mx);
    total += out[i];
  }
  return total;
}

double ExpShiftedLogits(absl::Span<const float> v, float mx, absl::Span<double> out) {
  if (!CpuHasAvx2Fma()) return ExpShiftedLogitsScalar(v, mx, out);
  return ExpShiftedAvx2(v.data(), static_cast<int64_t>(v.size()), mx, out.data());
}

int32_t ArgmaxLogitScalar(absl::Span<const float> v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

double LogSumExpLogitsScalar(absl::Span<const float> v) {
  float mx = kNegInf;
  for (float x : v) mx = std::max(mx, x);
  if (!std::isfinite(mx)) return mx;
  double sum = 0.0;
  for (float x : v) {
    if (!std::isnan(x)) sum += std::exp(static_cast<double>(x) - mx);
  }
  return mx + std::log(sum);
}

int32_t ArgmaxLogit(absl::Span<const float> v) {
  if (!CpuHasAvx2Fma() || v.empty()) return ArgmaxLogitScalar(v);
  if (std::isnan(v[0])) return 0;
  const int64_t n = static_cast<int64_t>(v.size());
  return static_cast<int32_t>(FindAvx2(v.data(), n, MaxAvx2(v.data(), n)));
}

double LogSumExpLogits(absl::Span<const float> v) {
  if (!CpuHasAvx2Fma()) return LogSumExpLogitsScalar(v);
  const int64_t n = static_cast<int64_t>(v.size());
  const float mx = MaxAvx2(v.data(), n);
  if (!std::isfinite(mx)) return mx;
  return mx + std::log(SumExpAvx2(v.data(), n, mx));
}

}  // namespace attnserve
