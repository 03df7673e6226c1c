// Internal to engine/attention: AVX2+FMA helpers shared by the flash and
// decode kernels. Every function carries its own target attribute, so this
// header is safe to include from files compiled without -mavx2; callers must
// check the CPU first.
#ifndef ATTNSERVE_ENGINE_ATTENTION_AVX2_MATH_H_
#define ATTNSERVE_ENGINE_ATTENTION_AVX2_MATH_H_

#include <immintrin.h>

#include <cstdint>

#include "engine/core/avx2_exp.h"

namespace attnserve::attention_internal {

// exp(x) for x <= 0 on 8 lanes (engine/core/avx2_exp.h).
using avx2::ExpNonPositive8;

// 8 bf16 values widened to f32 (bf16 is the top half of an f32).
__attribute__((target("avx2,fma"))) inline __m256 LoadBf16x8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Lane i of the result = sum of the 8 lanes of a[i] (the scores of 8 keys
// from their 8 products each, in the decode kernels).
__attribute__((target("avx2,fma"))) inline __m256 Reduce8(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]);
  const __m256 t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]);
  const __m256 t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1);
  const __m256 u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_AVX2_MATH_H_
