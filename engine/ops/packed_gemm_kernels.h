// Micro-kernels behind PackedGemm (internal to engine/ops). One call computes
// an MR × P tile (one panel of W: P = 32 columns and MR = 1..3 rows of x for
// f32, P = 16 and MR = 1..6 for bf16) over the full K into `tile` (row
// stride P), raw accumulators without bias or activation.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_

#include <cstdint>

namespace attnserve::packed_gemm_internal {

// Rows per tile call, by storage.
inline constexpr int kMaxRowsF32 = 3;
inline constexpr int kMaxRowsBf16 = 6;
// Floats in the largest tile (MR × P).
inline constexpr int kMaxTileFloats = 6 * 16;

using TileKernel = void (*)(const float* x, int64_t ldx, int rows, const void* panel, int64_t k,
                            float* tile);

// Available only when the CPU has AVX2 + FMA (checked by the caller).
void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
// Available only when the CPU has AVX-512F (checked by the caller).
void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);

}  // namespace attnserve::packed_gemm_internal

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
