// The oneDNN 3.7 Graph API SDPA partition, as a benchmark peer:
// MatMul(Q, Kᵀ) -> Divide(scale) -> Add(mask) -> SoftMax -> MatMul(V).
// GQA uses the 5-D [B, Hkv, Hq/Hkv, N, d] form of oneDNN's examples/graph/gqa.cpp.
// oneDNN 3.7 has no built-in causal mask: causal runs the full square with an
// additive -inf upper triangle.
#ifndef ATTNSERVE_BENCH_ATTENTION_ONEDNN_GRAPH_SDPA_H_
#define ATTNSERVE_BENCH_ATTENTION_ONEDNN_GRAPH_SDPA_H_

#include <memory>
#include <string>

namespace attnserve::bench {

class GraphSdpa {
 public:
  // Compiles one partition; returns nullptr (and fills *why) if oneDNN does
  // not fuse the pattern into one partition.
  static std::unique_ptr<GraphSdpa> Create(int batch, int heads, int kv_heads, int q_len,
                                           int kv_len, int head_dim, bool causal,
                                           std::string* why);
  ~GraphSdpa();
  // q [B, Hq, Nq, d], k/v [B, Hkv, Nk, d], out [B, Hq, Nq, d], all f32.
  void Run(float* q, float* k, float* v, float* out);

 private:
  GraphSdpa() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnserve::bench

#endif  // ATTNSERVE_BENCH_ATTENTION_ONEDNN_GRAPH_SDPA_H_
