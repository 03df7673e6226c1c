// Linear: y[M, N] = act(x[M, K] · Wᵀ + b), the projection layer of every model.
//
// W is given [N, K] (PyTorch nn.Linear layout). Built once, by storage:
//  - kF32: one oneDNN matmul primitive with a run-time M and the weights
//    reordered once into the layout it prefers; bias and activation are
//    post-ops.
//  - kBF16: the weights packed once as bf16 into 16-column panels and run by
//    the packed AVX2 kernel (engine/ops/packed_gemm.h) at every M: bf16 is
//    widened in registers, so the weights really take half the memory and
//    decode reads half the bytes. (oneDNN has no usable f32 × bf16 matmul on
//    AVX2 CPUs: it falls back to a reference kernel ~1000× slower.)
// Thread-safe for concurrent Forward calls: everything built at Create is
// immutable and each call takes its stream and scratchpad from its thread.
// weight_bytes() reports what is held (bf16: 2 bytes per weight, N padded to
// a multiple of 16 and K to a multiple of 16; plus an f32 bias).
#ifndef ATTNSERVE_ENGINE_OPS_LINEAR_H_
#define ATTNSERVE_ENGINE_OPS_LINEAR_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"
#include "engine/ops/packed_gemm.h"

namespace attnserve {

class Linear {
 public:
  // weight: [N, K], f32, bf16 or f16. bias: [N] (any float dtype) or nullptr.
  // storage: kF32 or kBF16.
  // kernel: kAuto as described above; kPacked runs f32 weights on the packed
  // kernel too (no oneDNN primitive), for layers only ever fed a few rows —
  // the LM head sees one row per sequence, where oneDNN's run-time-M matmul
  // is slow for M = 2..16.
  enum class Kernel { kAuto, kPacked };
  static absl::StatusOr<Linear> Create(const Tensor& weight, const Tensor* bias,
                                       DType storage = DType::kF32,
                                       Activation act = Activation::kNone,
                                       Kernel kernel = Kernel::kAuto);

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
  // Row r of W as f32 (K values) for a Linear on the packed kernel (bf16 or
  // Kernel::kPacked): lets a tied embedding table be read from the LM head
  // instead of being held twice. CHECK-fails on a oneDNN-backed Linear.
  void ReadRow(int64_t r, float* out) const;

 private:
  struct Impl;
  explicit Linear(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_LINEAR_H_
