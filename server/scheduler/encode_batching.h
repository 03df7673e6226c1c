// Encode batch formation: which queued inputs run together. Pure functions
// over plain data, so the policy is unit-tested without threads or models.
//
// Policy: the oldest queued input always runs in the next batch (FIFO, no
// starvation). It is joined by inputs with the same options whose lengths are
// closest to its own (grouping by length keeps padding small), up to
// `max_batch_size` inputs and `max_batch_tokens` padded tokens (batch size x
// longest input). An input longer than the token budget runs alone. A request
// with many inputs is split across batches this way and reassembled in order
// by the scheduler.
#ifndef ATTNSERVE_SERVER_SCHEDULER_ENCODE_BATCHING_H_
#define ATTNSERVE_SERVER_SCHEDULER_ENCODE_BATCHING_H_

#include <cstdint>
#include <string>
#include <vector>

namespace attnserve {

struct QueuedInput {
  const std::string* options_key;  // inputs batch together only with equal keys
  int num_tokens = 0;
};

struct BatchLimits {
  int max_batch_size = 32;
  int64_t max_batch_tokens = 16384;  // padded tokens
};

// Indices into `queue` (FIFO order, queue[0] the oldest) for the next batch,
// ascending. Empty only when `queue` is empty.
std::vector<int> PickEncodeBatch(const std::vector<QueuedInput>& queue, const BatchLimits& limits);

// Padding tokens / all tokens of a batch with these lengths (0 when empty).
double PaddingRatio(const std::vector<int>& lengths);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_SCHEDULER_ENCODE_BATCHING_H_
