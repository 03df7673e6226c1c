// DecoderConfig: the one canonical description of a decoder-only transformer
// (Llama family incl. Mistral-like and Qwen2, and GPT-2), filled either from
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
// ROPE SCALING. kLinear and kLlama3 change the inverse frequencies and are
// implemented by RopeInvFreq() below (the runtime should use it rather than
// recomputing). kDynamicNtk and kYarn are parsed and validated; RopeInvFreq()
// returns an Unimplemented status for them so a model needing them fails at
// load with a clear reason instead of producing wrong text.
#ifndef ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_
#define ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/tensor.h"

namespace attnserve {

enum class DecoderArch : uint8_t { kLlama, kGpt2 };  // kLlama covers mistral, qwen2
enum class NormKind : uint8_t { kRmsNorm, kLayerNorm };
enum class MlpKind : uint8_t { kSwiGlu, kGeluTanh };  // SwiGLU: down(silu(gate x) * up x)
enum class PositionKind : uint8_t { kRope, kLearned };
enum class RopePairing : uint8_t { kHalfSplit, kAdjacent };
enum class RopeScalingKind : uint8_t { kNone, kLinear, kDynamicNtk, kLlama3, kYarn };

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
  float attn_factor = 1.0f;
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
  // Per-frequency divisors (GGUF `rope_freqs.weight`, how llama.cpp stores
  // llama3 scaling): inv_freq[i] /= rope_freq_factors[i]. Empty: none.
  std::vector<float> rope_freq_factors;

  bool qkv_bias = false;       // Qwen2, GPT-2, Llama attention_bias=true
  bool attn_out_bias = false;  // GPT-2 (and Llama attention_bias=true)
  bool mlp_bias = false;       // GPT-2
  bool norm_bias = false;      // LayerNorm has a bias (GPT-2)
  bool tie_word_embeddings = false;  // lm head == token embedding (weights.lm_head empty)

  // Special ids from the model config (-1: none). Stop ids for generation are
  // eos_token_ids (all ids that end a sequence; includes eos_token_id).
  int bos_token_id = -1;
  int eos_token_id = -1;
  std::vector<int> eos_token_ids;

  // Checks internal consistency (positive sizes, heads divide, ...).
  absl::Status Validate() const;
  // 2 * num_layers * num_kv_heads * head_dim * DTypeSize(kv_dtype).
  int64_t KvBytesPerToken(DType kv_dtype) const;
  std::string DebugString() const;
};

class GgufFile;
class HfConfig;

// From GGUF metadata (general.architecture llama / qwen2 / gpt2 and its
// keys) plus tensor presence (biases, output.weight, rope_freqs.weight).
absl::StatusOr<DecoderConfig> DecoderConfigFromGguf(const GgufFile& gguf);
// From a Hugging Face config.json (model_type llama, mistral, qwen2, gpt2).
absl::StatusOr<DecoderConfig> DecoderConfigFromHf(const HfConfig& hf);

// Inverse rotary frequencies, rope_dim/2 of them, frequency index i for pair
// i (pairing per rope_pairing), with rope_scaling applied (none, linear,
// llama3, rope_freq_factors). Unimplemented for dynamic NTK and yarn.
absl::StatusOr<std::vector<float>> RopeInvFreq(const DecoderConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_DECODER_CONFIG_H_
