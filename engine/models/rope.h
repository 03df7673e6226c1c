// Rotary position embedding applied in place to the heads of one token.
// Pairing (which elements rotate together) comes from DecoderConfig: see the
// long comment in engine/formats/decoder_config.h. Inverse frequencies (with
// rope scaling) come from RopeInvFreq(); the angle is float(pos) * inv_freq,
// cos/sin in float and multiplied by the attention scaling (yarn's mscale,
// 1 otherwise), as Hugging Face's LlamaRotaryEmbedding computes them.
//
// DYNAMIC NTK (rope_type "dynamic"). Hugging Face recomputes the rope base
// inside each forward from seq_len = max(position_ids) + 1 once that exceeds
// max_position_embeddings, and rotates every query/key of that forward with
// the new frequencies; keys already in the cache keep the rotation they were
// stored with. We do the same per sequence and per forward (BatchAngles):
// the tokens a sequence feeds in one step all use the base for
// seq_len = (its last position in the step) + 1. So
//   * one whole-prompt forward equals HF's whole-sequence forward exactly;
//   * token-by-token decode equals HF generate() with its cache (each new
//     token at position p uses the base for p + 1, cached keys keep theirs);
//   * a prompt split into chunks (chunked prefill) uses, for each chunk, the
//     base for that chunk's end, so it differs from one whole-prompt forward
//     once the prompt passes max_position_embeddings (as HF would if fed the
//     same chunks).
// HF's module is also stateful across calls (it keeps the largest seq_len
// seen until a forward shorter than max_position_embeddings resets it); we
// do not copy that: the base depends only on the sequence's own positions,
// which keeps results independent of other requests in the batch.
#ifndef ATTNSERVE_ENGINE_MODELS_ROPE_H_
#define ATTNSERVE_ENGINE_MODELS_ROPE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/formats/decoder_config.h"
#include "engine/models/decoder_batch.h"

namespace attnserve {

class Rope {
 public:
  // Unimplemented for scaling kinds RopeInvFreq does not support.
  static absl::StatusOr<Rope> Create(const DecoderConfig& config);

  // x: num_heads heads of head_dim floats, rotated for position `pos` in a
  // sequence whose current forward ends at `pos` (see dynamic NTK above).
  // `cos_sin` is caller scratch of rope_dim floats.
  void Apply(float* x, int num_heads, int pos, float* cos_sin) const;
  // Fills cos_sin ([rope_dim/2 cos, rope_dim/2 sin]) for `pos`, in a forward
  // of the sequence that ends at position seq_len - 1 (0: at `pos`).
  void Angles(int pos, float* cos_sin, int seq_len = 0) const;
  // Angles for every token of `batch`, [num_tokens, rope_dim], each
  // sequence's tokens with that sequence's dynamic-NTK base.
  void BatchAngles(const ForwardBatch& batch, float* cos_sin) const;
  // Rotates with precomputed angles.
  void Rotate(float* x, int num_heads, const float* cos_sin) const;

  int rope_dim() const { return rope_dim_; }
  float attention_scaling() const { return attn_factor_; }

 private:
  // Angles from an explicit inverse-frequency table.
  void AnglesWith(const float* inv_freq, int pos, float* cos_sin) const;

  DecoderConfig config_;  // for dynamic NTK's per-length frequencies
  std::vector<float> inv_freq_;
  int head_dim_ = 0;
  int rope_dim_ = 0;
  RopePairing pairing_ = RopePairing::kHalfSplit;
  float attn_factor_ = 1.0f;
  bool dynamic_ = false;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_ROPE_H_
