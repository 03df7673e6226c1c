// The masked-language-model head of BertForMaskedLM and
// DistilBertForMaskedLM, and SPLADE's pooling of its vocabulary logits
// (sentence-transformers' SparseEncoder: MLMTransformer + SpladePooling),
// what a sparse embedding model (naver/splade-v3, splade-cocondenser,
// opensearch-neural-sparse-encoding) answers with:
//
//   logits[t] = decoder(LayerNorm(gelu(transform(hidden[t]))))   [V]
//   value[v]  = max_t (or sum_t) act(logits[t][v]),  act(x) = log(1 + relu(x))
//               (activation "log1p_relu": log(1 + log(1 + relu(x))))
//
// BERT: transform "cls.predictions.transform.dense", LayerNorm
// "cls.predictions.transform.LayerNorm" (config layer_norm_eps), decoder
// "cls.predictions.decoder.weight" or, tied as checkpoints save it, the word
// embeddings; bias "cls.predictions.bias". DistilBERT: "vocab_transform",
// "vocab_layer_norm" (eps 1e-12), "vocab_projector" (or the tied word
// embeddings). The decoder is a [V, D] product per token, three layers' worth
// at BERT-base's sizes: callers run it over a few rows at a time (an
// EncodeJob spreads it over slices, so generate steps interleave), and it
// runs in chunks of kRowsPerChunk tokens so the [chunk, V] logits stay small.
//
// Immutable after Load; Pool is const and thread-safe.
#ifndef ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_
#define ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/ops/linear.h"

namespace attnserve {

// sentence-transformers' SpladePooling configuration (1_SpladePooling/config.json).
struct SpladePoolingConfig {
  bool sum = false;         // pooling_strategy "sum"; "max" otherwise
  bool double_log = false;  // activation_function "log1p_relu"; "relu" otherwise
};

class MlmHead {
 public:
  static constexpr int kRowsPerChunk = 16;

  // prefix: the encoder tensors' prefix ("bert.", "distilbert.", ""), where
  // the tied word embeddings are. Errors name the file, the tensor and shapes.
  static absl::StatusOr<MlmHead> Load(const SafetensorsArchive& weights, const std::string& prefix,
                                      const BertConfig& config, MatmulPrecision precision);

  int vocab_size() const { return vocab_; }
  // Pools the n token rows hidden[n, D] into out[V], which holds the pooling
  // of the sequence's earlier rows (zeros before the first: every term is
  // >= 0, so 0 is the identity of max and sum).
  absl::Status Accumulate(const SpladePoolingConfig& pooling, const float* hidden, int n, float* out) const;
  // Multiply-adds per token row (transform and decoder).
  int64_t MacsPerRow() const { return int64_t{hidden_} * (hidden_ + vocab_); }
  int64_t weight_bytes() const;
  // The scratch one Pool call allocates.
  int64_t ScratchBytes() const;

 private:
  int hidden_ = 0;
  int vocab_ = 0;
  float eps_ = 1e-12f;
  Linear transform_;             // [D, D] + bias, gelu fused
  Tensor norm_g_, norm_b_;       // [D]
  Linear decoder_;               // [V, D] + bias

  MlmHead(Linear transform, Linear decoder) : transform_(std::move(transform)), decoder_(std::move(decoder)) {}
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_
