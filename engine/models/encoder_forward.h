// What the Encode path needs from a network: a forward over a packed batch
// of token sequences, run slice by slice so that the scheduler can put other
// work between slices, whose result is every token's last hidden state.
// BertForwardJob (bert.h) runs the bidirectional encoders; CausalForwardJob
// (causal_forward.h) a decoder-only model read as an embedder.
#ifndef ATTNSERVE_ENGINE_MODELS_ENCODER_FORWARD_H_
#define ATTNSERVE_ENGINE_MODELS_ENCODER_FORWARD_H_

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/tensor.h"

namespace attnserve {

struct EncoderForwardResult {
  Tensor last_hidden;                  // [T, D], packed in input order
  std::vector<Tensor> hidden_states;   // L + 1 x [T, D] when asked
  // (layer, [B, H, Nmax, Nmax] or [B, Nmax, Nmax]) when asked; rows and
  // columns past a sequence's length are padding.
  std::vector<std::pair<int, Tensor>> attentions;
};

// One forward in flight. Thread-compatible: one thread at a time.
class EncoderForwardJob {
 public:
  virtual ~EncoderForwardJob() = default;
  virtual int slices_total() const = 0;
  virtual int slices_done() const = 0;
  bool done() const { return slices_done() == slices_total(); }
  // Runs the next slice. After an error the job is spent: every later call
  // returns the same error.
  virtual absl::Status RunSlice() = 0;
  // After done(): moves the result out, once (FAILED_PRECONDITION before, or
  // again).
  virtual absl::Status Finish(EncoderForwardResult* result) = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_ENCODER_FORWARD_H_
