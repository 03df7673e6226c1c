// DecoderConfig: the one canonical description of a decoder-only transformer
// (Llama family incl. Mistral-like, Qwen2 and Qwen3, and GPT-2), filled either from
// GGUF metadata (llama.* / qwen2.* / gpt2.* keys) or from a Hugging Face
// config.json. The runtime builds ONE decoder block type from these options;
// nothing downstream looks at the file format again.
//
// ROPE PAIRING (read this before writing rotary code). Two conventions exist
// for which elements of a head form a rotated (x0, x1) pair:
//   * kHalfSplit ("neox", what Hugging Face Llama/Qwen2 use): pair i is
//     (x[i], x[i + rope_dim/2]) for i < rope_dim/2, frequency index i.
//   * kAdjacent ("normal", llama.cpp rope type 0, llama2.c run.c): pair i is
//     (x[2i], x[2i+1]), frequency index i.
// Both use inv_freq[i] = rope_theta^(-2i/rope_dim) (then rope scaling).
// llama.cpp's convert_hf_to_gguf.py PERMUTES the rows of Q and K of
// `llama` models so that adjacent-pair rope on the permuted weights equals
// half-split rope on the HF weights. We keep weights exactly as stored, so:
//   HF directory (any arch)          -> kHalfSplit
//   GGUF general.architecture=llama  -> kAdjacent (incl. stories260K, whose
//                                       llama2.c weights were never permuted
//                                       and are trained for adjacent pairs)
//   GGUF qwen2                       -> kHalfSplit (llama.cpp: NEOX, no permute)
//   GPT-2                            -> no rope (positions = kLearned)
// Pairing only decides which elements form a pair; the runtime must honour
// `rope_pairing`, never guess from the architecture name.
//
// ROPE SCALING, as Hugging Face transformers 5.24 (modeling_rope_utils.py):
//   kLinear, kLlama3: fixed inverse frequencies (RopeInvFreq).
//   kYarn: fixed inverse frequencies (interpolation blended with
//     extrapolation by a linear ramp over the correction range from
//     beta_fast / beta_slow) plus an attention scaling that multiplies cos
//     and sin (RopeAttentionScaling; so q.k grows by its square).
//   kDynamicNtk: the base depends on the sequence length once it exceeds
//     max_positions (HF's max_position_embeddings, not
//     original_max_position_embeddings): RopeInvFreqForLength. How lengths
//     map to forwards (whole prompt vs incremental decode) is described in
//     engine/models/rope.h.
//   kLongRope (Phi-3 / Phi-3.5's "longrope", "su"): inv_freq[i] =
//     1 / (ext[i] * theta^(2i / rope_dim)) with ext the short or the long
//     factor list, and cos / sin times attention_factor (default
//     sqrt(1 + ln(factor) / ln(original_max_position_embeddings))).
//     transformers picks the list by the sequence's length (long past
//     original_max_position_embeddings, recomputing the cache when a
//     sequence crosses it); we pick it once for the served context, as
//     llama.cpp does (long when the context exceeds the original one):
//     `use_long`, set by DecoderModel from the context it serves.
// The runtime should use these functions rather than recomputing.
#ifndef ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_
#define ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"

namespace attnserve {

// kLlama covers mistral, qwen2, qwen3, phi3, smollm3, the Gemmas, granite, olmo2 and
// the mixtures of experts (mixtral, qwen2_moe, qwen3_moe, granitemoe, olmoe).
enum class DecoderArch : uint8_t { kLlama, kGpt2 };
enum class NormKind : uint8_t { kRmsNorm, kLayerNorm };
// SwiGLU: down(silu(gate x) * up x); GeGLU (Gemma): down(gelu_tanh(gate x) * up x);
// GeluTanh (GPT-2): down(gelu_tanh(up x)).
enum class MlpKind : uint8_t { kSwiGlu, kGeluTanh, kGeGlu };
enum class PositionKind : uint8_t { kRope, kLearned };
enum class RopePairing : uint8_t { kHalfSplit, kAdjacent };
enum class RopeScalingKind : uint8_t { kNone, kLinear, kDynamicNtk, kLlama3, kYarn, kLongRope };

const char* RopeScalingKindName(RopeScalingKind kind);
const char* RopePairingName(RopePairing pairing);

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  float factor = 1.0f;
  // llama3 / yarn / dynamic: the context the base model was trained with.
  int original_max_positions = 0;
  // llama3.
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  // yarn.
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  bool truncate = true;  // floor/ceil the correction range (HF `truncate`)
  // The factor cos/sin are multiplied by: for yarn HF's attention_factor,
  // resolved at parse time (explicit attention_factor, else the mscale /
  // mscale_all_dim ratio, else 0.1 ln(factor) + 1); for longrope its
  // attention_factor (GGUF rope.scaling.attn_factor); 1 for the other kinds.
  float attn_factor = 1.0f;
  // longrope: the per-frequency divisors, rope_dim / 2 each, and which one
  // the frequencies use.
  std::vector<float> short_factor;
  std::vector<float> long_factor;
  bool use_long = false;
};

struct DecoderConfig {
  DecoderArch arch = DecoderArch::kLlama;
  std::string architecture;  // as named by the file: "llama", "qwen2", "mistral", "gpt2"
  std::string name;          // general.name or the directory name

  int hidden_size = 0;        // d_model
  int intermediate_size = 0;  // FFN inner size
  int num_layers = 0;
  int num_heads = 0;     // query heads
  int num_kv_heads = 0;  // == num_heads for MHA (GPT-2)
  int head_dim = 0;      // usually hidden_size / num_heads
  int vocab_size = 0;    // rows of the embedding / lm head
  // Context length the file declares (GGUF *.context_length, HF
  // max_position_embeddings / n_positions). For GPT-2 it is also the number
  // of learned position rows.
  int max_positions = 0;
  // Context the model was trained with, when known to differ (stories260K's
  // GGUF says 128, the model was trained with 512). Equal to max_positions
  // otherwise. Serving may allow up to this many positions for rope models.
  int trained_max_positions = 0;

  NormKind norm = NormKind::kRmsNorm;
  float norm_eps = 1e-5f;
  MlpKind mlp = MlpKind::kSwiGlu;
  PositionKind positions = PositionKind::kRope;

  // Rope (positions == kRope only).
  float rope_theta = 10000.0f;
  int rope_dim = 0;  // rotated dims per head (== head_dim unless partial rotary)
  RopePairing rope_pairing = RopePairing::kHalfSplit;
  RopeScaling rope_scaling;
  // Which layers rotate q and k (num_layers entries); empty: every layer.
  // SmolLM3's no_rope_layers (a NoPE layer every 4th by default).
  std::vector<bool> rope_layers;
  // Per-frequency divisors (GGUF `rope_freqs.weight`, how llama.cpp stores
  // llama3 scaling): inv_freq[i] /= rope_freq_factors[i]. Empty: none.
  std::vector<float> rope_freq_factors;

  bool qkv_bias = false;       // Qwen2, GPT-2, Llama attention_bias=true
  // Qwen3: each q and k head is RMS-normalised over head_dim (weights
  // q_norm / k_norm, eps norm_eps) after the projection, before rope.
  bool qk_norm = false;
  // OLMo 2 / OLMoE: q and k each RMS-normalised over the whole projection
  // (q_norm [num_heads * head_dim], k_norm [num_kv_heads * head_dim]), eps
  // norm_eps, before rope.
  bool qk_norm_whole = false;
  // > 0: q, k and v clamped to [-clip_qkv, clip_qkv] after the projection and
  // its norms (OLMoE's clip_qkv).
  float clip_qkv = 0.0f;
  // false: no norm before attention and the MLP, only the sandwich_norms
  // after them (OLMo 2).
  bool pre_norms = true;
  bool attn_out_bias = false;  // GPT-2 (and Llama attention_bias=true)
  bool mlp_bias = false;       // GPT-2
  bool norm_bias = false;      // LayerNorm has a bias (GPT-2)
  bool tie_word_embeddings = false;  // lm head == token embedding (weights.lm_head empty)

  // Granite: > 0, each sub-layer's output (attention, MLP) is multiplied by
  // residual_scale before its residual add (residual_multiplier), and the
  // logits are divided by logit_scale (logits_scaling). Granite's
  // embedding_multiplier and attention_multiplier are embedding_scale and
  // attn_scale below.
  float residual_scale = 0.0f;
  float logit_scale = 0.0f;

  // Mixture of experts (Mixtral, Qwen3-MoE, Granite MoE): every layer's MLP is
  // num_experts SwiGLU experts, each of intermediate_size, and a router
  // ([num_experts, hidden]); a token runs the experts_per_token experts with
  // the highest softmax(router logits), their outputs summed with those
  // probabilities as weights, divided by their sum when norm_topk_prob
  // (always for Mixtral; Qwen3-MoE's norm_topk_prob). 0: a dense MLP.
  int num_experts = 0;
  int experts_per_token = 0;
  bool norm_topk_prob = true;
  // > 0: a shared expert of this width runs for every token besides the
  // routed ones, its output times sigmoid(shared gate . x) (Qwen2-MoE).
  int shared_expert_size = 0;

  // Gemma. RMSNorm scales by (norm_weight_offset + weight): 1 for a Hugging
  // Face Gemma checkpoint, 0 for GGUF (llama.cpp's converter adds the 1).
  float norm_weight_offset = 0.0f;
  // > 0: token embeddings are multiplied by it (Gemma: sqrt(hidden_size),
  // rounded to f32 as transformers does); the tied LM head is not.
  float embedding_scale = 0.0f;
  // Gemma 2/3: a norm on the attention output and one on the MLP output,
  // each before its residual add (besides the usual pre-norms).
  bool sandwich_norms = false;
  // Attention score scale; 0 means 1/sqrt(head_dim). Gemma 3:
  // query_pre_attn_scalar^-0.5.
  float attn_scale = 0.0f;
  // > 0: the sliding-window layers rotate with this base and no scaling
  // (Gemma 3's local rope), the others with rope_theta and rope_scaling.
  float local_rope_theta = 0.0f;
  // > 0: logits = cap * tanh(logits / cap) (Gemma 2/3's final_logit_softcapping).
  float final_logit_softcap = 0.0f;
  // Every token attends to every other (EmbeddingGemma's
  // use_bidirectional_attention; a sliding layer then sees |i - j| <=
  // sliding_window / 2). Embedders only: a decoder refuses it.
  bool bidirectional = false;
  // > 0: each scaled attention score s becomes cap * tanh(s / cap) before the
  // mask and softmax (Gemma 2's attn_logit_softcapping).
  float attn_logit_softcap = 0.0f;

  // Sliding-window attention (Mistral v0.1, Qwen2/Qwen3 with
  // use_sliding_window): a token at position p of a windowed layer attends
  // to keys at positions (p - sliding_window, p], itself and the
  // sliding_window - 1 before it, as transformers' sliding_window_overlay
  // (kv_idx > q_idx - sliding_window). 0: no window anywhere.
  int sliding_window = 0;
  // Which layers use it (num_layers entries; empty: none). Qwen2/Qwen3's
  // layer_types, or layers >= max_window_layers; every layer for Mistral.
  std::vector<bool> sliding_layers;

  // Special ids from the model config (-1: none). Stop ids for generation are
  // eos_token_ids (all ids that end a sequence; includes eos_token_id).
  int bos_token_id = -1;
  int eos_token_id = -1;
  std::vector<int> eos_token_ids;

  // Checks internal consistency (positive sizes, heads divide, ...).
  absl::Status Validate() const;
  // 2 * num_layers * num_kv_heads * head_dim * DTypeSize(kv_dtype).
  int64_t KvBytesPerToken(DType kv_dtype) const;
  // The window of `layer` (keys a token sees, itself included), 0 for full
  // attention.
  int LayerWindow(int layer) const;
  // The window when every layer has it (Mistral v0.1), else 0: only then
  // can a KV block, which holds every layer, be given back once a
  // sequence's positions have all left the window.
  int UniformWindow() const;
  std::string DebugString() const;
};

class GgufFile;
class HfConfig;

// From GGUF metadata (general.architecture llama / qwen2 / qwen2moe / qwen3moe / phi3 /
// granite / granitemoe / olmo2 / olmoe / smollm3 / gpt2 ... and its keys; *.expert_count for a mixture of experts) plus tensor presence (biases, output.weight, rope_freqs.weight,
// phi3's rope_factors_long / rope_factors_short.weight).
absl::StatusOr<DecoderConfig> DecoderConfigFromGguf(const GgufFile& gguf);
// From a Hugging Face config.json (model_type llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, phi3,
// olmo2, olmoe, smollm3, granite,
// granitemoe, gemma, gemma2, gemma3_text, gpt2).
absl::StatusOr<DecoderConfig> DecoderConfigFromHf(const HfConfig& hf);

// Inverse rotary frequencies, rope_dim/2 of them, frequency index i for pair
// i (pairing per rope_pairing), with rope_scaling applied (none, linear,
// llama3, yarn, longrope's chosen factors, rope_freq_factors). For dynamic NTK: the frequencies for
// sequences up to max_positions (the unscaled ones, as HF at init).
absl::StatusOr<std::vector<float>> RopeInvFreq(const DecoderConfig& config);

// Dynamic NTK: the inverse frequencies for a forward whose longest sequence
// is `seq_len` tokens (HF _compute_dynamic_ntk_parameters: base *=
// (factor * L / max_positions - (factor - 1))^(dim / (dim - 2)) with
// L = max(seq_len, max_positions), in float32 as HF computes it). Other kinds
// ignore seq_len. `config` must be valid (Validate()) with rope positions.
std::vector<float> RopeInvFreqForLength(const DecoderConfig& config, int seq_len);

// The factor cos and sin are multiplied by (yarn's attention factor; 1 for
// every other kind).
float RopeAttentionScaling(const DecoderConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_
