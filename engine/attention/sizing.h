// Sizing formulas for attention (reference: docs/reference mha-guide, §46, §56).
#ifndef ATTNSERVE_ENGINE_ATTENTION_SIZING_H_
#define ATTNSERVE_ENGINE_ATTENTION_SIZING_H_

#include <cstdint>

namespace attnserve {

// Parameters of a classic MHA block (W_Q, W_K, W_V, W_O of [D, D], with
// biases): 4·D² + 4·D (4·D² without biases). D = 768 -> 2,362,368.
int64_t MhaParameterCount(int64_t embed_dim, bool with_bias = true);

// KV cache bytes: 2 (K and V) · B · L (layers) · N (tokens) · Hkv · d · bytes.
int64_t KvCacheBytes(int64_t batch_size, int64_t num_layers, int64_t num_tokens,
                     int64_t num_kv_heads, int64_t head_dim, int64_t bytes_per_element);

// Bytes of materialised attention weights [B, H, N, N]: B · H · N² · bytes.
int64_t AttentionWeightsBytes(int64_t batch_size, int64_t num_heads, int64_t num_tokens,
                              int64_t bytes_per_element);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_SIZING_H_
