// Multi-head attention module, PyTorch nn.MultiheadAttention semantics
// (batch_first, inference: no dropout).
//
//   Q = query·W_Qᵀ + b_Q, K = key·W_Kᵀ + b_K, V = value·W_Vᵀ + b_V
//   heads: d = D / H; O_h = SDPA(Q_h, K_h, V_h); concat(O_h) · W_Oᵀ + b_O
//
// Input [B, Nq, D] (query), [B, Nk, kdim] (key), [B, Nk, vdim] (value);
// output [B, Nq, D]. Heads are never transposed in memory: projections write
// [B, N, H, d] and attention reads it through strided views.
// Thread-safe for concurrent Forward calls (immutable after Create).
#ifndef ATTNSERVE_ENGINE_ATTENTION_MULTI_HEAD_ATTENTION_H_
#define ATTNSERVE_ENGINE_ATTENTION_MULTI_HEAD_ATTENTION_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/attention/attention_types.h"
#include "engine/core/tensor.h"
#include "engine/ops/linear.h"

namespace attnserve {

struct MhaConfig {
  int embed_dim = 0;   // D
  int num_heads = 0;   // H; D % H must be 0
  int kdim = 0;        // 0: D
  int vdim = 0;        // 0: D
  DType weight_storage = DType::kF32;
};

using TensorMap = std::map<std::string, Tensor, std::less<>>;

class MultiHeadAttention {
 public:
  // From a PyTorch nn.MultiheadAttention state dict (names under `prefix`):
  // in_proj_weight [3D, D] (fused; only when kdim == vdim == D) or
  // q_proj_weight [D, D], k_proj_weight [D, kdim], v_proj_weight [D, vdim];
  // in_proj_bias [3D] (optional); out_proj.weight [D, D]; out_proj.bias [D]
  // (optional). Errors name the missing or mis-shaped tensor.
  // With in_proj_weight, both the fused [3D, D] projection (self-attention:
  // one GEMM) and the separate Q/K/V projections (cross-attention) are kept:
  // twice the in-projection memory, traded for one GEMM per call.
  static absl::StatusOr<MultiHeadAttention> FromStateDict(const MhaConfig& config,
                                                          const TensorMap& state,
                                                          absl::string_view prefix = "");

  struct Inputs {
    const float* query = nullptr;  // [B, Nq, D]
    const float* key = nullptr;    // [B, Nk, kdim]; == query for self-attention
    const float* value = nullptr;  // [B, Nk, vdim]
    int batch_size = 0;
    int q_len = 0;
    int kv_len = 0;
    AttentionMasks masks;  // allow-convention (see torch_compat.h)
    AttentionWeightsMode weights_mode = AttentionWeightsMode::kNone;
  };
  // out: [B, Nq, D]. weights: [B, H, Nq, Nk] or [B, Nq, Nk] when asked.
  absl::Status Forward(const Inputs& in, float* out, float* weights = nullptr) const;

  const MhaConfig& config() const { return config_; }
  int head_dim() const { return config_.embed_dim / config_.num_heads; }

 private:
  MultiHeadAttention() = default;
  MhaConfig config_;
  std::optional<Linear> qkv_;  // fused [3D, D]
  std::optional<Linear> q_, k_, v_;
  std::optional<Linear> out_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_MULTI_HEAD_ATTENTION_H_
