// Nomic BERT from a Hugging Face directory (`model_type` "nomic_bert":
// nomic-embed-text-v1 / v1.5 and their fine-tunes, CodeRankEmbed): BERT's
// post-norm layers with rotary positions, a SwiGLU feed-forward and no
// projection biases (BertConfig's rotary_theta / gate_activation / projection_bias),
// read from either config layout and the one tensor layout such a
// checkpoint has.
#ifndef ATTNSERVE_ENGINE_MODELS_NOMIC_BERT_H_
#define ATTNSERVE_ENGINE_MODELS_NOMIC_BERT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

// config.json in the layout the hub's checkpoints have (Nomic's remote
// code: GPT-2's n_embd / n_head / n_layer / n_inner / n_positions,
// rotary_emb_base, activation_function) or transformers 5's (hidden_size,
// ..., rope_parameters). Variants nomic-embed-text does not use (pre-norm,
// partial or interleaved rotary, dynamic NTK scaling, mixtures of experts,
// projection biases, a plain GELU MLP) and classification heads are refused
// naming the key.
absl::StatusOr<BertConfig> ParseNomicBertConfig(const HfConfig& config);

// The checkpoint's tensors (emb_ln, encoder.layers.N.attn.Wqkv, attn.out_proj,
// norm1, mlp.fc11 (up), mlp.fc12 (gate), mlp.fc2, norm2: what both Nomic's
// code and transformers 5's save_pretrained write) seen under the BERT names
// BertEncoder::Load reads, the fused Wqkv as its three row blocks. Views
// into `weights`, which must outlive the result. NOT_FOUND or
// INVALID_ARGUMENT naming the checkpoint's own tensor when one is missing or
// misshapen.
absl::StatusOr<std::unique_ptr<SafetensorsArchive>> NomicBertWeightsAsBert(const SafetensorsArchive& weights,
                                                                           const BertConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_NOMIC_BERT_H_
