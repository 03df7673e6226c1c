// AVX2 + FMA tile kernels for PackedGemm (see packed_gemm.h for the layout).
// Compiled with per-function target attributes so the library still runs on
// CPUs without AVX2 (the caller checks HasAvx2Fma first).
#include <immintrin.h>

#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve::packed_gemm_internal {
namespace {

#define ATTNSERVE_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// 16 weights of step k as two f32 vectors (columns 0-7, 8-15).
template <bool kBf16>
ATTNSERVE_AVX2 void LoadW(const void* panel, int64_t k, __m256& w0, __m256& w1) {
  if constexpr (kBf16) {
    // u16 2i = column i (low half of lane i), 2i+1 = column 8+i (high half).
    const __m256i v =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(panel) + k * 16));
    w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    w1 = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  } else {
    const float* p = static_cast<const float*>(panel) + k * 16;
    w0 = _mm256_load_ps(p);
    w1 = _mm256_load_ps(p + 8);
  }
}

// MR rows. With one or two rows the FMA latency chain, not memory, would
// limit a single accumulator pair, so K is split into two interleaved halves
// with their own accumulators (summed at the end).
template <int MR, bool kBf16>
__attribute__((target("avx2,fma"))) void Tile(const float* x, int64_t ldx, const void* panel,
                                              int64_t k, float* tile) {
  constexpr int kSplit = MR <= 2 ? 2 : 1;
  constexpr int64_t kElem = kBf16 ? 2 : 4;
  constexpr int64_t kPrefetch = 1024 / kElem;  // elements ahead
  __m256 a0[kSplit][MR], a1[kSplit][MR];
#pragma GCC unroll 8
  for (int s = 0; s < kSplit; ++s) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      a0[s][i] = _mm256_setzero_ps();
      a1[s][i] = _mm256_setzero_ps();
    }
  }
  int64_t kk = 0;
  for (; kk + kSplit <= k; kk += kSplit) {
    // Software prefetch ~1 KiB ahead: with few rows the loop is a pure
    // stream over the weights (one 64-byte line per f32 step), and a
    // single-thread stream needs more lines in flight than the hardware
    // prefetcher alone keeps.
#pragma GCC unroll 8
    for (int s = 0; s < kSplit; ++s) {
      _mm_prefetch(static_cast<const char*>(panel) + ((kk + s) * 16 + kPrefetch) * kElem,
                   _MM_HINT_T0);
      __m256 w0, w1;
      LoadW<kBf16>(panel, kk + s, w0, w1);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_broadcast_ss(x + i * ldx + kk + s);
        a0[s][i] = _mm256_fmadd_ps(xv, w0, a0[s][i]);
        a1[s][i] = _mm256_fmadd_ps(xv, w1, a1[s][i]);
      }
    }
  }
  for (; kk < k; ++kk) {
    __m256 w0, w1;
    LoadW<kBf16>(panel, kk, w0, w1);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(x + i * ldx + kk);
      a0[0][i] = _mm256_fmadd_ps(xv, w0, a0[0][i]);
      a1[0][i] = _mm256_fmadd_ps(xv, w1, a1[0][i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    __m256 s0 = a0[0][i], s1 = a1[0][i];
    if constexpr (kSplit == 2) {
      s0 = _mm256_add_ps(s0, a0[1][i]);
      s1 = _mm256_add_ps(s1, a1[1][i]);
    }
    _mm256_storeu_ps(tile + i * 16, s0);
    _mm256_storeu_ps(tile + i * 16 + 8, s1);
  }
}

template <bool kBf16>
void Dispatch(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile) {
  switch (rows) {
    case 1: return Tile<1, kBf16>(x, ldx, panel, k, tile);
    case 2: return Tile<2, kBf16>(x, ldx, panel, k, tile);
    case 3: return Tile<3, kBf16>(x, ldx, panel, k, tile);
    case 4: return Tile<4, kBf16>(x, ldx, panel, k, tile);
    case 5: return Tile<5, kBf16>(x, ldx, panel, k, tile);
    default: return Tile<6, kBf16>(x, ldx, panel, k, tile);
  }
}

}  // namespace

void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile) {
  Dispatch<false>(x, ldx, rows, panel, k, tile);
}

void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile) {
  Dispatch<true>(x, ldx, rows, panel, k, tile);
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace attnserve::packed_gemm_internal
