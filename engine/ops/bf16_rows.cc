#include "engine/ops/bf16_rows.h"

#include <immintrin.h>

#include <algorithm>

#include "engine/core/cpu_features.h"
#include "engine/core/half.h"
#include "engine/core/parallel.h"

namespace attnserve {
namespace {

// 16 values per step: FloatToBf16's integer rounding in 512-bit lanes.
__attribute__((target("avx512f"))) void RoundAvx512(const float* src, uint16_t* dst, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x0040);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(src + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i nan_bits = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
    const __m512i out = _mm512_mask_mov_epi32(rounded, nan, nan_bits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(out));
  }
  RoundRowsToBf16Scalar(src + i, dst + i, n - i);
}

}  // namespace

void RoundRowsToBf16Scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16(src[i]);
}

void RoundRowsToBf16(const float* src, uint16_t* dst, int64_t n) {
  if (!CpuHasAvx512F()) {
    RoundRowsToBf16Scalar(src, dst, n);
    return;
  }
  // Memory-bound: two threads only pay off on large blocks (a 512-row
  // prefill chunk is ~10^5-10^6 values).
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  ParallelFor(chunks, n >= kParallelMinMacs, [&](int64_t c) {
    const int64_t begin = c * kChunk;
    RoundAvx512(src + begin, dst + begin, std::min(kChunk, n - begin));
  });
}

}  // namespace attnserve
