// Linear: y[M, N] = act(x[M, K] · Wᵀ + b), the projection layer of every model.
//
// W is given [N, K] (PyTorch nn.Linear layout). Built once: one oneDNN matmul
// primitive with a run-time M, and the weights reordered once into the
// layout that primitive prefers. Bias and activation are oneDNN post-ops.
// Thread-safe for concurrent Forward calls: the primitive is immutable and
// each call takes its stream and scratchpad from the calling thread.
//
// Storage: kF32 weights go to oneDNN as f32. kBF16 storage asks oneDNN for an
// f32-src × bf16-weights matmul (weights decompression); where oneDNN refuses
// that combination (AVX2 machines without native bf16), the weights are
// widened to f32 once at Create and storage() reports kF32 — correct, but
// without the memory saving. weight_bytes() always reports what is held.
#ifndef ATTNSERVE_ENGINE_OPS_LINEAR_H_
#define ATTNSERVE_ENGINE_OPS_LINEAR_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"

namespace attnserve {

enum class Activation { kNone, kGeluErf, kGeluTanh, kSilu, kRelu };

class Linear {
 public:
  // weight: [N, K], f32 or bf16. bias: [N] f32 (or bf16), or nullptr.
  static absl::StatusOr<Linear> Create(const Tensor& weight, const Tensor* bias,
                                       DType storage = DType::kF32,
                                       Activation act = Activation::kNone);

  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;
  ~Linear();

  // x: m*K floats (row-major), y: m*N floats. m == 0 is a no-op.
  absl::Status Forward(const float* x, int64_t m, float* y) const;

  int64_t in_features() const;
  int64_t out_features() const;
  // Bytes of weights and bias held.
  int64_t weight_bytes() const;
  // What the weights are stored as after Create (see the class comment).
  DType storage() const;

 private:
  struct Impl;
  explicit Linear(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_LINEAR_H_
