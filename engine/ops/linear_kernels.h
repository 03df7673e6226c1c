// Which kernel Linear runs for M rows, by weight storage — thresholds taken
// from bench/decoder/linear_bench (table in docs/benchmarks.md, "Linear
// kernels per M"). Internal to engine/ops; tests read it to straddle each
// threshold.
#ifndef ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_

#include <cstdint>
#include <limits>

#include "engine/core/tensor.h"

namespace attnserve {

// f32: the packed AVX2 kernel below this many rows (bandwidth-bound GEMV and
// small GEMMs), oneDNN fixed-M brgemm from here on.
inline constexpr int64_t kF32DnnlMinRows = 32;

// Smallest M that Linear sends to oneDNN for this storage (bf16: never — on
// AVX2 oneDNN has no fast f32 × bf16 matmul).
inline constexpr int64_t DnnlMinRows(DType storage) {
  return storage == DType::kF32 ? kF32DnnlMinRows : std::numeric_limits<int64_t>::max();
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_
