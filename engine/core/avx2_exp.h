// exp on 8 f32 lanes for x <= 0, shared by the attention kernels (softmax),
// the activations (sigmoid, GELU) and the sampler (log-sum-exp). Carries its
// own target attribute, so this header is safe to include from files compiled
// without -mavx2; callers must check the CPU first.
#ifndef ATTNSERVE_ENGINE_CORE_AVX2_EXP_H_
#define ATTNSERVE_ENGINE_CORE_AVX2_EXP_H_

#include <immintrin.h>

namespace attnserve::avx2 {

// exp(x) for 8 lanes with x <= 0 (softmax: a score minus its row max), as
// 2^n * e^r with n = round(x * log2 e), r = x - n ln 2 (ln 2 in two parts,
// so r stays exact for large |x|), |r| <= ln2/2, and a degree-5 fit of e^r
// (relative-error weighted least squares, first two coefficients exactly 1):
// relative error <= 3e-7 in f32 (tested against std::exp). 15 vector ops, no
// clamping needed on this domain. x below -87.3 (including -inf, and NaN)
// gives exactly 0, so masked keys contribute nothing; ExpNonPositive8(0) == 1
// exactly. Positive x is outside the contract.
__attribute__((target("avx2,fma"))) inline __m256 ExpNonPositive8(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(8.31302348524332e-3f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.189097508788109e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6667111217975616e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999922513961792e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}

}  // namespace attnserve::avx2

#endif  // ATTNSERVE_ENGINE_CORE_AVX2_EXP_H_
