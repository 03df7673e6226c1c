#include "engine/ops/activation.h"

#include <immintrin.h>

#include <cmath>

#include "engine/core/avx2_exp.h"
#include "engine/core/cpu_features.h"

namespace attnserve {
namespace {

#define ATTNSERVE_AVX2 __attribute__((target("avx2,fma"))) inline

ATTNSERVE_AVX2 __m256 Sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  // -|x|: the sign bit set. exp of it is in [0, 1]; NaN gives 0 (see
  // ExpNonPositive8), and x >= 0 is false for NaN, so σ(NaN) = 0 and the
  // callers' v · σ(v) is NaN.
  const __m256 e = avx2::ExpNonPositive8(_mm256_or_ps(x, sign));
  const __m256 num = _mm256_blendv_ps(e, one, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

ATTNSERVE_AVX2 __m256 Silu8(__m256 v) { return _mm256_mul_ps(v, Sigmoid8(v)); }

ATTNSERVE_AVX2 __m256 GeluTanh8(__m256 v) {
  // 2 · sqrt(2/π) · (v + 0.044715 v³) = v · (a + b v²)
  const __m256 a = _mm256_set1_ps(1.5957691216057308f);         // 2 sqrt(2/pi)
  const __m256 b = _mm256_set1_ps(1.5957691216057308f * 0.044715f);
  const __m256 y = _mm256_mul_ps(v, _mm256_fmadd_ps(b, _mm256_mul_ps(v, v), a));
  return _mm256_mul_ps(v, Sigmoid8(y));
}

ATTNSERVE_AVX2 __m256 GeluErf8(__m256 v) {
  // q = 0.5 erfc(|z|), z = v / sqrt(2): Phi(v) = v >= 0 ? 1 - q : q.
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f),
                                    _mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  const __m256 neg_a2 = _mm256_xor_ps(_mm256_mul_ps(a, a), _mm256_set1_ps(-0.0f));
  const __m256 q = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), p), avx2::ExpNonPositive8(neg_a2));
  const __m256 phi = _mm256_blendv_ps(q, _mm256_sub_ps(one, q),
                                      _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
  return _mm256_mul_ps(v, phi);
}

template <Activation kAct>
ATTNSERVE_AVX2 __m256 Apply8(__m256 v) {
  if constexpr (kAct == Activation::kGeluErf) return GeluErf8(v);
  if constexpr (kAct == Activation::kGeluTanh) return GeluTanh8(v);
  if constexpr (kAct == Activation::kSilu) return Silu8(v);
  if constexpr (kAct == Activation::kRelu) return _mm256_max_ps(v, _mm256_setzero_ps());
  return v;
}

// Whole vectors, then the last n % 8 through a zero-padded vector (so a
// 32-column tile and a 37-column row take the same code).
template <Activation kAct>
__attribute__((target("avx2,fma"))) void ApplyAvx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, Apply8<kAct>(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float tail[8] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = x[j];
    _mm256_store_ps(tail, Apply8<kAct>(_mm256_load_ps(tail)));
    for (int64_t j = i; j < n; ++j) x[j] = tail[j - i];
  }
}

// The whole vectors of SiluMul / GeluTanhMul; returns how many elements it did.
template <Activation kAct>
ATTNSERVE_AVX2 int64_t ActMulAvx2(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(Apply8<kAct>(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  return i;
}

}  // namespace

float ActivationScalar(Activation act, float v) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float c = 0.79788456080286536f;  // sqrt(2/pi)
      return 0.5f * v * (1.0f + std::tanh(c * (v + 0.044715f * v * v * v)));
    }
    case Activation::kSilu: return v / (1.0f + std::exp(-v));
    case Activation::kRelu: return v > 0.0f ? v : 0.0f;
  }
  return v;
}

void ApplyActivationScalar(Activation act, float* x, int64_t n) {
  if (act == Activation::kNone) return;
  for (int64_t i = 0; i < n; ++i) x[i] = ActivationScalar(act, x[i]);
}

void ApplyActivation(Activation act, float* x, int64_t n) {
  if (!CpuHasAvx2Fma()) return ApplyActivationScalar(act, x, n);
  switch (act) {
    case Activation::kNone: return;
    case Activation::kGeluErf: return ApplyAvx2<Activation::kGeluErf>(x, n);
    case Activation::kGeluTanh: return ApplyAvx2<Activation::kGeluTanh>(x, n);
    case Activation::kSilu: return ApplyAvx2<Activation::kSilu>(x, n);
    case Activation::kRelu: return ApplyAvx2<Activation::kRelu>(x, n);
  }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = CpuHasAvx2Fma() ? ActMulAvx2<Activation::kSilu>(gate, up, n, out) : 0;
  for (; i < n; ++i) out[i] = ActivationScalar(Activation::kSilu, gate[i]) * up[i];
}

void GeluTanhMul(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = CpuHasAvx2Fma() ? ActMulAvx2<Activation::kGeluTanh>(gate, up, n, out) : 0;
  for (; i < n; ++i) out[i] = ActivationScalar(Activation::kGeluTanh, gate[i]) * up[i];
}

}  // namespace attnserve
