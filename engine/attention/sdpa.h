// Scaled dot-product attention over strided Q [B, Hq, Nq, d] and K, V
// [B, Hkv, Nk, d]: out = softmax(Q Kᵀ · scale + masks) V per head, with
// Hq % Hkv == 0 (query head h reads KV head h / (Hq / Hkv); K/V are never
// repeated in memory). Masks and conventions: attention_types.h.
//
// Without weights, a tiled online-softmax kernel runs (flash_kernel.h): per
// thread O(tile) scratch, independent of Nk; causal and length-limited rows
// skip the key tiles they cannot see. With weights, the [Nk] score row of each
// query is materialised (the caller asked for the full matrix anyway).
//
// Thread-safe; parallel over (batch, KV head, query tile) with OpenMP.
#ifndef ATTNSERVE_ENGINE_ATTENTION_SDPA_H_
#define ATTNSERVE_ENGINE_ATTENTION_SDPA_H_

#include "absl/status/status.h"
#include "engine/attention/attention_types.h"

namespace attnserve {

struct SdpaArgs {
  SdpaShape shape;
  ConstAttnView q;  // f32
  ConstAttnView k;  // f32 or bf16
  ConstAttnView v;  // same dtype as k
  AttentionMasks masks;
  SdpaOptions options;
  AttnView out;
  // [B, Hq, Nq, Nk] (kPerHead) or [B, Nq, Nk] (kAveraged), contiguous;
  // required when options.weights != kNone, ignored otherwise.
  float* weights = nullptr;
  // Ragged self-attention without padding ("varlen", FlashAttention's
  // cu_seqlens): when set, [B] row offsets — sequence b's rows start
  // row_offsets[b] rows into q, k, v and out (the views' batch_stride is
  // ignored), and it has masks.key_lengths[b] query rows and keys (Nq == Nk
  // is the longest). Rows past a sequence's length are neither read nor
  // written (they belong to the next sequence); weights there are zero.
  // Saves the copy into and out of a padded layout, and the padding rows'
  // compute.
  const int64_t* row_offsets = nullptr;
};

// Errors (InvalidArgument) name the offending field: non-positive sizes,
// Hq % Hkv != 0, null data, dtype mismatch, key_lengths outside [0, Nk],
// missing weights buffer.
absl::Status ScaledDotProductAttention(const SdpaArgs& args);

// The scale used when options.scale == 0: 1/sqrt(head_dim).
float DefaultAttentionScale(int head_dim);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_SDPA_H_
