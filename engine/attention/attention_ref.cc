#include "engine/attention/attention_ref.h"

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <vector>

#include "engine/core/half.h"

namespace attnserve {
namespace {

double Load(const ConstAttnView& view, int b, int h, int n, int c) {
  int64_t off = b * view.batch_stride + h * view.head_stride + n * view.row_stride + c;
  if (view.dtype == DType::kBF16) return Bf16ToFloat(static_cast<const uint16_t*>(view.data)[off]);
  return static_cast<const float*>(view.data)[off];
}

}  // namespace

absl::Status ScaledDotProductAttentionRef(const SdpaArgs& a) {
  const SdpaShape& s = a.shape;
  const int group = s.num_heads / s.num_kv_heads;
  const double scale =
      a.options.scale != 0.0f ? a.options.scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  const AttentionMasks& mk = a.masks;
  const int64_t nq = s.q_len, nk = s.kv_len;
  if (a.options.weights == AttentionWeightsMode::kAveraged) {
    for (int64_t i = 0; i < int64_t{s.batch_size} * nq * nk; ++i) a.weights[i] = 0.0f;
  }
  std::vector<double> score(nk), prob(nk);
  std::vector<bool> visible(nk);
  for (int b = 0; b < s.batch_size; ++b) {
    for (int h = 0; h < s.num_heads; ++h) {
      const int hk = h / group;
      for (int i = 0; i < nq; ++i) {
        double mx = -INFINITY;
        for (int j = 0; j < nk; ++j) {
          bool vis = true;
          if (mk.key_lengths && j >= mk.key_lengths[b]) vis = false;
          if (mk.key_allow.data && !mk.key_allow.data[b * nk + j]) vis = false;
          if (mk.causal && j > i + nk - nq) vis = false;
          if (mk.window >= 0 && std::abs(i - j) > mk.window) vis = false;
          if (mk.allow.data && !mk.allow.data[(mk.allow.per_batch ? b * nq * nk : 0) + i * nk + j])
            vis = false;
          double sc = 0;
          for (int c = 0; c < s.head_dim; ++c) sc += Load(a.q, b, h, i, c) * Load(a.k, b, hk, j, c);
          sc *= scale;
          if (mk.additive.data && mk.additive.by_distance) {
            const int64_t row = nq + nk - 1;
            sc += mk.additive.data[(mk.additive.per_head ? h * row : 0) + (j - i + nq - 1)];
          } else if (mk.additive.data) {
            int64_t off = i * nk + j;
            if (mk.additive.per_batch) {
              off += mk.additive.per_head ? (int64_t{b} * s.num_heads + h) * nq * nk : b * nq * nk;
            } else if (mk.additive.per_head) {
              off += int64_t{h} * nq * nk;
            }
            sc += mk.additive.data[off];
          }
          if (std::isinf(sc) && sc < 0) vis = false;
          visible[j] = vis;
          score[j] = sc;
          if (vis) mx = std::max(mx, sc);
        }
        double sum = 0;
        for (int j = 0; j < nk; ++j) {
          prob[j] = visible[j] ? std::exp(score[j] - mx) : 0.0;
          sum += prob[j];
        }
        for (int j = 0; j < nk; ++j) prob[j] = sum > 0 ? prob[j] / sum : 0.0;
        float* out = a.out.data + b * a.out.batch_stride + h * a.out.head_stride + i * a.out.row_stride;
        for (int c = 0; c < s.head_dim; ++c) {
          double acc = 0;
          for (int j = 0; j < nk; ++j)
            if (prob[j] != 0) acc += prob[j] * Load(a.v, b, hk, j, c);
          out[c] = static_cast<float>(acc);
        }
        if (a.options.weights == AttentionWeightsMode::kPerHead) {
          float* w = a.weights + ((int64_t{b} * s.num_heads + h) * nq + i) * nk;
          for (int j = 0; j < nk; ++j) w[j] = static_cast<float>(prob[j]);
        } else if (a.options.weights == AttentionWeightsMode::kAveraged) {
          float* w = a.weights + (int64_t{b} * nq + i) * nk;
          for (int j = 0; j < nk; ++j) w[j] += static_cast<float>(prob[j] / s.num_heads);
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace attnserve
