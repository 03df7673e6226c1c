// AVX-512 tile kernel for PackedGemm with bf16 weights (see packed_gemm.h for
// the layout). A bf16 panel stores k steps in pairs, each 32-bit lane one
// column's two steps, so one 512-bit load holds both steps of a pair for all
// 16 columns: a 16-bit left shift of each lane gives step k as f32, masking
// the low half gives step k + 1. Each row then takes two FMAs per pair, with
// x[k] and x[k + 1] broadcast. Twice the work per FMA of the AVX2 kernel,
// which bounds decode at 8-16 sequences on bf16 weights. Compiled with
// per-function target attributes (the caller checks CpuHasAvx512F first).
#include <immintrin.h>

#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve::packed_gemm_internal {
namespace {

template <int MR>
__attribute__((target("avx512f,avx2,fma"))) void TileBf16(const float* x, int64_t ldx, const void* panel,
                                                           int64_t k, float* tile) {
  // Even and odd steps accumulate apart (two FMA chains per row); one or two
  // rows also split the pairs once more so enough FMAs are in flight.
  constexpr int kSplit = MR <= 2 ? 2 : 1;
  constexpr int64_t kPrefetch = 1024 / 2;  // bf16 elements ahead, as the AVX2 kernel
  const uint16_t* w = static_cast<const uint16_t*>(panel);
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
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
      const int64_t k0 = kk + 2 * s;  // even: a pair starts here
      _mm_prefetch(reinterpret_cast<const char*>(w + k0 * 16 + kPrefetch), _MM_HINT_T0);
      const __m512i v = _mm512_loadu_si512(w + k0 * 16);
      const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        acc[s][i][0] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + k0]), even, acc[s][i][0]);
        acc[s][i][1] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + k0 + 1]), odd, acc[s][i][1]);
      }
    }
  }
  // At most 2 * kSplit - 1 steps remain; kk is even. A lone last step (odd
  // K) uses only the even half: x has no element k.
  for (; kk < k; kk += 2) {
    const __m512i v = _mm512_loadu_si512(w + kk * 16);
    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
    const bool both = kk + 1 < k;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      acc[0][i][0] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + kk]), even, acc[0][i][0]);
      if (both) acc[0][i][1] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + kk + 1]), odd, acc[0][i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    __m512 sum = _mm512_add_ps(acc[0][i][0], acc[0][i][1]);
    if constexpr (kSplit == 2) sum = _mm512_add_ps(sum, _mm512_add_ps(acc[1][i][0], acc[1][i][1]));
    _mm512_storeu_ps(tile + i * 16, sum);
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
