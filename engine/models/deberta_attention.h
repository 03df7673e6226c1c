// DeBERTa's disentangled attention bias (He et al., transformers'
// DisentangledSelfAttention.disentangled_attention_bias) for one layer:
//
//   bias[b, h, i, j] = (Q_i · PK_h[idx(i - j)] + K_j · PQ_h[idx(i - j)]) · scale
//
// with Q, K the layer's query and key heads, PK / PQ the relative position
// table (2 · span rows) through the layer's key / query projections,
// idx(r) = clamp(bucket(r) + span, 0, 2 · span - 1), and each term present
// only where pos_att_type names it (c2p, p2c). The bias depends on the
// content, so it is a full [B, H, N, N] plane per batch (AdditiveMask
// per_batch and per_head), written by this class into the caller's buffer.
//
// The projected tables are computed once at load (they depend only on the
// weights) and packed per head, so a forward pays two GEMMs per head,
// [T, head_dim] · [head_dim, 2 · span], over the packed rows of the whole
// batch, and a gather. Immutable after Create; Fill is const and
// thread-safe.
#ifndef ATTNSERVE_ENGINE_MODELS_DEBERTA_ATTENTION_H_
#define ATTNSERVE_ENGINE_MODELS_DEBERTA_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "engine/models/bert_config.h"
#include "engine/ops/packed_gemm.h"

namespace attnserve {

// idx for every relative position i - j of sequences up to n tokens: entry
// i - j + n - 1 (2n - 1 entries).
std::vector<int32_t> DebertaPositionIndex(const DebertaConfig& config, int n);

// Where a forward's packed rows are: sequence b is rows [starts[b],
// starts[b] + lengths[b]) of qkv ([T, 3D]: query, key, value).
struct DisentangledBatch {
  const float* qkv = nullptr;
  int64_t total = 0;  // T
  int batch = 0;
  int max_len = 0;    // n: planes are [batch, heads, n, n]
  const int64_t* starts = nullptr;
  const int32_t* lengths = nullptr;
};

class DisentangledAttentionBias {
 public:
  DisentangledAttentionBias() = default;
  // pos_query / pos_key: the projected tables' first row, `rows` (2 · span)
  // rows of hidden_size values `row_stride` apart, or null when that term
  // is off (p2c / c2p).
  static DisentangledAttentionBias Create(const float* pos_query, const float* pos_key, int64_t row_stride,
                                          int64_t rows, int heads, int head_dim);

  // Writes planes [batch, heads, n, n] (keys past a sequence's length 0;
  // rows past it untouched), `index` DebertaPositionIndex(n)'s 2n - 1
  // entries (for a shorter n, a longer table's entries from its offset
  // N - n), `scale` the attention's 1 / sqrt(head_dim · scale_factor).
  // scratch: at least ScratchFloats(total) floats.
  void Fill(const DisentangledBatch& batch, const int32_t* index, float scale, float* planes, float* scratch) const;
  int64_t ScratchFloats(int64_t total) const { return 2 * total * rows_; }
  int64_t bytes() const;

 private:
  int heads_ = 0;
  int head_dim_ = 0;
  int64_t rows_ = 0;
  std::vector<PackedMatrix> pos_query_, pos_key_;  // per head [rows, head_dim]; empty when the term is off
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_DEBERTA_ATTENTION_H_
