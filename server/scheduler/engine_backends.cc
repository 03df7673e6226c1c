#include "server/scheduler/engine_backends.h"

#include "absl/strings/str_cat.h"

namespace attnserve {

absl::StatusOr<int> EncoderBackend::CountTokens(const EncoderInput& input, const EncodeOptions& options) const {
  const int limit = model_->max_tokens();
  int n = 0;
  if (input.is_text && input.text_pair.has_value()) {
    absl::StatusOr<TextEncoding> pair = model_->tokenizer().EncodePair(input.text, *input.text_pair);
    if (!pair.ok()) return pair.status();
    n = static_cast<int>(pair->ids.size());
  } else if (input.is_text) {
    absl::StatusOr<std::vector<int32_t>> ids = model_->Tokenize(input.text, /*add_special_tokens=*/true);
    if (!ids.ok()) return ids.status();
    n = static_cast<int>(ids->size());
  } else {
    if (input.token_ids.empty()) return absl::InvalidArgumentError("token_ids: at least one token id is required");
    const int vocab = model_->description().vocab_size;
    for (size_t j = 0; j < input.token_ids.size(); ++j) {
      const int32_t id = input.token_ids[j];
      if (id < 0 || id >= vocab) {
        return absl::InvalidArgumentError(
            absl::StrCat("token_ids[", j, "] = ", id, " is out of range [0, ", vocab, ")"));
      }
    }
    n = static_cast<int>(input.token_ids.size());
  }
  if (n > limit) {
    if (!options.truncate) {
      return absl::InvalidArgumentError(absl::StrCat("the input has ", n, " tokens; the model's limit is ", limit,
                                                     " tokens (truncation is off)"));
    }
    n = limit;
  }
  return n;
}

namespace {

// The engine's EncodeJob behind the scheduler's interface.
class EncoderBatchJob final : public EncodeBatchJob {
 public:
  explicit EncoderBatchJob(std::unique_ptr<EncodeJob> job) : job_(std::move(job)) {}
  int slices_total() const override { return job_->slices_total(); }
  int slices_done() const override { return job_->slices_done(); }
  absl::Status RunSlice() override { return job_->RunSlice(); }
  absl::StatusOr<std::vector<EncodeResult>> Finish() override { return job_->Finish(); }

 private:
  std::unique_ptr<EncodeJob> job_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EncodeBatchJob>> EncoderBackend::StartBatch(absl::Span<const EncoderInput> inputs,
                                                                           const EncodeOptions& options) {
  absl::StatusOr<std::unique_ptr<EncodeJob>> job = model_->StartEncode(inputs, options);
  if (!job.ok()) return job.status();
  return std::make_unique<EncoderBatchJob>(*std::move(job));
}

int64_t EncoderBackend::ScratchBytes(int batch_size, int seq_len) const {
  return model_->ScratchBytes(batch_size, seq_len);
}

}  // namespace attnserve
