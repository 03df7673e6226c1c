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

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_AVX2_MATH_H_
