// DecoderWeights: every tensor of a decoder-only model in one canonical
// in-memory form, whatever the file format was.
//
// Layout: every matrix is [out_features, in_features] row-major (PyTorch
// nn.Linear layout; y = x W^T), so engine/ops/linear.h takes it as is.
// GPT-2's Conv1D weights ([in, out]) are TRANSPOSED at load, and its fused
// c_attn is split into q/k/v. GGUF matrices (ne = [in, out]) are already this
// memory layout.
// Storage dtype: matrices (embeddings, lm_head, q/k/v/o, gate/up/down) are in
// the weight dtype asked of the loader (f32, bf16 or q8_0; F16/BF16 and
// llama.cpp's block quantisations in the file are converted at load, a
// tensor at a time). q8_0 holds a matrix as its rows' Q8_0 blocks: a Q8_0
// file's as they are (never expanded), others quantised as ggml does, so the
// load's peak is the mapped file and the Q8_0 model (repacked a layer at a
// time by DecoderModel), not the f32 model; a
// matrix whose rows are not a multiple of 32 stays f32 (MatrixStorage), as
// does a learned position table. 1-D tensors (norm weights/biases, linear
// biases) are always f32.
// Optional tensors (biases, gate for GPT-2, position_embedding for rope
// models, lm_head when tied) are empty Tensors (Tensor::empty()).
// Q/K rows are as stored in the file: see DecoderConfig::rope_pairing.
#ifndef ATTNSERVE_ENGINE_FORMATS_DECODER_WEIGHTS_H_
#define ATTNSERVE_ENGINE_FORMATS_DECODER_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/tensor.h"
#include "engine/formats/decoder_config.h"

namespace attnserve {

// One expert of a mixture (SwiGLU): down(silu(gate x) * up x).
struct DecoderExpertWeights {
  Tensor gate_weight;  // [intermediate, hidden]
  Tensor up_weight;    // [intermediate, hidden]
  Tensor down_weight;  // [hidden, intermediate]
};

struct DecoderLayerWeights {
  Tensor attn_norm_weight;  // [hidden] f32
  Tensor attn_norm_bias;    // [hidden] f32, LayerNorm only
  Tensor q_weight;          // [num_heads * head_dim, hidden]
  Tensor k_weight;          // [num_kv_heads * head_dim, hidden]
  Tensor v_weight;          // [num_kv_heads * head_dim, hidden]
  Tensor q_bias;            // [num_heads * head_dim] f32, if qkv_bias
  Tensor k_bias;            // [num_kv_heads * head_dim] f32, if qkv_bias
  Tensor v_bias;            // [num_kv_heads * head_dim] f32, if qkv_bias
  Tensor q_norm_weight;     // [head_dim] f32, if qk_norm (Qwen3)
  Tensor k_norm_weight;     // [head_dim] f32, if qk_norm (Qwen3)
  Tensor o_weight;          // [hidden, num_heads * head_dim]
  Tensor o_bias;            // [hidden] f32, if attn_out_bias
  Tensor mlp_norm_weight;   // [hidden] f32
  Tensor post_attn_norm_weight;  // [hidden] f32, sandwich_norms (Gemma 2/3) only
  Tensor post_mlp_norm_weight;   // [hidden] f32, sandwich_norms only
  Tensor mlp_norm_bias;     // [hidden] f32, LayerNorm only
  Tensor gate_weight;       // [intermediate, hidden], SwiGLU only
  Tensor gate_bias;         // [intermediate] f32, SwiGLU with mlp_bias
  Tensor up_weight;         // [intermediate, hidden] (GPT-2: c_fc)
  Tensor up_bias;           // [intermediate] f32, if mlp_bias
  Tensor down_weight;       // [hidden, intermediate] (GPT-2: mlp.c_proj)
  Tensor down_bias;         // [hidden] f32, if mlp_bias
  // A mixture of experts (config.num_experts > 0) instead of gate/up/down:
  // the router is always f32 (its top-k choice is what a rounding would
  // change), the experts in the weight dtype.
  Tensor router_weight;  // [num_experts, hidden] f32
  std::vector<DecoderExpertWeights> experts;
  // Qwen2-MoE's shared expert ([shared_expert_size, hidden] ...) and its
  // sigmoid gate (hidden values, f32).
  DecoderExpertWeights shared_expert;
  Tensor shared_gate_weight;
};

struct DecoderWeights {
  Tensor token_embedding;     // [vocab, hidden]
  Tensor position_embedding;  // [max_positions, hidden], learned positions only
  std::vector<DecoderLayerWeights> layers;
  Tensor final_norm_weight;  // [hidden] f32
  Tensor final_norm_bias;    // [hidden] f32, LayerNorm only
  Tensor lm_head;            // [vocab, hidden]; empty when tie_word_embeddings

  // The lm head to use: lm_head, or token_embedding when tied.
  const Tensor& LmHead() const { return lm_head.empty() ? token_embedding : lm_head; }
  // Bytes of all tensors held.
  int64_t TotalBytes() const;
};

// The dtype a matrix of `shape` is held in for the loader's weight dtype
// `md`: md, but f32 for q8_0 when a row is not a multiple of 32 values.
DType MatrixStorage(DType md, const std::vector<int64_t>& shape);

// Checks every tensor's presence, shape and dtype against the config; the
// error names the tensor (e.g. "layers.3.k_weight: shape [64, 64], want
// [32, 64]").
absl::Status ValidateDecoderWeights(const DecoderConfig& config, const DecoderWeights& weights,
                                    DType matrix_dtype);

class GgufFile;
class SafetensorsArchive;

// Reads every tensor the config calls for from a GGUF file (llama.cpp tensor
// names: token_embd, blk.N.attn_q, ..., output; a mixture's ffn_gate_inp
// and stacked ffn_{gate,up,down}_exps, read an expert at a time) and
// validates it.
absl::StatusOr<DecoderWeights> LoadDecoderWeightsFromGguf(const GgufFile& gguf, const DecoderConfig& config,
                                                          DType matrix_dtype);
// Same from Hugging Face safetensors (model.embed_tokens..., or GPT-2's
// transformer.wte..., with or without the "transformer." prefix; Mixtral's
// block_sparse_moe.experts.E.w1/w3/w2, Qwen3-MoE's
// mlp.experts.E.gate_proj/up_proj/down_proj).
absl::StatusOr<DecoderWeights> LoadDecoderWeightsFromHf(const SafetensorsArchive& archive,
                                                        const DecoderConfig& config, DType matrix_dtype);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_DECODER_WEIGHTS_H_
