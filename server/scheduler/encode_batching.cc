#include "server/scheduler/encode_batching.h"

#include <algorithm>
#include <cstdlib>

namespace attnserve {

std::vector<int> PickEncodeBatch(const std::vector<QueuedInput>& queue, const BatchLimits& limits) {
  if (queue.empty()) return {};
  const QueuedInput& oldest = queue[0];
  // Candidates: same options, in FIFO order; look at a bounded window so one
  // huge queue does not make every pick quadratic.
  const size_t window = std::min<size_t>(queue.size(), static_cast<size_t>(limits.max_batch_size) * 8);
  std::vector<int> candidates;
  for (size_t i = 1; i < window; ++i) {
    if (*queue[i].options_key == *oldest.options_key) candidates.push_back(static_cast<int>(i));
  }
  // Closest length first; FIFO among equals (stable sort).
  std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return std::abs(queue[a].num_tokens - oldest.num_tokens) < std::abs(queue[b].num_tokens - oldest.num_tokens);
  });
  std::vector<int> batch = {0};
  int longest = std::max(oldest.num_tokens, 1);
  for (int c : candidates) {
    if (static_cast<int>(batch.size()) >= limits.max_batch_size) break;
    const int new_longest = std::max(longest, queue[c].num_tokens);
    if (static_cast<int64_t>(new_longest) * static_cast<int64_t>(batch.size() + 1) > limits.max_batch_tokens) continue;
    batch.push_back(c);
    longest = new_longest;
  }
  std::sort(batch.begin(), batch.end());
  return batch;
}

double PaddingRatio(const std::vector<int>& lengths) {
  if (lengths.empty()) return 0;
  int64_t longest = 0, real = 0;
  for (int n : lengths) {
    longest = std::max<int64_t>(longest, n);
    real += n;
  }
  const int64_t padded = longest * static_cast<int64_t>(lengths.size());
  return padded == 0 ? 0 : static_cast<double>(padded - real) / static_cast<double>(padded);
}

}  // namespace attnserve
