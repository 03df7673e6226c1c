// Micro-kernels behind PackedGemm (internal to engine/ops). One call computes
// an MR × P tile (one panel of W: P = 32 columns; MR = 1..3 rows of x, 1..8
// for the AVX-512 f32 tile, 1..6 for the AVX-512 bf16 one) over the full K
// into `tile` (row stride P), raw accumulators without bias or activation.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_

#include <xmmintrin.h>

#include <cstdint>

namespace attnserve::packed_gemm_internal {

// Rows per tile call, by kernel (the AVX2 tiles keep MR × 4 vectors × their
// K split within 12 registers; the AVX-512 tiles have 32: 16 accumulators for
// f32, 24 for bf16, whose loads take two registers per column half).
inline constexpr int kMaxRowsAvx2 = 3;
inline constexpr int kMaxRowsAvx512F32 = 8;
inline constexpr int kMaxRowsAvx512Bf16 = 6;
inline constexpr int kMaxRowsScalar = 6;
// Floats in the largest tile (MR × P).
inline constexpr int kMaxTileFloats = 8 * 32;

// The slice of the NEXT panel a tile call pulls into L2 while it computes:
// `lines` cache lines from `start` (none by default). PackedGemm hands each
// of a panel's row blocks one share of the next panel, so that memory keeps
// streaming while the later row blocks re-read the current panel from L2.
struct NextPanelSlice {
  const char* start = nullptr;
  int64_t lines = 0;
};

// Issues a slice's prefetches evenly over a kernel's `steps` loop steps.
class SliceTrickle {
 public:
  SliceTrickle(NextPanelSlice slice, int64_t steps)
      : p_(slice.start), left_(slice.lines),
        per_step_(steps > 0 ? (slice.lines + steps - 1) / steps : 0) {}
  __attribute__((always_inline)) inline void Step() {
    for (int64_t q = 0; q < per_step_ && left_ > 0; ++q, --left_, p_ += 64) {
      _mm_prefetch(p_, _MM_HINT_T1);
    }
  }

 private:
  const char* p_;
  int64_t left_;
  int64_t per_step_;
};

using TileKernel = void (*)(const float* x, int64_t ldx, int rows, const void* panel, int64_t k,
                            float* tile, NextPanelSlice next);

// Available only when the CPU has AVX2 + FMA (checked by the caller).
void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
// Available only when the CPU has AVX-512F (checked by the caller).
void TileAvx512F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);

}  // namespace attnserve::packed_gemm_internal

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
