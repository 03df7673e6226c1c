// BertEncoder: the BERT encoder forward (post-LN), f32 compute, f32 or bf16
// weight storage; also RoBERTa's, MPNet's and DeBERTa-v2's (bert_config.h).
//
//   x = LayerNorm(word[id] + position[pos] + token_type[segment])
//   per layer: x = LayerNorm(x + O(Attention(Q, K, V, key padding mask
//                                            [+ MPNet's relative position bias,
//                                             DeBERTa's disentangled bias])))
//              x = LayerNorm(x + W2 GELU_erf(W1 x))
//
// A batch is B sequences of different lengths, packed: every GEMM runs on the
// T = sum(lengths) real tokens only, and so does attention — ragged, on the
// packed rows (SdpaArgs::row_offsets, with the per-sequence key lengths), so
// there is no padding to reach a real token and none to copy or compute.
//
// A forward can also run in slices (BertForwardJob), so that a caller (the
// server's scheduler) can put other work between them and no slice takes
// long: slice 0 is the embeddings, then three per layer of roughly equal cost
// (attention block: QKV GEMM + attention + output GEMM + LayerNorm; FFN up
// with GELU; FFN down + LayerNorm). Forward is Begin + every slice + Finish,
// so a sliced run is bit-identical to a whole one.
//
// Immutable after Load; Forward and Begin are const and thread-safe (buffers
// per call).
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/attention/attention_types.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/models/classifier_head.h"
#include "engine/models/deberta_attention.h"
#include "engine/models/encoder_forward.h"
#include "engine/models/mlm_head.h"
#include "engine/models/rope.h"
#include "engine/ops/linear.h"

namespace attnserve {

struct BertForwardRequest {
  bool hidden_states = false;          // keep the embeddings output and every layer's output
  std::vector<int> attention_layers;   // layers whose attention weights to keep
  bool average_heads = false;          // [B, Nmax, Nmax] instead of [B, H, Nmax, Nmax]
};

class BertEncoder;

// One forward in flight: the batch's activations and the next slice to run.
// Made by BertEncoder::Begin; must not outlive that encoder.
// Thread-compatible: one thread at a time.
class BertForwardJob : public EncoderForwardJob {
 public:
  BertForwardJob(const BertForwardJob&) = delete;
  BertForwardJob& operator=(const BertForwardJob&) = delete;

  int slices_total() const override { return 1 + 3 * num_layers_; }
  int slices_done() const override { return next_slice_; }
  absl::Status RunSlice() override;
  absl::Status Finish(EncoderForwardResult* result) override;

 private:
  friend class BertEncoder;
  BertForwardJob() = default;
  absl::Status Embed();
  // The attention of `sequences` sequences from `first` (-1: the whole
  // batch, the only case that keeps attention weights).
  absl::Status SelfAttention(int li, AttentionMasks masks, int first = 0, int sequences = -1);
  // DeBERTa's attention with its disentangled bias (see the .cc).
  absl::Status DisentangledAttention(int li);
  // Rotary models (ModernBERT, Nomic BERT): every row's query and key heads
  // in qkv_ rotated by the row's position in its sequence, `angles` one
  // [positions, head_dim] table of cos and sin.
  void RotateQueriesAndKeys(const Tensor& angles);
  absl::Status AttentionBlock(int li);
  absl::Status FeedForwardUp(int li);
  absl::Status FeedForwardDown(int li);
  // ModernBERT's (modernbert.cc).
  void ModernEmbed();
  absl::Status ModernAttentionBlock(int li);
  absl::Status ModernFeedForwardUp(int li);
  absl::Status ModernFeedForwardDown(int li);

  const BertEncoder* model_ = nullptr;
  BertForwardRequest request_;
  int num_layers_ = 0;
  int batch_ = 0;
  int max_len_ = 0;
  int64_t total_ = 0;
  std::vector<int32_t> token_ids_;  // [T] packed
  std::vector<int32_t> type_ids_;   // [T] packed, or empty: every token is segment 0
  std::vector<int32_t> lengths_;    // [B]; also the attention key lengths
  std::vector<int64_t> starts_;     // [B] first packed row of each sequence (attention's row offsets)
  Tensor x_, qkv_, ctx_, tmp_, ff_;  // [T, D], [T, 3D], [T, D], [T, D], [T, I]
  Tensor embedded_;                 // ELECTRA with embedding_size != D: [T, E] before the projection
  Tensor position_bias_;            // MPNet, ALiBi: [H, 2 Nmax - 1] by distance; empty otherwise
  Tensor glu_;                      // ModernBERT and SwiGLU: [T, I] (ff_ is then [T, 2I])
  // DeBERTa's disentangled attention: one sequence's bias planes [H, Nmax,
  // Nmax], the GEMMs' scratch and the relative positions' table rows.
  Tensor disentangled_planes_, disentangled_scratch_;
  std::vector<int32_t> position_index_;
  EncoderForwardResult result_;
  int next_slice_ = 0;
  bool finished_ = false;
  absl::Status error_;
};

class BertEncoder {
 public:
  // Reads every tensor (names with or without a "bert." prefix), checking
  // shapes against the config; errors name the file, the tensor and both
  // shapes. precision: see engine/ops/matmul_precision.h.
  static absl::StatusOr<std::unique_ptr<BertEncoder>> Load(
      const SafetensorsArchive& weights, const BertConfig& config, DType storage,
      MatmulPrecision precision = MatmulPrecision::kF32);

  // token_ids: the B sequences concatenated; lengths: [B], each in
  // [1, config.max_sequence_length()], summing to token_ids.size(); ids in [0, vocab).
  // type_ids: each token's segment (token_type_ids) in [0, type_vocab_size),
  // as many as token_ids, or empty for all 0 (single texts).
  absl::Status Forward(absl::Span<const int32_t> token_ids, absl::Span<const int32_t> lengths,
                       const BertForwardRequest& request, EncoderForwardResult* result,
                       absl::Span<const int32_t> type_ids = {}) const;
  // The same forward, to be run slice by slice (see BertForwardJob). Checks
  // the inputs as Forward does, before any compute.
  absl::StatusOr<std::unique_ptr<BertForwardJob>> Begin(absl::Span<const int32_t> token_ids,
                                                        absl::Span<const int32_t> lengths,
                                                        const BertForwardRequest& request,
                                                        absl::Span<const int32_t> type_ids = {}) const;

  const BertConfig& config() const { return config_; }
  // The sequence-classification head when config().labels is not empty
  // (BertForSequenceClassification), else null.
  const ClassifierHead* classifier() const { return classifier_.has_value() ? &*classifier_ : nullptr; }
  // The masked-language-model head when config().masked_lm_head, else null.
  const MlmHead* mlm_head() const { return mlm_head_.has_value() ? &*mlm_head_ : nullptr; }
  DType storage() const { return storage_; }
  int64_t weight_bytes() const;
  // Creates every oneDNN primitive the projections could use
  // (Linear::CreateAllPrimitives), so no forward pays for one.
  absl::Status CreateAllPrimitives() const;
  // Bytes of activations a forward of batch_size sequences of seq_len tokens
  // allocates (without optional hidden states / attention weights).
  int64_t ScratchBytes(int batch_size, int seq_len) const;

 private:
  struct Layer {
    Linear qkv;    // [3D, D]: query, key, value fused
    Linear out;    // [D, D]
    Linear ff1;    // [I, D], GELU(erf) fused; ModernBERT: Wi [2I, D], nothing fused
    Linear ff2;    // [D, I]
    // ModernBERT: attn_norm (empty in layer 0) and mlp_norm, applied before
    // the block; the others: after it.
    Tensor ln1_g, ln1_b, ln2_g, ln2_b;
  };
  friend class BertForwardJob;
  BertEncoder() = default;
  // Each head's attention bias by distance for sequences of up to n tokens,
  // [H, 2n - 1] (entry j - i + n - 1; AdditiveMask::by_distance): MPNet's
  // relative_attention_bias[bucket(j - i)], or ALiBi's -slope_h · |j - i|.
  Tensor DistanceBias(int n) const;
  // ModernBERT's tensors (modernbert.cc), under prefix p.
  // The rotary angle tables of a rotary BERT (rotary_theta > 0).
  absl::Status LoadRotary();
  absl::Status LoadModernBert(const SafetensorsArchive& w, const std::string& p, DType storage,
                              MatmulPrecision precision);
  // DeBERTa's relative position table through every layer's projections
  // (disentangled_), after the layers are loaded.
  absl::Status LoadDisentangled(const SafetensorsArchive& w, const std::string& p, DType storage,
                                MatmulPrecision precision);

  BertConfig config_;
  DType storage_ = DType::kF32;
  Tensor word_, position_, token_type_;   // storage dtype; token_type_ empty without a table (MPNet)
  Tensor relative_bias_;                  // MPNet: [buckets, H] f32; empty otherwise
  Tensor emb_ln_g_, emb_ln_b_;            // [E]
  std::optional<Linear> embeddings_project_;  // ELECTRA: [D, E] when E != D
  // ModernBERT: the final norm, rotary angles of every position for the
  // global and local thetas ([P, head_dim]) and the rotation.
  Tensor final_ln_g_, final_ln_b_;
  Tensor rope_global_, rope_local_;
  std::optional<Rope> rope_;
  std::vector<Layer> layers_;
  std::vector<DisentangledAttentionBias> disentangled_;  // DeBERTa: per layer; empty otherwise
  std::optional<ClassifierHead> classifier_;
  std::optional<MlmHead> mlm_head_;
};

// transformers' MPNet relative_position_bucket (T5's, bidirectional) for
// relative_position = key index - query index: 32 buckets, half for keys
// before the query and half after; distances under 8 exact, then
// logarithmic up to 128 (computed in float32, as torch does).
int MpnetRelativePositionBucket(int relative_position);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_H_
