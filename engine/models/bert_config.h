// BERT hyper-parameters from a Hugging Face config.json (model_type "bert"
// and the BERT-shaped families that share its weights layout).
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"

namespace attnserve {

struct BertConfig {
  int hidden_size = 0;        // D
  int num_layers = 0;         // L
  int num_heads = 0;          // H; head_dim = D / H
  int intermediate_size = 0;  // feed-forward width
  int vocab_size = 0;
  int max_positions = 0;      // max_position_embeddings
  int type_vocab_size = 0;
  float layer_norm_eps = 1e-12f;
  int head_dim() const { return hidden_size / num_heads; }
};

// Validates every field (ranges, D % H == 0, hidden_act "gelu",
// position_embedding_type "absolute"); errors name config.json and the field.
absl::StatusOr<BertConfig> ParseBertConfig(const HfConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_
