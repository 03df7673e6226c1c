// BertEncoder: the BERT encoder forward (post-LN), f32 compute, f32 or bf16
// weight storage.
//
//   x = LayerNorm(word[id] + position[pos] + token_type[0])
//   per layer: x = LayerNorm(x + O(Attention(Q, K, V, key padding mask)))
//              x = LayerNorm(x + W2 GELU_erf(W1 x))
//
// A batch is B sequences of different lengths, packed: every GEMM runs on the
// T = sum(lengths) real tokens only; attention runs on a zero-padded
// [B, Nmax] layout with the attention engine's per-sequence key-length mask,
// so padding never reaches a real token.
//
// Immutable after Load; Forward is const and thread-safe (buffers per call).
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/ops/linear.h"

namespace attnserve {

struct BertForwardRequest {
  bool hidden_states = false;          // keep the embeddings output and every layer's output
  std::vector<int> attention_layers;   // layers whose attention weights to keep
  bool average_heads = false;          // [B, Nmax, Nmax] instead of [B, H, Nmax, Nmax]
};

struct BertForwardResult {
  Tensor last_hidden;                  // [T, D], packed in input order
  std::vector<Tensor> hidden_states;   // L + 1 x [T, D] when asked
  // (layer, [B, H, Nmax, Nmax] or [B, Nmax, Nmax]) when asked; rows and
  // columns past a sequence's length are padding.
  std::vector<std::pair<int, Tensor>> attentions;
};

class BertEncoder {
 public:
  // Reads every tensor (names with or without a "bert." prefix), checking
  // shapes against the config; errors name the file, the tensor and both
  // shapes.
  static absl::StatusOr<std::unique_ptr<BertEncoder>> Load(const SafetensorsArchive& weights,
                                                           const BertConfig& config, DType storage);

  // token_ids: the B sequences concatenated; lengths: [B], each in
  // [1, max_positions], summing to token_ids.size(); ids in [0, vocab).
  absl::Status Forward(absl::Span<const int32_t> token_ids, absl::Span<const int32_t> lengths,
                       const BertForwardRequest& request, BertForwardResult* result) const;

  const BertConfig& config() const { return config_; }
  DType storage() const { return storage_; }
  int64_t weight_bytes() const;
  // Bytes of activations a forward of batch_size sequences of seq_len tokens
  // allocates (without optional hidden states / attention weights).
  int64_t ScratchBytes(int batch_size, int seq_len) const;

 private:
  struct Layer {
    Linear qkv;    // [3D, D]: query, key, value fused
    Linear out;    // [D, D]
    Linear ff1;    // [I, D], GELU(erf) fused
    Linear ff2;    // [D, I]
    Tensor ln1_g, ln1_b, ln2_g, ln2_b;
  };
  BertEncoder() = default;

  BertConfig config_;
  DType storage_ = DType::kF32;
  Tensor word_, position_, token_type_;   // storage dtype
  Tensor emb_ln_g_, emb_ln_b_;
  std::vector<Layer> layers_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_H_
