#include "engine/models/deberta_attention.h"

#include <algorithm>
#include <cstring>

#include "engine/core/tensor.h"
#include "engine/models/deberta.h"

namespace attnserve {
namespace {

std::vector<PackedMatrix> PackHeads(const float* table, int64_t row_stride, int64_t rows, int heads,
                                    int head_dim) {
  std::vector<PackedMatrix> packed;
  if (table == nullptr) return packed;
  packed.reserve(heads);
  Tensor head = Tensor::Empty({rows, head_dim});
  for (int h = 0; h < heads; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(head.f32() + r * head_dim, table + r * row_stride + int64_t{h} * head_dim,
                  sizeof(float) * head_dim);
    }
    packed.push_back(PackedMatrix::Pack(head, DType::kF32));
  }
  return packed;
}

}  // namespace

std::vector<int32_t> DebertaPositionIndex(const DebertaConfig& config, int n) {
  const int span = config.span();
  std::vector<int32_t> index(2 * static_cast<size_t>(n) - 1);
  for (int r = 0; r < 2 * n - 1; ++r) {
    const int relative = r - (n - 1);  // query index - key index
    const int bucket = config.position_buckets > 0
                           ? DebertaLogBucketPosition(relative, config.position_buckets, config.max_relative_positions)
                           : relative;
    index[r] = std::clamp(bucket + span, 0, 2 * span - 1);
  }
  return index;
}

DisentangledAttentionBias DisentangledAttentionBias::Create(const float* pos_query, const float* pos_key,
                                                            int64_t row_stride, int64_t rows, int heads,
                                                            int head_dim) {
  DisentangledAttentionBias bias;
  bias.heads_ = heads;
  bias.head_dim_ = head_dim;
  bias.rows_ = rows;
  bias.pos_query_ = PackHeads(pos_query, row_stride, rows, heads, head_dim);
  bias.pos_key_ = PackHeads(pos_key, row_stride, rows, heads, head_dim);
  return bias;
}

int64_t DisentangledAttentionBias::bytes() const {
  int64_t bytes = 0;
  for (const PackedMatrix& m : pos_query_) bytes += m.bytes();
  for (const PackedMatrix& m : pos_key_) bytes += m.bytes();
  return bytes;
}

void DisentangledAttentionBias::Fill(const DisentangledBatch& in, const int32_t* index, float scale, float* planes,
                                     float* scratch) const {
  const int64_t w = rows_;
  const int64_t d = int64_t{heads_} * head_dim_;
  const int64_t row3 = 3 * d;
  const int n = in.max_len;
  const bool c2p = !pos_key_.empty(), p2c = !pos_query_.empty();
  float* content_to_position = scratch;             // [T, w]: Q_i · PK_h[r]
  float* position_to_content = scratch + in.total * w;  // [T, w]: K_j · PQ_h[r]
  for (int h = 0; h < heads_; ++h) {
    if (c2p) {
      PackedGemm(in.qkv + int64_t{h} * head_dim_, in.total, row3, pos_key_[h], nullptr, Activation::kNone,
                 content_to_position, w);
    }
    if (p2c) {
      PackedGemm(in.qkv + d + int64_t{h} * head_dim_, in.total, row3, pos_query_[h], nullptr, Activation::kNone,
                 position_to_content, w);
    }
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < in.total; ++t) {
      const int b = static_cast<int>(std::upper_bound(in.starts, in.starts + in.batch, t) - in.starts) - 1;
      const int64_t start = in.starts[b];
      const int len = in.lengths[b];
      const int i = static_cast<int>(t - start);
      float* out = planes + ((int64_t{b} * heads_ + h) * n + i) * n;
      const int32_t* idx = index + i + n - 1;  // idx[-j]: relative position i - j
      const float* c2p_row = content_to_position + t * w;
      for (int j = 0; j < len; ++j) {
        const int32_t r = idx[-j];
        float v = c2p ? c2p_row[r] : 0.0f;
        if (p2c) v += position_to_content[(start + j) * w + r];
        out[j] = v * scale;
      }
      std::fill(out + len, out + n, 0.0f);
    }
  }
}

}  // namespace attnserve
