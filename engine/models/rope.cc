#include "engine/models/rope.h"

#include <cmath>

#include "engine/core/status_macros.h"

namespace attnserve {

absl::StatusOr<Rope> Rope::Create(const DecoderConfig& config) {
  Rope r;
  ASSIGN_OR_RETURN(r.inv_freq_, RopeInvFreq(config));
  r.head_dim_ = config.head_dim;
  r.rope_dim_ = static_cast<int>(r.inv_freq_.size()) * 2;
  r.pairing_ = config.rope_pairing;
  return r;
}

void Rope::Angles(int pos, float* cos_sin) const {
  const int half = rope_dim_ / 2;
  const float p = static_cast<float>(pos);
  for (int i = 0; i < half; ++i) {
    const float a = p * inv_freq_[i];
    cos_sin[i] = std::cos(a);
    cos_sin[half + i] = std::sin(a);
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
