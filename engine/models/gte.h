// Alibaba's GTE encoders from a Hugging Face directory: `model_type` "new"
// (the hub's checkpoints, Alibaba-NLP/new-impl's remote code:
// gte-base-en-v1.5, gte-large-en-v1.5, gte-multilingual-base,
// gte-multilingual-reranker-base) and "gte" (transformers 5's own
// GteModel, the community copies): BERT's post-norm layers with rotary
// positions (optionally NTK-scaled), a GeGLU feed-forward (up and gate
// without biases, down with one) and biased attention projections
// (BertConfig's rotary_theta / rotary_scale / gate_activation); a
// sequence classifier's head is BERT's pooler (dense, tanh on the first
// token) and classifier.
#ifndef ATTNSERVE_ENGINE_MODELS_GTE_H_
#define ATTNSERVE_ENGINE_MODELS_GTE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

// Whether `model_type` is one of GTE's.
bool IsGteModelType(const std::string& model_type);

// config.json in either layout: the remote code's (rope_theta, rope_scaling
// {"type": "ntk", "factor"}, position_embedding_type, layer_norm_type,
// logn_attention_*) or transformers 5's (rope_parameters). Variants the
// hub's GTE models do not use (absolute positions, RMSNorm, log-n attention
// scaling, mixed NTK, other activations or rope types) are refused naming
// the key.
absl::StatusOr<BertConfig> ParseGteConfig(const HfConfig& config);

// The checkpoint's tensors (embeddings.*, encoder.layer.N.attention.qkv_proj
// (or q_proj / k_proj / v_proj unpacked), attention.o_proj, attn_ln,
// mlp.up_gate_proj, mlp.down_proj, mlp_ln; pooler.dense and classifier for
// a classifier; under "new." or "gte." in a task model's file) seen under
// BERT's names. Views into `weights`, which must outlive the result.
absl::StatusOr<std::unique_ptr<SafetensorsArchive>> GteWeightsAsBert(const SafetensorsArchive& weights,
                                                                     const BertConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_GTE_H_
