// ModelDescription: what a loaded model is, for logs, metrics and the API's
// model listing. Shared by the encoder and the decoders. Plain data.
#ifndef ATTNSERVE_ENGINE_MODELS_MODEL_DESCRIPTION_H_
#define ATTNSERVE_ENGINE_MODELS_MODEL_DESCRIPTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/ops/matmul_precision.h"

namespace attnserve {

struct ModelDescription {
  std::string name;          // directory or file name
  std::string architecture;  // "bert", "llama", "gpt2", "qwen2"
  std::string source;        // path loaded from
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int hidden_size = 0;
  // An encoder's pooled vector size when sentence-transformers Dense modules
  // change it (their last out_features); 0: hidden_size.
  int embedding_size = 0;
  int vocab_size = 0;
  int max_positions = 0;
  DType weight_dtype = DType::kF32;
  MatmulPrecision matmul_precision = MatmulPrecision::kF32;  // what the projections may round to
  DType kv_dtype = DType::kF32;      // decoders only
  int64_t weight_bytes = 0;          // bytes of weights held in memory
  int64_t kv_bytes_per_token = 0;    // 2 * layers * kv_heads * head_dim * dtype bytes; 0 for encoders
  // A mixture of experts' experts per layer and those a token runs; 0 for a
  // dense model.
  int num_experts = 0;
  int experts_per_token = 0;
  // An encoder with a sequence-classification head (a cross-encoder /
  // reranker, or a classifier): its labels in id order. Empty otherwise.
  std::vector<std::string> labels;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_MODEL_DESCRIPTION_H_
