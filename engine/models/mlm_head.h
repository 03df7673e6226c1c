// The masked-language-model head of BertForMaskedLM and
// DistilBertForMaskedLM, and SPLADE's pooling of its vocabulary logits
// (sentence-transformers' SparseEncoder: MLMTransformer + SpladePooling),
// what a sparse embedding model (naver/splade-v3, splade-cocondenser,
// opensearch-neural-sparse-encoding) answers with:
//
//   x[t]      = LayerNorm(gelu(transform(hidden[t])))               [D]
//   logits[t] = decoder(x[t])                                        [V]
//   value[v]  = max_t (or sum_t) act(logits[t][v]),  act(x) = log(1 + relu(x))
//               (activation "log1p_relu": log(1 + log(1 + relu(x))))
//
// BERT: transform "cls.predictions.transform.dense", LayerNorm
// "cls.predictions.transform.LayerNorm" (config layer_norm_eps), decoder
// "cls.predictions.decoder.weight" or, tied as checkpoints save it, the word
// embeddings; bias "cls.predictions.bias". DistilBERT: "vocab_transform",
// "vocab_layer_norm" (eps 1e-12), "vocab_projector" (or the tied word
// embeddings).
//
// The decoder is a [V, D] product per token, about three layers' worth at
// BERT-base's sizes, and its weights (94 MB f32 there) are what it reads. It
// is held as blocks of vocabulary rows, each about a third of a layer's
// multiply-adds per token: a block runs over every token of a batch at once
// (each read of its weights serving kRowsPerChunk tokens), and an
// EncodeJob runs one block per slice, so generate steps interleave.
//
// Immutable after Load; the methods are const and thread-safe.
#ifndef ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_
#define ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_

#include <cstdint>
#include <string>
#include <vector>

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
  // Token rows per decoder product: bounds the [rows, block] logits.
  static constexpr int kRowsPerChunk = 64;

  // prefix: the encoder tensors' prefix ("bert.", "distilbert.", ""), where
  // the tied word embeddings are. Errors name the file, the tensor and shapes.
  static absl::StatusOr<MlmHead> Load(const SafetensorsArchive& weights, const std::string& prefix,
                                      const BertConfig& config, MatmulPrecision precision);

  int vocab_size() const { return vocab_; }
  int hidden_size() const { return hidden_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // x[n, D] = LayerNorm(gelu(transform(hidden[n, D]))).
  absl::Status Transform(const float* hidden, int64_t n, float* x) const;
  // Pools block `block`'s vocabulary entries of the n transformed rows x[n, D]
  // into row_out[r] (row r's sequence's [V] vector, holding the pooling of
  // what came before: zeros at first, as every term is >= 0).
  absl::Status AccumulateBlock(const SpladePoolingConfig& pooling, int block, const float* x, int64_t n,
                               float* const* row_out) const;
  int64_t weight_bytes() const;
  // The scratch one AccumulateBlock call allocates.
  int64_t ScratchBytes() const;

 private:
  explicit MlmHead(Linear transform) : transform_(std::move(transform)) {}

  int hidden_ = 0;
  int vocab_ = 0;
  int block_rows_ = 0;           // vocabulary rows per block (the last may have fewer)
  float eps_ = 1e-12f;
  Linear transform_;             // [D, D] + bias, gelu fused
  Tensor norm_g_, norm_b_;       // [D]
  std::vector<Linear> blocks_;   // [block_rows, D] + bias each
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_MLM_HEAD_H_
