// Rotary position embedding applied in place to the heads of one token.
// Pairing (which elements rotate together) comes from DecoderConfig: see the
// long comment in engine/formats/decoder_config.h. Inverse frequencies (with
// rope scaling) come from RopeInvFreq(); the angle is float(pos) * inv_freq,
// cos/sin in float, as Hugging Face computes them.
#ifndef ATTNSERVE_ENGINE_MODELS_ROPE_H_
#define ATTNSERVE_ENGINE_MODELS_ROPE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/formats/decoder_config.h"

namespace attnserve {

class Rope {
 public:
  // Unimplemented for scaling kinds RopeInvFreq does not support.
  static absl::StatusOr<Rope> Create(const DecoderConfig& config);

  // x: num_heads heads of head_dim floats, rotated for position `pos`.
  // `cos_sin` is caller scratch of rope_dim floats.
  void Apply(float* x, int num_heads, int pos, float* cos_sin) const;
  // Fills cos_sin ([rope_dim/2 cos, rope_dim/2 sin]) for `pos`.
  void Angles(int pos, float* cos_sin) const;
  // Rotates with precomputed angles.
  void Rotate(float* x, int num_heads, const float* cos_sin) const;

  int rope_dim() const { return rope_dim_; }

 private:
  std::vector<float> inv_freq_;
  int head_dim_ = 0;
  int rope_dim_ = 0;
  RopePairing pairing_ = RopePairing::kHalfSplit;
  float attn_factor_ = 1.0f;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_ROPE_H_
