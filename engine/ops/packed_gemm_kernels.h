// Micro-kernels behind PackedGemm (internal to engine/ops). One call computes
// an MR × 16 tile (MR = 1..6 rows of x, one panel of W) over the full K into
// `tile` (row stride 16), raw accumulators without bias or activation.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_

#include <cstdint>

namespace attnserve::packed_gemm_internal {

inline constexpr int kMaxRows = 6;

using TileKernel = void (*)(const float* x, int64_t ldx, int rows, const void* panel, int64_t k,
                            float* tile);

// Available only when the CPU has AVX2 + FMA (checked by the caller).
void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile);
bool HasAvx2Fma();

}  // namespace attnserve::packed_gemm_internal

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
