// Linear: y[M, N] = act(x[M, K] · Wᵀ + b), the projection layer of every model.
//
// W is given [N, K] (PyTorch nn.Linear layout) and held ONCE, packed into
// column panels (engine/ops/packed_gemm.h): f32 in oneDNN's BA16a32b layout,
// bf16 as bf16 (half the bytes, widened in registers). The kernel is chosen
// per call by M (thresholds in engine/ops/linear_kernels.h, measured by
// bench/decoder/linear_bench):
//  - f32, M < DnnlMinRows (32; 16 on AVX-512): the packed AVX2 kernel (bandwidth-bound GEMV
//    and small GEMMs, where oneDNN's gemm:jit is slow);
//  - f32, larger M: oneDNN fixed-M matmul primitives (brg_matmul), one per
//    M bucket, created once and cached (engine/ops/fixed_matmul.h), reading
//    the same packed weights in place; a tail of < 16 rows goes to the
//    packed kernel. Bias and activation are post-ops. Not for K > 1024
//    (oneDNN 3.7.2 computes those wrongly on these weights: such layers stay
//    on the packed kernel; each Linear also checks its oneDNN path once
//    against the packed kernel at creation).
//  - bf16 with f32 products: the packed kernel at every M (oneDNN has no
//    usable f32 × bf16 matmul on AVX2 CPUs: it falls back to a reference
//    kernel).
//  - q8_0 (llama.cpp's Q8_0 blocks, packed_gemm.h): the packed kernel at
//    every M, f32 products of the dequantised weights.
// MatmulPrecision::kBf16 (engine/ops/matmul_precision.h): rows from 16 on
// become bf16 products with f32 accumulation on an AMX CPU — f32 weights
// through oneDNN's fpmath_mode::bf16, bf16 weights through bf16 primitives
// reading the packed panels in place (rows rounded first); the packed
// kernel's rows stay f32.
// Thread-safe for concurrent Forward calls: the weights are immutable, the
// primitive cache takes a mutex for its lookup, and each call takes its
// stream and scratchpad from its thread.
// weight_bytes() reports what is held: the packed panels (N padded to the
// panel width, 32, and K to a multiple of 16 for f32, 32 for bf16) plus an
// f32 bias.
#ifndef ATTNSERVE_ENGINE_OPS_LINEAR_H_
#define ATTNSERVE_ENGINE_OPS_LINEAR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"
#include "engine/ops/matmul_precision.h"
#include "engine/ops/packed_gemm.h"

namespace attnserve {

class Linear {
 public:
  // weight: [N, K], f32, bf16 or f16. bias: [N] (any float dtype) or nullptr.
  // storage: kF32, kBF16 or kQ8_0 (quantised here as llama.cpp quantises).
  // kernel: kAuto as described above; kPacked runs the packed kernel at
  // every M (no oneDNN primitive), for layers only ever fed a few rows (the
  // LM head sees one row per sequence).
  // precision: kBf16 lets the oneDNN products round to bf16
  // (engine/ops/matmul_precision.h); it changes nothing on the packed kernel.
  enum class Kernel { kAuto, kPacked };
  static absl::StatusOr<Linear> Create(const Tensor& weight, const Tensor* bias,
                                       DType storage = DType::kF32,
                                       Activation act = Activation::kNone,
                                       Kernel kernel = Kernel::kAuto,
                                       MatmulPrecision precision = MatmulPrecision::kF32);

  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;
  ~Linear();

  // x: m*K floats (row-major), y: m*N floats. m == 0 is a no-op.
  absl::Status Forward(const float* x, int64_t m, float* y) const;

  int64_t in_features() const;
  int64_t out_features() const;
  // Bytes of weights and bias held.
  int64_t weight_bytes() const;
  // What the weights are stored as (the storage asked for).
  DType storage() const;
  // Row r of W as f32 (K values): lets a tied embedding table be read from
  // the LM head instead of being held twice.
  void ReadRow(int64_t r, float* out) const;
  // oneDNN primitives created so far (at most one per M bucket, ever).
  int64_t primitives_created() const;
  // Creates every oneDNN primitive Forward could use (all M buckets) now
  // instead of on first use; a no-op for layers that never use oneDNN.
  absl::Status CreateAllPrimitives() const;
  // Tests: use oneDNN for products from this many multiply-adds instead of
  // kDnnlMinMacs (0: from DnnlMinRows rows whatever the size), so the tiny
  // test models exercise the oneDNN path that real models take. Process-wide;
  // restore with ResetDnnlMinMacsForTesting().
  static void SetDnnlMinMacsForTesting(int64_t macs);
  static void ResetDnnlMinMacsForTesting();
  // The kernel Forward uses for m rows, e.g. "packed_avx2_f32" or
  // "onednn_fixed_m128:brg_matmul:avx2+packed_tail" (benchmarks, tests).
  std::string KernelFor(int64_t m) const;

 private:
  struct Impl;
  explicit Linear(std::unique_ptr<Impl> impl);
  // Whether Forward sends m rows to oneDNN (rows, size, and a primitive).
  bool UsesDnnl(int64_t m) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_LINEAR_H_
