// Micro-kernels behind PackedGemm (internal to engine/ops). One call computes
// an MR × P tile (one panel of W: P = 32 columns; MR = 1..3 rows of x, 1..8
// for the AVX-512 f32 tile, 1..6 for the AVX-512 bf16 one) over the full K
// into `tile` (row stride P), raw accumulators without bias or activation.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_

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

using TileKernel = void (*)(const float* x, int64_t ldx, int rows, const void* panel, int64_t k,
                            float* tile);

// Available only when the CPU has AVX2 + FMA (checked by the caller).
void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
// Available only when the CPU has AVX-512F (checked by the caller).
void TileAvx512F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);

}  // namespace attnserve::packed_gemm_internal

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
