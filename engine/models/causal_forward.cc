#include "engine/models/causal_forward.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"

namespace attnserve {
absl::StatusOr<std::unique_ptr<CausalForwardJob>> CausalForwardJob::Begin(std::shared_ptr<const DecoderModel> model,
                                                                          absl::Span<const int32_t> token_ids,
                                                                          absl::Span<const int32_t> lengths,
                                                                          bool hidden_states) {
  int64_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1 || lengths[i] > model->max_positions()) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", i, " has ", lengths[i], " tokens; outside [1, ",
                                                     model->max_positions(), "]"));
    }
    total += lengths[i];
  }
  if (lengths.empty() || total != static_cast<int64_t>(token_ids.size())) {
    return absl::InvalidArgumentError(absl::StrCat("lengths sum to ", total, " but there are ", token_ids.size(),
                                                   " tokens"));
  }
  std::unique_ptr<CausalForwardJob> job(new CausalForwardJob());
  job->batch_.Clear();
  int64_t start = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    job->batch_.Add(static_cast<SeqId>(i), token_ids.data() + start, lengths[i], 0);
    start += lengths[i];
  }
  job->num_layers_ = model->config().num_layers;
  job->keep_hidden_states_ = hidden_states;
  job->model_ = std::move(model);
  return job;
}

Tensor CausalForwardJob::HiddenCopy() const {
  const int64_t rows = batch_.num_tokens();
  const int d = model_->config().hidden_size;
  Tensor t = Tensor::Empty({rows, d});
  std::memcpy(t.f32(), scratch_.hidden.data(), sizeof(float) * rows * d);
  return t;
}

absl::Status CausalForwardJob::RunSlice() {
  if (!error_.ok()) return error_;
  if (next_slice_ >= slices_total()) {
    return absl::FailedPreconditionError("CausalForwardJob::RunSlice: every slice has run");
  }
  absl::Status status;
  if (next_slice_ == 0) {
    status = model_->BeginForward(batch_, nullptr, scratch_);
  } else {
    status = model_->ForwardLayer(next_slice_ - 1, batch_, nullptr, scratch_);
  }
  if (!status.ok()) {
    error_ = status;
    return status;
  }
  // transformers' hidden_states: the embeddings and each layer's input,
  // then (for the last) the normed output rather than the raw one.
  if (keep_hidden_states_ && next_slice_ < num_layers_) result_.hidden_states.push_back(HiddenCopy());
  if (++next_slice_ == slices_total()) {
    model_->FinalNorm(scratch_.hidden.data(), batch_.num_tokens());
    result_.last_hidden = HiddenCopy();
    if (keep_hidden_states_) result_.hidden_states.push_back(HiddenCopy());
    scratch_ = DecoderScratch();  // spent: give its memory back now
  }
  return absl::OkStatus();
}

absl::Status CausalForwardJob::Finish(EncoderForwardResult* result) {
  if (!done() || finished_) {
    return absl::FailedPreconditionError(absl::StrCat("CausalForwardJob::Finish: ", next_slice_, " of ",
                                                      slices_total(), " slices have run, or already finished"));
  }
  finished_ = true;
  *result = std::move(result_);
  return absl::OkStatus();
}

}  // namespace attnserve
