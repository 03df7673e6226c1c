// AVX-512 tile kernel for PackedGemm with bf16 weights (see packed_gemm.h for
// the layout). A bf16 panel row (16 columns) is 256 bits, so one 512-bit load
// holds two k-steps: lanes 0-7 carry step k, lanes 8-15 step k + 1, each as
// the AVX2 kernel splits them (low halves: columns 0-7; high halves: columns
// 8-15). The x operand is x[k] in lanes 0-7 and x[k + 1] in lanes 8-15; the
// two halves of each accumulator are summed at the end. Twice the work per
// FMA of the AVX2 kernel, which bounds decode at 8-16 sequences on bf16
// weights. Compiled with per-function target attributes (the caller checks
// CpuHasAvx512F first).
#include <immintrin.h>

#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve::packed_gemm_internal {
namespace {

template <int MR>
__attribute__((target("avx512f,avx2,fma"))) void TileBf16(const float* x, int64_t ldx, const void* panel,
                                                           int64_t k, float* tile) {
  // One or two rows: split K once more so enough FMAs are in flight.
  constexpr int kSplit = MR <= 2 ? 2 : 1;
  constexpr int64_t kPrefetch = 1024 / 2;  // bf16 elements ahead, as the AVX2 kernel
  const uint16_t* w = static_cast<const uint16_t*>(panel);
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512i pair = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc[kSplit][MR][2];
#pragma GCC unroll 8
  for (int s = 0; s < kSplit; ++s) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[s][i][0] = acc[s][i][1] = _mm512_setzero_ps();
  }
  int64_t kk = 0;
  for (; kk + 2 * kSplit <= k; kk += 2 * kSplit) {
#pragma GCC unroll 8
    for (int s = 0; s < kSplit; ++s) {
      const int64_t k0 = kk + 2 * s;
      _mm_prefetch(reinterpret_cast<const char*>(w + k0 * 16 + kPrefetch), _MM_HINT_T0);
      const __m512i v = _mm512_loadu_si512(w + k0 * 16);
      const __m512 lo = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      const __m512 hi = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        // x[k0], x[k0 + 1] (k0 + 1 < k: in bounds) spread to the two halves.
        // (_mm_loadu_si64: x rows are only 4-byte aligned.)
        const __m128 two = _mm_castsi128_ps(_mm_loadu_si64(x + i * ldx + k0));
        const __m512 xv = _mm512_permutexvar_ps(pair, _mm512_castps128_ps512(two));
        acc[s][i][0] = _mm512_fmadd_ps(xv, lo, acc[s][i][0]);
        acc[s][i][1] = _mm512_fmadd_ps(xv, hi, acc[s][i][1]);
      }
    }
  }
  // The last k-steps (fewer than 2 * kSplit), one at a time in 256 bits.
  __m256 tail[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) tail[i][0] = tail[i][1] = _mm256_setzero_ps();
  for (; kk < k; ++kk) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + kk * 16));
    const __m256 lo = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    const __m256 hi = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(x + i * ldx + kk);
      tail[i][0] = _mm256_fmadd_ps(xv, lo, tail[i][0]);
      tail[i][1] = _mm256_fmadd_ps(xv, hi, tail[i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512 sum = acc[0][i][h];
      if constexpr (kSplit == 2) sum = _mm512_add_ps(sum, acc[1][i][h]);
      const __m256 even = _mm512_castps512_ps256(sum);
      const __m256 odd = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1));
      _mm256_storeu_ps(tile + i * 16 + h * 8, _mm256_add_ps(_mm256_add_ps(even, odd), tail[i][h]));
    }
  }
}

}  // namespace

void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile) {
  switch (rows) {
    case 1: return TileBf16<1>(x, ldx, panel, k, tile);
    case 2: return TileBf16<2>(x, ldx, panel, k, tile);
    case 3: return TileBf16<3>(x, ldx, panel, k, tile);
    case 4: return TileBf16<4>(x, ldx, panel, k, tile);
    case 5: return TileBf16<5>(x, ldx, panel, k, tile);
    default: return TileBf16<6>(x, ldx, panel, k, tile);
  }
}

}  // namespace attnserve::packed_gemm_internal
