// AVX-512 tile kernels for PackedGemm (see packed_gemm.h for the layout).
//
// f32 weights: a panel step is 32 floats, two 512-bit loads; each row takes
// two FMAs with x[k] broadcast. Up to 8 rows (16 accumulators): twice the
// AVX2 tile's width and nearly three times its rows, so at 4-16 decode rows
// (and the LM head, which always runs here) each panel pass from L2 feeds
// eight rows instead of three.
//
// bf16 weights: A bf16 panel stores k steps in pairs, each 32-bit lane one
// column's two steps, so two 512-bit loads hold both steps of a pair for all
// 32 columns: a 16-bit left shift of each lane gives step k as f32, masking
// the low half gives step k + 1. Each row then takes four FMAs per pair (two
// column halves × two steps), with x[k] and x[k + 1] broadcast; up to 6 rows
// (24 accumulators of the 32 registers), twice the AVX2 tile's rows, which
// bounds decode at 8-16 sequences on bf16 weights. Compiled with
// per-function target attributes (the caller checks CpuHasAvx512F first).
#include <immintrin.h>

#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve::packed_gemm_internal {
namespace {

constexpr int64_t kPrefetch = 1024 / 2;  // bf16 elements ahead, as the AVX2 kernel

// One pair of steps (kk, kk + 1; kk even) into acc: 64 bf16 = two 512-bit
// loads. `both` false for a lone last step (odd K): x has no element kk + 1.
// f32: MR rows × 32 columns over all K. One or two rows split K into even
// and odd steps with their own accumulators (enough FMA chains in flight).
template <int MR>
__attribute__((target("avx512f,avx2,fma"))) void TileF32(const float* x, int64_t ldx, const void* panel,
                                                          int64_t k, float* tile, NextPanelSlice next) {
  constexpr int kChains = MR <= 2 ? 2 : 1;
  SliceTrickle trickle(next, k);
  // Prefetch distance. Several rows: 2 KiB (SmolLM-135M f32 decode at 8
  // sequences 230 -> 255 tokens/s against 1 KiB, 4 KiB: 233; on huge pages
  // 1 / 2 / 3 KiB stay level). One row: 1 KiB. On 4 KiB pages one row ran
  // best with no software prefetch (the AVX2 tile's measurement, still its
  // setting); since the weights sit on huge pages (core/large_alloc.h) the
  // prefetch pays: batch-1 decode 50.0-51.7 -> 56.2-57.5 tokens/s against
  // 53.4-56.4 at 512 B, 55.7-57.9 at 1.5 KiB, 55.4-56.5 at 2 KiB and
  // 48.9-50.5 at 4 KiB (decoder_bench, 2026-12-03 ~22:35 UTC).
  constexpr int64_t kPrefetchFloats = (MR == 1 ? 1024 : 2048) / 4;
  const float* w = static_cast<const float*>(panel);
  __m512 acc[kChains][MR][2];
#pragma GCC unroll 2
  for (int c = 0; c < kChains; ++c) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      acc[c][i][0] = _mm512_setzero_ps();
      acc[c][i][1] = _mm512_setzero_ps();
    }
  }
  int64_t kk = 0;
  for (; kk + kChains <= k; kk += kChains) {
#pragma GCC unroll 2
    for (int c = 0; c < kChains; ++c) {
      const float* p = w + (kk + c) * 32;
      trickle.Step();
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchFloats), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchFloats + 16), _MM_HINT_T0);
      const __m512 w0 = _mm512_load_ps(p);
      const __m512 w1 = _mm512_load_ps(p + 16);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512 xv = _mm512_set1_ps(x[i * ldx + kk + c]);
        acc[c][i][0] = _mm512_fmadd_ps(xv, w0, acc[c][i][0]);
        acc[c][i][1] = _mm512_fmadd_ps(xv, w1, acc[c][i][1]);
      }
    }
  }
  for (; kk < k; ++kk) {
    const __m512 w0 = _mm512_load_ps(w + kk * 32);
    const __m512 w1 = _mm512_load_ps(w + kk * 32 + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_set1_ps(x[i * ldx + kk]);
      acc[0][i][0] = _mm512_fmadd_ps(xv, w0, acc[0][i][0]);
      acc[0][i][1] = _mm512_fmadd_ps(xv, w1, acc[0][i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512 sum = acc[0][i][h];
      if constexpr (kChains == 2) sum = _mm512_add_ps(sum, acc[1][i][h]);
      _mm512_storeu_ps(tile + i * 32 + h * 16, sum);
    }
  }
}

template <int MR, int kChains>
__attribute__((target("avx512f,avx2,fma"), always_inline)) inline void Pair(
    const uint16_t* w, const float* x, int64_t ldx, int64_t kk, bool both, __m512 (&acc)[MR][2][kChains]) {
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const uint16_t* p = w + kk * 32;
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch + 32), _MM_HINT_T0);
  __m512 even[2], odd[2];
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m512i v = _mm512_loadu_si512(p + h * 32);
    even[h] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd[h] = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 x0 = _mm512_set1_ps(x[i * ldx + kk]);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) acc[i][h][0] = _mm512_fmadd_ps(x0, even[h], acc[i][h][0]);
    if (both) {
      const __m512 x1 = _mm512_set1_ps(x[i * ldx + kk + 1]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) acc[i][h][kChains - 1] = _mm512_fmadd_ps(x1, odd[h], acc[i][h][kChains - 1]);
    }
  }
}

template <int MR>
__attribute__((target("avx512f,avx2,fma"))) void TileBf16(const float* x, int64_t ldx, const void* panel,
                                                           int64_t k, float* tile, NextPanelSlice next) {
  // Even and odd steps accumulate apart for one or two rows (enough FMA
  // chains in flight); from three rows the rows themselves give enough.
  constexpr int kChains = MR <= 2 ? 2 : 1;
  const uint16_t* w = static_cast<const uint16_t*>(panel);
  __m512 acc[MR][2][kChains];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) acc[i][h][c] = _mm512_setzero_ps();
    }
  }
  SliceTrickle trickle(next, k / 2);
  int64_t kk = 0;
  for (; kk + 2 <= k; kk += 2) {
    trickle.Step();
    Pair<MR, kChains>(w, x, ldx, kk, true, acc);
  }
  if (kk < k) Pair<MR, kChains>(w, x, ldx, kk, false, acc);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512 sum = acc[i][h][0];
      if constexpr (kChains == 2) sum = _mm512_add_ps(sum, acc[i][h][1]);
      _mm512_storeu_ps(tile + i * 32 + h * 16, sum);
    }
  }
}

}  // namespace

void TileAvx512F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next) {
  switch (rows) {
    case 1: return TileF32<1>(x, ldx, panel, k, tile, next);
    case 2: return TileF32<2>(x, ldx, panel, k, tile, next);
    case 3: return TileF32<3>(x, ldx, panel, k, tile, next);
    case 4: return TileF32<4>(x, ldx, panel, k, tile, next);
    case 5: return TileF32<5>(x, ldx, panel, k, tile, next);
    case 6: return TileF32<6>(x, ldx, panel, k, tile, next);
    case 7: return TileF32<7>(x, ldx, panel, k, tile, next);
    default: return TileF32<8>(x, ldx, panel, k, tile, next);
  }
}

void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next) {
  switch (rows) {
    case 1: return TileBf16<1>(x, ldx, panel, k, tile, next);
    case 2: return TileBf16<2>(x, ldx, panel, k, tile, next);
    case 3: return TileBf16<3>(x, ldx, panel, k, tile, next);
    case 4: return TileBf16<4>(x, ldx, panel, k, tile, next);
    case 5: return TileBf16<5>(x, ldx, panel, k, tile, next);
    default: return TileBf16<6>(x, ldx, panel, k, tile, next);
  }
}

}  // namespace attnserve::packed_gemm_internal
