// AVX2 + FMA tile kernels for PackedGemm (see packed_gemm.h for the layout).
// Compiled with per-function target attributes so the library still runs on
// CPUs without AVX2 (the caller checks CpuHasAvx2Fma first).
#include <immintrin.h>

#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve::packed_gemm_internal {
namespace {

#define ATTNSERVE_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// bf16 step 2·pair + odd as four f32 vectors. Steps come in pairs
// (packed_gemm.h): lane i of the pair's 32-byte chunk c is column 8c+i's
// (step 2p, step 2p+1); an even step is the low halves, an odd one the high
// halves. (Callers pass `odd` as a constant of an unrolled loop, so the
// branch folds away.)
ATTNSERVE_AVX2 void LoadBf16Step(const void* panel, int64_t pair_index, int odd, __m256* w) {
  const auto* pair = reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(panel) + pair_index * 64);
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int c = 0; c < 4; ++c) {
    const __m256i v = _mm256_loadu_si256(pair + c);
    w[c] = _mm256_castsi256_ps(odd ? _mm256_and_si256(v, hi) : _mm256_slli_epi32(v, 16));
  }
}

// A tile's accumulators: zeroed, and stored (the K halves summed).
template <int kSplit, int MR>
ATTNSERVE_AVX2 void ZeroAccumulators(__m256 (&acc)[kSplit][MR][4]) {
#pragma GCC unroll 8
  for (int s = 0; s < kSplit; ++s) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[s][i][v] = _mm256_setzero_ps();
    }
  }
}

template <int kSplit, int MR>
ATTNSERVE_AVX2 void StoreAccumulators(__m256 (&acc)[kSplit][MR][4], float* tile) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      __m256 sum = acc[0][i][v];
      if constexpr (kSplit == 2) sum = _mm256_add_ps(sum, acc[1][i][v]);
      _mm256_storeu_ps(tile + i * 32 + v * 8, sum);
    }
  }
}

// The P = 32 weights of step k as 4 f32 vectors.
template <bool kBf16>
ATTNSERVE_AVX2 void LoadW(const void* panel, int64_t k, __m256* w) {
  if constexpr (kBf16) {
    LoadBf16Step(panel, k / 2, static_cast<int>(k & 1), w);
  } else {
    const float* p = static_cast<const float*>(panel) + k * 32;
    w[0] = _mm256_load_ps(p);
    w[1] = _mm256_load_ps(p + 8);
    w[2] = _mm256_load_ps(p + 16);
    w[3] = _mm256_load_ps(p + 24);
  }
}

// MR rows × one panel. With a single row the FMA latency chain, not memory,
// would limit one set of accumulators, so K is split into two interleaved
// halves with their own accumulators (summed at the end). MR × 4 × kSplit ≤
// 12 registers.
template <int MR, bool kBf16>
__attribute__((target("avx2,fma"))) void Tile(const float* x, int64_t ldx, const void* panel,
                                              int64_t k, float* tile, NextPanelSlice next) {
  constexpr int kNv = 4;  // vectors per panel row
  constexpr int kWidth = kNv * 8;
  constexpr int kSplit = MR == 1 ? 2 : 1;
  // bf16 steps go in their stored pairs (even step, odd step).
  constexpr int kStep = kBf16 ? 2 : kSplit;
  constexpr int64_t kElem = kBf16 ? 2 : 4;
  constexpr int64_t kPrefetch = 1024 / kElem;  // elements ahead
  // Except for one f32 row: there the loop is so light that the hardware
  // prefetcher keeps up alone, and the extra prefetches cost time. SmolLM-135M
  // batch-1 f32 decode, 2 threads (decoder_bench, 2026-12-03): 58.1, 58.1,
  // 58.5, 60.5 tok/s without against 48.0, 52.6 with 1 KiB and 47.5-56.7 with
  // 2-16 KiB ahead; bf16 and several rows are faster with it.
  constexpr bool kSoftwarePrefetch = kBf16 || MR > 1;
  __m256 acc[kSplit][MR][kNv];
  ZeroAccumulators<kSplit, MR>(acc);
  SliceTrickle trickle(next, k / kStep);
  int64_t kk = 0;
  for (; kk + kStep <= k; kk += kStep) {
    trickle.Step();
    // Software prefetch ~1 KiB ahead: with few rows the loop is a pure
    // stream over the weights, and a single-thread stream needs more lines
    // in flight than the hardware prefetcher alone keeps.
#pragma GCC unroll 8
    for (int s = 0; s < kStep; ++s) {
      if constexpr (kSoftwarePrefetch) {
        const char* p = static_cast<const char*>(panel) + ((kk + s) * kWidth + kPrefetch) * kElem;
        _mm_prefetch(p, _MM_HINT_T0);
        if constexpr (!kBf16) _mm_prefetch(p + 64, _MM_HINT_T0);  // f32: 128 bytes a step
      }
      __m256 w[kNv];
      if constexpr (kBf16) {
        LoadBf16Step(panel, kk / 2, s, w);  // kk is even here
      } else {
        LoadW<false>(panel, kk + s, w);
      }
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_broadcast_ss(x + i * ldx + kk + s);
#pragma GCC unroll 4
        for (int v = 0; v < kNv; ++v) acc[s % kSplit][i][v] = _mm256_fmadd_ps(xv, w[v], acc[s % kSplit][i][v]);
      }
    }
  }
  for (; kk < k; ++kk) {
    __m256 w[kNv];
    LoadW<kBf16>(panel, kk, w);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(x + i * ldx + kk);
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[0][i][v] = _mm256_fmadd_ps(xv, w[v], acc[0][i][v]);
    }
  }
  StoreAccumulators<kSplit, MR>(acc, tile);
}

// Q8_0 (packed_gemm.h): each block of 32 k steps is 32 × 32 int8 (step-major,
// the panel's 32 columns a step) then the 32 columns' f32 scales. A step's
// weights are int8 × scale, exactly the f32 value llama.cpp's dequantiser
// gives (an int8 times a value with an 11-bit mantissa is exact in f32), and
// the steps go into the accumulators in the f32 tile's order (with one row,
// even and odd steps apart), so the products are bit for bit the f32 tile's
// on the dequantised weights while a weight reads 1.125 bytes, not 4.
template <int MR>
__attribute__((target("avx2,fma"))) void TileQ8(const float* x, int64_t ldx, const void* panel, int64_t k,
                                                float* tile, NextPanelSlice next) {
  constexpr int kNv = 4;
  constexpr int kSplit = MR == 1 ? 2 : 1;
  constexpr int64_t kBlockBytes = 32 * 32 + 32 * 4;
  __m256 acc[kSplit][MR][kNv];
  ZeroAccumulators<kSplit, MR>(acc);
  const auto* base = static_cast<const char*>(panel);
  SliceTrickle trickle(next, (k + 31) / 32);
  for (int64_t k0 = 0; k0 < k; k0 += 32) {
    trickle.Step();
    const char* block = base + (k0 / 32) * kBlockBytes;
    const float* scales = reinterpret_cast<const float*>(block + 32 * 32);
    __m256 scale[kNv];
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) scale[v] = _mm256_load_ps(scales + v * 8);
    const int steps = static_cast<int>(std::min<int64_t>(32, k - k0));
    for (int t = 0; t < steps; ++t) {
      const char* q = block + t * 32;
      // ~1 KiB ahead, a line every other step: the stream the f32 tile's
      // prefetch keeps (the scales, at a block's end, come with it).
      if ((t & 1) == 0) _mm_prefetch(q + 1024, _MM_HINT_T0);
      __m256 w[kNv];
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) {
        const __m256i wide = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + v * 8)));
        w[v] = _mm256_mul_ps(_mm256_cvtepi32_ps(wide), scale[v]);
      }
      const int s = kSplit == 2 ? (t & 1) : 0;  // k0 is even: t's parity is the step's
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_broadcast_ss(x + i * ldx + k0 + t);
#pragma GCC unroll 4
        for (int v = 0; v < kNv; ++v) acc[s][i][v] = _mm256_fmadd_ps(xv, w[v], acc[s][i][v]);
      }
    }
  }
  StoreAccumulators<kSplit, MR>(acc, tile);
}

template <bool kBf16>
void Dispatch(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
              NextPanelSlice next) {
  if constexpr (!kBf16) {
    switch (rows) {
      case 1: return Tile<1, false>(x, ldx, panel, k, tile, next);
      case 2: return Tile<2, false>(x, ldx, panel, k, tile, next);
      default: return Tile<3, false>(x, ldx, panel, k, tile, next);
    }
  } else {
    switch (rows) {
      case 1: return Tile<1, true>(x, ldx, panel, k, tile, next);
      case 2: return Tile<2, true>(x, ldx, panel, k, tile, next);
      default: return Tile<3, true>(x, ldx, panel, k, tile, next);
    }
  }
}

}  // namespace

void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                 NextPanelSlice next) {
  Dispatch<false>(x, ldx, rows, panel, k, tile, next);
}

void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                 NextPanelSlice next) {
  Dispatch<true>(x, ldx, rows, panel, k, tile, next);
}

__attribute__((target("avx2,fma"))) void DequantizeQ8PanelAvx2(const void* panel, int64_t k, float* out) {
  constexpr int64_t kBlockBytes = 32 * 32 + 32 * 4;
  const auto* base = static_cast<const char*>(panel);
  for (int64_t k0 = 0; k0 < k; k0 += 32) {
    const char* block = base + (k0 / 32) * kBlockBytes;
    const float* scales = reinterpret_cast<const float*>(block + 32 * 32);
    __m256 scale[4];
    for (int v = 0; v < 4; ++v) scale[v] = _mm256_load_ps(scales + v * 8);
    const int steps = static_cast<int>(std::min<int64_t>(32, k - k0));
    for (int t = 0; t < steps; ++t) {
      const char* q = block + t * 32;
      float* dst = out + (k0 + t) * 32;
      for (int v = 0; v < 4; ++v) {
        const __m256i wide = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + v * 8)));
        _mm256_store_ps(dst + v * 8, _mm256_mul_ps(_mm256_cvtepi32_ps(wide), scale[v]));
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void WidenBf16PanelAvx2(const void* panel, int64_t k, float* out) {
  __m256 w[4];
  for (int64_t kk = 0; kk < k; ++kk) {
    LoadBf16Step(panel, kk / 2, static_cast<int>(kk & 1), w);
    for (int v = 0; v < 4; ++v) _mm256_store_ps(out + kk * 32 + v * 8, w[v]);
  }
}

void TileAvx2Q8(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                NextPanelSlice next) {
  switch (rows) {
    case 1: return TileQ8<1>(x, ldx, panel, k, tile, next);
    case 2: return TileQ8<2>(x, ldx, panel, k, tile, next);
    default: return TileQ8<3>(x, ldx, panel, k, tile, next);
  }
}

}  // namespace attnserve::packed_gemm_internal
