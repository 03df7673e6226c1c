// Shapes, strided views, masks and options of scaled dot-product attention.
//
// MASK CONVENTION (one, everywhere in this API): every boolean mask is an
// *allow* mask — non-zero means "this query may attend to this key", zero
// means blocked. The type names say it (AllowMask, KeyAllowMask). PyTorch's
// nn.MultiheadAttention uses the opposite (True = blocked); the conversion
// lives in torch_compat.h and nowhere else.
//
// A query row whose keys are all blocked produces an all-zero output row (and
// all-zero attention weights), never NaN.
#ifndef ATTNSERVE_ENGINE_ATTENTION_ATTENTION_TYPES_H_
#define ATTNSERVE_ENGINE_ATTENTION_ATTENTION_TYPES_H_

#include <cstdint>

#include "engine/core/tensor.h"

namespace attnserve {

// Q [B, Hq, Nq, d]; K, V [B, Hkv, Nk, d]; Hq % Hkv == 0 (MHA, GQA, MQA).
struct SdpaShape {
  int batch_size = 0;
  int num_heads = 0;     // Hq
  int num_kv_heads = 0;  // Hkv
  int q_len = 0;         // Nq
  int kv_len = 0;        // Nk
  int head_dim = 0;      // d
};

// A strided 4-D view [B, H, N, d] whose rows of d elements are contiguous.
// Strides are in elements. The default (contiguous [B, H, N, d]) comes from
// Contiguous(); [B, N, H, d] (projection output, no transpose) from
// Interleaved().
struct ConstAttnView {
  const void* data = nullptr;
  DType dtype = DType::kF32;  // Q: f32 only; K, V: f32 or bf16
  int64_t batch_stride = 0;
  int64_t head_stride = 0;
  int64_t row_stride = 0;

  static ConstAttnView Contiguous(const void* data, int heads, int len, int head_dim,
                                  DType dtype = DType::kF32) {
    return {data, dtype, int64_t{heads} * len * head_dim, int64_t{len} * head_dim, head_dim};
  }
  static ConstAttnView Interleaved(const void* data, int heads, int len, int head_dim,
                                   DType dtype = DType::kF32) {
    return {data, dtype, int64_t{heads} * len * head_dim, head_dim, int64_t{heads} * head_dim};
  }
};

struct AttnView {  // the output, f32
  float* data = nullptr;
  int64_t batch_stride = 0;
  int64_t head_stride = 0;
  int64_t row_stride = 0;

  static AttnView Contiguous(float* data, int heads, int len, int head_dim) {
    return {data, int64_t{heads} * len * head_dim, int64_t{len} * head_dim, head_dim};
  }
  static AttnView Interleaved(float* data, int heads, int len, int head_dim) {
    return {data, int64_t{heads} * len * head_dim, head_dim, int64_t{heads} * head_dim};
  }
};

// Boolean allow mask over (query, key): [Nq, Nk], or [B, Nq, Nk] when
// per_batch. Non-zero = may attend.
struct AllowMask {
  const uint8_t* data = nullptr;
  bool per_batch = false;
};

// Boolean allow mask over keys: [B, Nk]. Non-zero = key is real (may be
// attended); zero = padding.
struct KeyAllowMask {
  const uint8_t* data = nullptr;
};

// Float mask added to the scaled scores: [Nq, Nk], [B, Nq, Nk] (per_batch),
// [Hq, Nq, Nk] (per_head: one bias per head for every sequence) or
// [B, Hq, Nq, Nk] (both). -inf blocks.
//
// `by_distance`: a bias that depends only on j - i (ALiBi's, MPNet's
// relative position buckets) held as one row of Nq + Nk - 1 values per head
// ([Hq, Nq + Nk - 1] with per_head, else [Nq + Nk - 1]; never per_batch):
// key j of query row i reads entry j - i + Nq - 1, so a row is a window of
// the table starting at Nq - 1 - i. O(H · N) memory where a plane is N².
struct AdditiveMask {
  const float* data = nullptr;
  bool per_batch = false;
  bool per_head = false;
  bool by_distance = false;
};

// Where query row i of batch b, head h starts in an additive mask's data.
inline int64_t AdditiveMaskOffset(const AdditiveMask& m, const SdpaShape& s, int b, int h, int i) {
  if (m.by_distance) {
    const int64_t row = int64_t{s.q_len} + s.kv_len - 1;
    return (m.per_head ? int64_t{h} * row : 0) + (s.q_len - 1 - i);
  }
  const int64_t plane = int64_t{s.q_len} * s.kv_len;
  int64_t off = int64_t{i} * s.kv_len;
  if (m.per_batch) off += (m.per_head ? int64_t{b} * s.num_heads + h : b) * plane;
  else if (m.per_head) off += int64_t{h} * plane;
  return off;
}

// Masks combine (a key is attended only if every mask allows it).
struct AttentionMasks {
  // [B] valid key counts: key j of batch b is blocked when j >= key_lengths[b].
  const int32_t* key_lengths = nullptr;
  KeyAllowMask key_allow;
  // Query i sees keys j <= i + Nk - Nq (the bottom-right-aligned rule; with
  // Nq == Nk the usual lower triangle).
  bool causal = false;
  // >= 0: query i sees only keys with |i - j| <= window (a bidirectional
  // sliding window, ModernBERT's local layers; Nq == Nk). The kernels skip
  // the keys outside it rather than mask them.
  int window = -1;
  AllowMask allow;
  AdditiveMask additive;
};

enum class AttentionWeightsMode {
  kNone,      // weights not computed; the [B, H, Nq, Nk] matrix never exists
  kPerHead,   // [B, Hq, Nq, Nk]
  kAveraged,  // [B, Nq, Nk], mean over heads (PyTorch average_attn_weights)
};

// Optional instrumentation, filled by the kernel when non-null.
struct SdpaStats {
  int64_t scratch_bytes = 0;  // bytes the kernel allocated for its working buffers
};

struct SdpaOptions {
  // Score scale; 0 means 1/sqrt(head_dim) (of the head dimension, never the
  // model dimension).
  float scale = 0.0f;
  AttentionWeightsMode weights = AttentionWeightsMode::kNone;
  SdpaStats* stats = nullptr;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_ATTENTION_TYPES_H_
