#include "engine/models/rope.h"

#include <algorithm>
#include <cmath>

#include "engine/core/status_macros.h"

namespace attnserve {

absl::StatusOr<Rope> Rope::Create(const DecoderConfig& config) {
  Rope r;
  ASSIGN_OR_RETURN(r.inv_freq_, RopeInvFreq(config));
  r.head_dim_ = config.head_dim;
  r.rope_dim_ = static_cast<int>(r.inv_freq_.size()) * 2;
  r.pairing_ = config.rope_pairing;
  r.attn_factor_ = RopeAttentionScaling(config);
  r.dynamic_ = config.rope_scaling.kind == RopeScalingKind::kDynamicNtk;
  if (r.dynamic_) r.config_ = config;
  return r;
}

void Rope::AnglesWith(const float* inv_freq, int pos, float* cos_sin) const {
  const int half = rope_dim_ / 2;
  const float p = static_cast<float>(pos);
  for (int i = 0; i < half; ++i) {
    const float a = p * inv_freq[i];
    // HF: cos = emb.cos() * attention_scaling (likewise sin), in float.
    cos_sin[i] = std::cos(a) * attn_factor_;
    cos_sin[half + i] = std::sin(a) * attn_factor_;
  }
}

void Rope::Angles(int pos, float* cos_sin, int seq_len) const {
  if (dynamic_ && std::max(seq_len, pos + 1) > config_.max_positions) {
    const std::vector<float> inv = RopeInvFreqForLength(config_, std::max(seq_len, pos + 1));
    AnglesWith(inv.data(), pos, cos_sin);
    return;
  }
  AnglesWith(inv_freq_.data(), pos, cos_sin);
}

void Rope::BatchAngles(const ForwardBatch& batch, float* cos_sin) const {
  std::vector<float> inv;
  for (int s = 0; s < batch.num_seqs(); ++s) {
    const int begin = batch.seq_start[s], end = batch.seq_start[s + 1];
    if (begin == end) continue;
    const float* freqs = inv_freq_.data();
    const int seq_len = batch.positions[end - 1] + 1;
    if (dynamic_ && seq_len > config_.max_positions) {
      inv = RopeInvFreqForLength(config_, seq_len);
      freqs = inv.data();
    }
    for (int t = begin; t < end; ++t) {
      AnglesWith(freqs, batch.positions[t], cos_sin + static_cast<int64_t>(t) * rope_dim_);
    }
  }
}

void Rope::Rotate(float* x, int num_heads, const float* cos_sin) const {
  const int half = rope_dim_ / 2;
  const float* c = cos_sin;
  const float* s = cos_sin + half;
  for (int h = 0; h < num_heads; ++h) {
    float* xh = x + static_cast<int64_t>(h) * head_dim_;
    if (pairing_ == RopePairing::kAdjacent) {
      for (int i = 0; i < half; ++i) {
        const float x0 = xh[2 * i], x1 = xh[2 * i + 1];
        xh[2 * i] = x0 * c[i] - x1 * s[i];
        xh[2 * i + 1] = x0 * s[i] + x1 * c[i];
      }
    } else {
      for (int i = 0; i < half; ++i) {
        const float x0 = xh[i], x1 = xh[i + half];
        xh[i] = x0 * c[i] - x1 * s[i];
        xh[i + half] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

void Rope::Apply(float* x, int num_heads, int pos, float* cos_sin) const {
  Angles(pos, cos_sin);
  Rotate(x, num_heads, cos_sin);
}

}  // namespace attnserve
