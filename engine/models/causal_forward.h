// CausalForwardJob: a decoder-only model's forward run as an embedder runs
// it (Qwen3-Embedding, e5-mistral, gte-Qwen's causal kind): a packed batch
// of whole sequences, each attending causally to itself from position 0,
// whose result is every token's hidden state after the final norm —
// transformers' Qwen3Model / LlamaModel `last_hidden_state`, what
// sentence-transformers pools.
//
// Each layer's attention runs on its own fused QKV rows
// (DecoderBlock::ForwardUncached: ragged causal SDPA), so no K/V cache is
// kept: a layer's Q, K and V of the batch are all the memory attention
// needs. Slices: the embeddings, then one per layer (the last also applies
// the final norm).
#ifndef ATTNSERVE_ENGINE_MODELS_CAUSAL_FORWARD_H_
#define ATTNSERVE_ENGINE_MODELS_CAUSAL_FORWARD_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/models/decoder_batch.h"
#include "engine/models/decoder_block.h"
#include "engine/models/decoder_model.h"
#include "engine/models/encoder_forward.h"

namespace attnserve {

class CausalForwardJob : public EncoderForwardJob {
 public:
  // token_ids: the sequences concatenated; lengths: each >= 1, summing to
  // token_ids.size(), each within the model's positions. hidden_states:
  // keep the embeddings and every layer's input as transformers'
  // output_hidden_states does (its last entry is the normed output).
  static absl::StatusOr<std::unique_ptr<CausalForwardJob>> Begin(std::shared_ptr<const DecoderModel> model,
                                                                 absl::Span<const int32_t> token_ids,
                                                                 absl::Span<const int32_t> lengths,
                                                                 bool hidden_states);
  int slices_total() const override { return 1 + num_layers_; }
  int slices_done() const override { return next_slice_; }
  absl::Status RunSlice() override;
  absl::Status Finish(EncoderForwardResult* result) override;

 private:
  CausalForwardJob() = default;
  Tensor HiddenCopy() const;

  std::shared_ptr<const DecoderModel> model_;
  int num_layers_ = 0;
  ForwardBatch batch_;
  DecoderScratch scratch_;
  bool keep_hidden_states_ = false;
  EncoderForwardResult result_;
  int next_slice_ = 0;
  bool finished_ = false;
  absl::Status error_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_CAUSAL_FORWARD_H_
