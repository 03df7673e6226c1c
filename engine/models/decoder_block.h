// DecoderBlock: the one pre-norm transformer decoder block behind every
// supported family, configured by DecoderConfig options rather than copied
// per family:
//   norm      RMSNorm (Llama) | LayerNorm with bias (GPT-2)
//   positions rotary, adjacent or half-split pairs, rope scaling (Llama) |
//             none here (GPT-2 adds learned positions to the embeddings)
//   attention GQA (Hkv divides Hq; MHA when equal), optional QKV bias
//             (Qwen2, GPT-2), optional output bias, optional RMSNorm of
//             each q and k head (Qwen3) or of the whole q and k (OLMo 2,
//             OLMoE) before rope; K/V go to the paged cache
//   mlp       SwiGLU down(silu(gate x) * up x) | GELU-tanh down(gelu(up x)) |
//             a mixture of SwiGLU experts (Mixtral, Qwen3-MoE): a router
//             picks each token's top experts_per_token, whose outputs are
//             summed with the router's (renormalised) probabilities, plus
//             Qwen2-MoE's shared expert gated by a sigmoid
//
// Projections are oneDNN matmuls (engine/ops/linear.h), Q/K/V fused into one
// and gate/up fused into one so a step runs 4 GEMMs per block.
// Immutable after Create; Forward is const and may run for different batches
// from different threads only with different scratch and caches.
#ifndef ATTNSERVE_ENGINE_MODELS_DECODER_BLOCK_H_
#define ATTNSERVE_ENGINE_MODELS_DECODER_BLOCK_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/attention/kv_layout.h"
#include "engine/formats/decoder_config.h"
#include "engine/formats/decoder_weights.h"
#include "engine/kv/kv_cache.h"
#include "engine/models/decoder_batch.h"
#include "engine/models/rope.h"
#include "engine/ops/linear.h"

namespace attnserve {

// Per-step working memory, grown on demand and reused across steps.
struct DecoderScratch {
  std::vector<float> hidden;   // [T, D] residual stream
  std::vector<float> normed;   // [T, D]
  std::vector<float> qkv;      // [T, (Hq + 2 Hkv) d]
  std::vector<float> attn;     // [T, Hq d]
  std::vector<float> proj;     // [T, D]
  std::vector<float> mlp_in;   // [T, 2 I]
  std::vector<float> mlp_act;  // [T, I]
  std::vector<float> rope;     // [T, rope_dim] cos/sin per token
  std::vector<float> local_rope;  // the same for the local rope (Gemma 3's sliding layers)
  std::vector<float> q;        // [T, Hq d] queries, contiguous for paged attention
  std::vector<PagedKvSequence> kv_seqs;  // [S] block tables for paged attention
  // ForwardUncached: each sequence's first packed row and its length.
  std::vector<int64_t> row_starts;
  std::vector<int32_t> seq_lengths;
  // A mixture of experts: router logits [T, E]; each token's chosen experts
  // and their weights [T, k]; the (token, choice) pairs grouped by expert
  // (expert_start [E + 1] into expert_rows [T k]); one expert's tokens
  // gathered [n, D] and its output [n, D].
  std::vector<float> router_logits;
  std::vector<int32_t> expert_choice;
  std::vector<float> expert_weight;
  std::vector<int32_t> expert_start;
  std::vector<int32_t> expert_rows;
  std::vector<float> expert_in;
  std::vector<float> expert_out;

  // Bytes the buffers hold (their capacities: they grow to the largest
  // step and are kept).
  int64_t HeldBytes() const;
};

class DecoderBlock {
 public:
  static absl::StatusOr<DecoderBlock> Create(const DecoderConfig& config,
                                             const DecoderLayerWeights& weights, DType storage,
                                             MatmulPrecision precision, int layer_index);

  // hidden [T, D] is updated in place: h += attn(norm(h)); h += mlp(norm(h)).
  // Writes this layer's K/V of every token of `batch` into `kv` (blocks must
  // be reserved), then attends over each sequence's cached positions (the
  // last config.LayerWindow(layer) of them in a sliding-window layer).
  // `rope_angles` holds [T, rope_dim] cos/sin from rope->Angles (both null
  // for learned positions).
  absl::Status Forward(const ForwardBatch& batch, KvCache& kv, const Rope* rope,
                       const float* rope_angles, DecoderScratch& scratch) const;

  // The same block over whole sequences that attend only to themselves,
  // each from position 0 (an embedder's forward, causal_forward.h):
  // attention runs on the fused QKV rows by the ragged causal SDPA and no
  // cache is written. batch.positions must be 0.. within each sequence.
  absl::Status ForwardUncached(const ForwardBatch& batch, const Rope* rope, const float* rope_angles,
                               DecoderScratch& scratch) const;

  int64_t weight_bytes() const;
  // Creates every oneDNN primitive this block's projections could use
  // (Linear::CreateAllPrimitives).
  absl::Status CreateAllPrimitives() const;

 private:
  DecoderBlock() = default;
  void Norm(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t rows,
            float* y) const;
  void PreNorm(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t rows,
               float* y) const;
  absl::Status ProjectQkv(int64_t T, const Rope* rope, const float* rope_angles, DecoderScratch& sc) const;
  absl::Status OutputAndMlp(int64_t T, DecoderScratch& sc) const;
  // sc.proj = the mixture's output for sc.normed's T rows.
  absl::Status MixtureOfExperts(int64_t T, DecoderScratch& sc) const;
  void WriteKv(const ForwardBatch& batch, KvCache& kv, const float* qkv) const;
  absl::Status Attend(const ForwardBatch& batch, const KvCache& kv, DecoderScratch& scratch) const;

  const DecoderConfig* config_ = nullptr;  // owned by the model, outlives blocks
  int layer_ = 0;
  int window_ = 0;  // sliding window of this layer (config.LayerWindow), 0 for full attention
  int hidden_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, inter_ = 0;
  std::vector<float> attn_norm_w_, attn_norm_b_, mlp_norm_w_, mlp_norm_b_;
  std::vector<float> q_norm_w_, k_norm_w_;  // qk_norm (Qwen3, Gemma 3) only, [head_dim]
  std::vector<float> post_attn_norm_w_, post_mlp_norm_w_;  // sandwich_norms (Gemma 2/3) only
  std::optional<Linear> qkv_, out_, gate_up_, down_;  // gate_up_ / down_ empty in a mixture
  // A mixture of experts: the f32 router and each expert's gate_up / down.
  std::optional<Linear> router_;
  std::vector<Linear> expert_gate_up_, expert_down_;
  // Qwen2-MoE's shared expert and its sigmoid gate ([hidden]).
  std::optional<Linear> shared_gate_up_, shared_down_;
  std::vector<float> shared_gate_w_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_DECODER_BLOCK_H_
