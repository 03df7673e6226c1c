// Which kernel Linear runs for M rows, by weight storage — thresholds taken
// from bench/decoder/linear_bench (table in docs/benchmarks.md, "Linear
// kernels per M"). Internal to engine/ops; tests read it to straddle each
// threshold.
#ifndef ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_

#include <cstdint>
#include <limits>

#include "engine/core/tensor.h"
#include "engine/ops/matmul_precision.h"

namespace attnserve {

// f32: the packed kernel below this many rows (bandwidth-bound GEMV and
// small GEMMs), oneDNN fixed-M brgemm from here on. On AVX2 CPUs oneDNN wins
// from 32 rows. On AVX-512 CPUs the packed kernel's AVX-512 f32 tile (8 rows
// × 32 columns) beats oneDNN's 16-row bucket on every decoder and MiniLM
// shape (bench/decoder/linear_bench, 2026-12-03 ~18:42 UTC: 328-357 against
// 316-341 GFLOP/s) and is level at 32 rows, so the switch is at 32 there too:
// SmolLM-135M f32 decode at 16 sequences 377-384 -> 387-403 tokens/s, a
// 16-token MiniLM sentence 2.14-2.26 -> 1.98-2.13 ms (docs/benchmarks.md).
inline constexpr int64_t kF32DnnlMinRows = 32;

// And only for products of at least this many multiply-adds (M·N·K): a
// oneDNN primitive runs an OpenMP parallel region however small the work,
// and in a server, where the engine threads share the cores with gRPC and
// client threads, a tiny layer's region waits on descheduled threads.
// stories260K (64-wide layers) at 16 streams: 1214 µs per engine step with
// oneDNN at 16 rows, ~310 µs on the packed kernel (which runs such products
// on one core); tokens/s 0.29x -> 1.26x of one stream at a time
// (bench/loadgen/compiled_run.sh, 2026-12-03 17:40-17:48, docs/benchmarks.md).
// MiniLM's and the 28M Llama's layers are over it from 16 rows on.
inline constexpr int64_t kDnnlMinMacs = int64_t{1} << 21;

// bf16 products (MatmulPrecision::kBf16), on either weight storage: oneDNN
// (AMX where the CPU has it) from its smallest bucket; below it the packed
// kernel in f32.
inline constexpr int64_t kBf16ProductDnnlMinRows = 16;

// Smallest M that Linear sends to oneDNN for this storage and precision
// (bf16 weights with f32 products: never — oneDNN has no f32 × bf16-weights
// matmul that keeps f32 activations).
inline int64_t DnnlMinRows(DType storage, MatmulPrecision precision = MatmulPrecision::kF32) {
  if (precision == MatmulPrecision::kBf16) return kBf16ProductDnnlMinRows;
  return storage == DType::kF32 ? kF32DnnlMinRows : std::numeric_limits<int64_t>::max();
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_LINEAR_KERNELS_H_
