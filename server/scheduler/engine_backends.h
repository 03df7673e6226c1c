// The scheduler's backends over the real engine: an EncoderModel and a
// DecoderEngine. Thin forwarding plus the request-level checks the scheduler
// needs before queueing (token counts, truncation limits).
#ifndef ATTNSERVE_SERVER_SCHEDULER_ENGINE_BACKENDS_H_
#define ATTNSERVE_SERVER_SCHEDULER_ENGINE_BACKENDS_H_

#include <memory>

#include "server/scheduler/backends.h"

namespace attnserve {

class EncoderBackend final : public EncodeBackend {
 public:
  explicit EncoderBackend(const EncoderModel* model) : model_(model) {}
  absl::StatusOr<int> CountTokens(const EncoderInput& input, const EncodeOptions& options) const override;
  absl::StatusOr<std::unique_ptr<EncodeBatchJob>> StartBatch(absl::Span<const EncoderInput> inputs,
                                                             const EncodeOptions& options) override;
  int64_t ScratchBytes(int batch_size, int seq_len) const override;

 private:
  const EncoderModel* model_;  // not owned
};

class DecoderBackend final : public GenerateBackend {
 public:
  explicit DecoderBackend(std::unique_ptr<DecoderEngine> engine) : engine_(std::move(engine)) {}
  absl::StatusOr<SeqId> AddSequence(std::vector<int32_t> prompt, GenerationParams params) override {
    return engine_->AddSequence(std::move(prompt), std::move(params));
  }
  absl::StatusOr<std::vector<StepEvent>> Step(absl::Span<const StepItem> items) override { return engine_->Step(items); }
  void Release(SeqId seq) override { engine_->Release(seq); }
  int CachedPromptTokens(SeqId seq) const override { return engine_->CachedPromptTokens(seq); }
  KvSequenceStats SequenceKv(SeqId seq) const override { return engine_->kv_sequence_stats(seq); }
  KvStats kv_stats() const override { return engine_->kv_stats(); }
  int block_size() const override { return block_size_; }
  int kv_window() const override { return engine_->kv_window(); }
  int64_t json_mask_bytes() const override { return engine_->json_mask_bytes(); }
  int64_t scratch_bytes() const override { return engine_->scratch_bytes(); }
  void set_block_size(int block_size) { block_size_ = block_size; }

 private:
  std::unique_ptr<DecoderEngine> engine_;
  int block_size_ = 16;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_SCHEDULER_ENGINE_BACKENDS_H_
