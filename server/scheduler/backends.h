// What the scheduler needs from the engine, as two small interfaces, so the
// scheduler can be tested with fakes and the engine never learns about
// requests, queues or gRPC. The adapters over the real engine are in
// engine_backends.h.
#ifndef ATTNSERVE_SERVER_SCHEDULER_BACKENDS_H_
#define ATTNSERVE_SERVER_SCHEDULER_BACKENDS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/models/encoder_model.h"
#include "engine/runtime/decoder_engine.h"

namespace attnserve {

// One encode batch in flight, divided into slices of bounded time so the
// scheduler can run generate steps between them (the interleaving policy in
// scheduler.h). Running every slice then Finish gives the results of running
// the batch whole. Thread-compatible (the scheduler thread only).
class EncodeBatchJob {
 public:
  virtual ~EncodeBatchJob() = default;
  virtual int slices_total() const = 0;
  virtual int slices_done() const = 0;
  // Runs the next slice; an error fails the whole batch.
  virtual absl::Status RunSlice() = 0;
  // After every slice: results in input order.
  virtual absl::StatusOr<std::vector<EncodeResult>> Finish() = 0;
};

// Thread-compatible: only the scheduler thread calls StartBatch; CountTokens
// is const and called from request threads.
class EncodeBackend {
 public:
  virtual ~EncodeBackend() = default;
  // Tokens the model will see for `input` (special tokens and truncation
  // applied); INVALID_ARGUMENT naming the problem for bad input.
  virtual absl::StatusOr<int> CountTokens(const EncoderInput& input, const EncodeOptions& options) const = 0;
  // One padded forward over `inputs`, to be run slice by slice; an error
  // here (bad input) fails the whole batch before any compute.
  virtual absl::StatusOr<std::unique_ptr<EncodeBatchJob>> StartBatch(absl::Span<const EncoderInput> inputs,
                                                                     const EncodeOptions& options) = 0;
  // Activation bytes of a batch of that shape.
  virtual int64_t ScratchBytes(int batch_size, int seq_len) const = 0;
};

// Owned by the scheduler thread (a DecoderEngine is thread-compatible).
class GenerateBackend {
 public:
  virtual ~GenerateBackend() = default;
  virtual absl::StatusOr<SeqId> AddSequence(std::vector<int32_t> prompt, GenerationParams params) = 0;
  virtual absl::StatusOr<std::vector<StepEvent>> Step(absl::Span<const StepItem> items) = 0;
  virtual void Release(SeqId seq) = 0;
  virtual int CachedPromptTokens(SeqId seq) const = 0;
  virtual KvSequenceStats SequenceKv(SeqId seq) const = 0;
  virtual KvStats kv_stats() const = 0;
  virtual int block_size() const = 0;
  // > 0 when every layer attends to at most that many positions: a sequence
  // then holds only its window's blocks, not its whole length.
  virtual int kv_window() const { return 0; }
  // Memory held for JSON mode (the engine's token table and cached masks).
  virtual int64_t json_mask_bytes() const { return 0; }
  // Working buffers the engine holds between steps.
  virtual int64_t scratch_bytes() const { return 0; }
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_SCHEDULER_BACKENDS_H_
