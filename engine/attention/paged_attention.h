// Decode / chunked-prefill attention against a paged KV cache, for a ragged
// batch in one call.
//
// Sequence s contributes rows [query_start[s], query_start[s+1]) of q: its n
// newest tokens, whose K/V the caller has already written into the sequence's
// blocks (so num_tokens includes them). New token t (0-based among the n)
// attends causally to positions [0, num_tokens - n + t] (the last `window` of
// them with a sliding window). Query head h reads KV
// head h / (Hq / Hkv). Blocks are read in place through the block table, f32
// or bf16 (widened per tile); nothing is gathered. Compute is f32.
//
// Thread-safe; parallel over (sequence, KV head, query tile).
#ifndef ATTNSERVE_ENGINE_ATTENTION_PAGED_ATTENTION_H_
#define ATTNSERVE_ENGINE_ATTENTION_PAGED_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/attention/kv_layout.h"

namespace attnserve {

struct PagedAttentionArgs {
  int num_heads = 0;                    // Hq; Hkv and head_dim come from the layout
  const float* q = nullptr;             // [total_tokens, Hq, d]
  float* out = nullptr;                 // [total_tokens, Hq, d]
  PagedKvView kv;
  const PagedKvSequence* seqs = nullptr;  // [num_seqs]
  const int32_t* query_start = nullptr;   // [num_seqs + 1], non-decreasing, starts at 0
  int num_seqs = 0;
  float scale = 0.0f;  // 0: 1/sqrt(head_dim)
  // > 0: a sliding window. The token at position p attends only to
  // positions (p - window, p] (itself and the window - 1 before it), as
  // transformers' sliding-window layers; the kernels skip the older keys.
  int window = 0;
  // > 0: scores are capped, softcap * tanh(score / softcap), before the
  // causal rule and the softmax (Gemma 2's attn_logit_softcapping).
  float softcap = 0.0f;
};

// InvalidArgument naming the field for: bad layout, Hq % Hkv != 0, n > num_tokens, window < 0, softcap < 0,
// too few blocks for num_tokens, block ids outside the pool.
absl::Status PagedAttention(const PagedAttentionArgs& args);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_PAGED_ATTENTION_H_
