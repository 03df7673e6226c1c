// FixedMatmuls: oneDNN matmul primitives with a FIXED row count M, one per M
// bucket, created on first use and cached for the life of the Linear — never
// rebuilt per call. They all read the same weights in place: the packed
// panels of PackedMatrix, which are oneDNN's "BA16a32b" layout for f32 and
// its "BA16a32b2a" (VNNI pairs) for bf16 (see packed_gemm.h), so no
// primitive owns a weight copy. bf16 weights are used only with
// MatmulPrecision::kBf16: each Run rounds x to bf16 (oneDNN's AMX kernels
// take bf16 sources only) and accumulates in f32.
//
// Why fixed M: with a run-time M (DNNL_RUNTIME_DIM_VAL) oneDNN 3.7 on AVX2
// runs its gemm:jit kernel (~80 GFLOP/s at M = 128 here); with a fixed M and
// BA16a32b weights it runs brg_matmul:avx2 (~130-150 GFLOP/s from M = 16).
//
// Buckets: M is a multiple of kRowStep up to kMaxRows (at most 32 primitives
// per Linear, bounded by construction); Linear splits any other M into
// bucket-sized row blocks plus a tail of < kRowStep rows for the packed
// kernel. Thread-safe: the lookup takes a mutex (creation happens once per
// bucket, under it); execution uses the calling thread's stream and
// scratchpad.
#ifndef ATTNSERVE_ENGINE_OPS_FIXED_MATMUL_H_
#define ATTNSERVE_ENGINE_OPS_FIXED_MATMUL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/ops/matmul_precision.h"
#include "engine/ops/packed_gemm.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {

class FixedMatmuls {
 public:
  static constexpr int64_t kRowStep = 16;
  static constexpr int64_t kMaxRows = 512;
  // Largest K oneDNN 3.7.2's AVX2 kernel computes correctly on these
  // weights (see .cc); its AVX-512 kernels take any K that passes SelfCheck.
  static constexpr int64_t kMaxK = 1024;

  // w: packed weights, f32 or (with precision kBf16) bf16 (must outlive this object); bias: [N] or null (must
  // outlive this object). Fails with kUnimplemented if oneDNN would not run
  // BA16a32b weights with an optimized kernel, K > kMaxK on an AVX2 kernel,
  // or a checked bucket (M = 16; with K > kMaxK also 128 and 512) disagrees
  // with the packed kernel (then the caller keeps the packed kernel at every
  // M). precision kBf16 sets oneDNN's fpmath_mode::bf16 on every primitive
  // (engine/ops/matmul_precision.h); the self-check then allows bf16
  // rounding.
  static absl::StatusOr<std::unique_ptr<FixedMatmuls>> Create(
      const PackedMatrix& w, const float* bias, Activation act,
      MatmulPrecision precision = MatmulPrecision::kF32);

  // y[m, N] = act(x[m, K] · Wᵀ + b); m a multiple of kRowStep, ≤ kMaxRows.
  absl::Status Run(const float* x, int64_t m, float* y) const;

  // Creates every bucket not yet created, so that no later Run pays for a
  // primitive's creation (oneDNN JIT-compiles each new shape: milliseconds,
  // which a serving step would otherwise spend on the first batch of each
  // size). Identical shapes in other layers hit oneDNN's primitive cache.
  absl::Status CreateAllBuckets() const;
  static constexpr int64_t kBuckets = kMaxRows / kRowStep;

  // Primitives created so far (tests: repeated M creates none).
  int64_t created() const;
  // oneDNN's implementation name for bucket m (creates it if needed).
  absl::StatusOr<std::string> ImplName(int64_t m) const;

 private:
  struct Bucket;
  FixedMatmuls(const PackedMatrix& w, const float* bias, Activation act, MatmulPrecision precision);
  absl::StatusOr<std::shared_ptr<const Bucket>> Get(int64_t m) const;
  absl::StatusOr<std::shared_ptr<const Bucket>> Make(int64_t m) const;
  absl::Status SelfCheck(int64_t m) const;
  // f32, or bf16 for bf16 weights (rows rounded in Run).
  dnnl::memory::data_type SourceType() const;

  const PackedMatrix& w_;
  const float* bias_;
  Activation act_;
  MatmulPrecision precision_;
  dnnl::memory weights_;  // wraps w_'s panels, BA16a32b (f32) or BA16a32b2a (bf16)
  dnnl::memory bias_mem_;
  mutable absl::Mutex mu_;
  mutable std::array<std::shared_ptr<const Bucket>, kBuckets> buckets_
      ABSL_GUARDED_BY(mu_);
  mutable int64_t created_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_FIXED_MATMUL_H_
