// The "oneDNN matmul for the inner loops" variant of attention, kept as a
// measured benchmark peer (issue #3 asks for the loser's numbers): per
// (batch, head) job, S = (Q * scale) · Kᵀ through one oneDNN matmul
// primitive, an AVX2 row softmax, then O = P · V through a second primitive.
// The [Nq, Nk] score block of one head is materialised per thread (no
// online softmax), which is how a GEMM library does attention without a
// fused kernel. Non-causal, no masks; Q/K/V/out contiguous [B, H, N, d] f32.
#ifndef ATTNSERVE_BENCH_ATTENTION_ONEDNN_MATMUL_SDPA_H_
#define ATTNSERVE_BENCH_ATTENTION_ONEDNN_MATMUL_SDPA_H_

#include <memory>
#include <string>

namespace attnserve::bench {

class MatmulSdpa {
 public:
  // Builds the two primitives once; nullptr (and *why) on a oneDNN error.
  static std::unique_ptr<MatmulSdpa> Create(int batch, int heads, int kv_heads, int q_len,
                                            int kv_len, int head_dim, std::string* why);
  ~MatmulSdpa();
  // Runs every (batch, head) job, OpenMP-parallel; oneDNN runs each small
  // GEMM single-threaded inside the parallel region.
  void Run(const float* q, const float* k, const float* v, float* out);

 private:
  MatmulSdpa() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnserve::bench

#endif  // ATTNSERVE_BENCH_ATTENTION_ONEDNN_MATMUL_SDPA_H_
