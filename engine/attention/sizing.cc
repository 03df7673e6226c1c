#include "engine/attention/sizing.h"

namespace attnserve {

int64_t MhaParameterCount(int64_t embed_dim, bool with_bias) {
  return 4 * embed_dim * embed_dim + (with_bias ? 4 * embed_dim : 0);
}

int64_t KvCacheBytes(int64_t batch_size, int64_t num_layers, int64_t num_tokens,
                     int64_t num_kv_heads, int64_t head_dim, int64_t bytes_per_element) {
  return 2 * batch_size * num_layers * num_tokens * num_kv_heads * head_dim * bytes_per_element;
}

int64_t AttentionWeightsBytes(int64_t batch_size, int64_t num_heads, int64_t num_tokens,
                              int64_t bytes_per_element) {
  return batch_size * num_heads * num_tokens * num_tokens * bytes_per_element;
}

}  // namespace attnserve
