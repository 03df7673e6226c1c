// DecoderModel: a loaded decoder-only model (Llama family or GPT-2), ready
// to run ragged batched steps against a paged KV cache.
//
// Load() reads a Hugging Face directory or a GGUF file (engine/formats/
// decoder_loader.h), builds one DecoderBlock per layer (oneDNN primitives and
// packed weights made once), and keeps the tokenizer. Immutable and
// thread-safe once built: share it as std::shared_ptr<const DecoderModel>;
// each caller brings its own KvCache and DecoderScratch.
#ifndef ATTNSERVE_ENGINE_MODELS_DECODER_MODEL_H_
#define ATTNSERVE_ENGINE_MODELS_DECODER_MODEL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/formats/decoder_config.h"
#include "engine/formats/decoder_loader.h"
#include "engine/kv/kv_cache.h"
#include "engine/models/decoder_batch.h"
#include "engine/models/decoder_block.h"
#include "engine/models/model_description.h"
#include "engine/models/rope.h"
#include "engine/ops/linear.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

struct DecoderLoadOptions {
  // kF32, kBF16 or kQ8_0 storage of matrices (q8_0: quantised at load as
  // llama.cpp quantises, from the file's values read as f32; a Q8_0 GGUF's
  // blocks come back as written).
  DType weight_dtype = DType::kF32;
  // kBf16: the projections' oneDNN products (prefill chunks, batches of 16+
  // rows) may round to bf16 (engine/ops/matmul_precision.h); decode rows,
  // the LM head and attention stay f32.
  MatmulPrecision matmul_precision = MatmulPrecision::kF32;
  DType kv_dtype = DType::kF32;      // kF32 or kBF16 K/V in the cache (recorded in description)
  // Positions a sequence may use. 0: the model's own (the larger of the
  // declared and the trained context). Rotary models may be given more, as
  // llama.cpp's n_ctx allows (stories260K's GGUF declares 128 but was trained
  // with 512); learned-position models cannot exceed their table. A
  // longrope model (Phi-3.5) gets its original_max_position_embeddings and
  // the short factors; a context above that switches it to the long ones.
  int context_length = 0;
  // Build every kernel a forward could need at load (oneDNN primitives for
  // every row-count bucket of every projection) instead of on first use, so
  // the first steps of each size do not stall (a server wants this; tests
  // that load many models need not pay for it).
  bool prepare_kernels = false;
  // The network of a decoder-only embedding model (EncoderModel reading
  // Qwen3-Embedding and its kind): no LM head is built (one in the weights
  // is dropped) and no decoder tokenizer is needed (the embedder brings its
  // own). Forward is then FAILED_PRECONDITION; the stepwise calls work.
  bool hidden_states_only = false;
};

class DecoderModel {
 public:
  static absl::StatusOr<std::shared_ptr<const DecoderModel>> Load(const std::string& path,
                                                                  const DecoderLoadOptions& options);
  // From an already loaded model (tests, converters).
  static absl::StatusOr<std::shared_ptr<const DecoderModel>> FromLoaded(
      LoadedDecoder loaded, const DecoderLoadOptions& options);

  const ModelDescription& description() const { return description_; }
  const DecoderConfig& config() const { return config_; }
  // Not with hidden_states_only (which may have none).
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The chat template the model came with, as Jinja source ("" if none);
  // engine/tokenizers/chat_template.h says what is done with it.
  const std::string& chat_template() const { return chat_template_; }
  // Positions a sequence may use (the trained context).
  int max_positions() const { return max_positions_; }
  KvCacheShape kv_shape() const;

  // Runs one ragged step. The KV blocks for every token must be reserved in
  // `kv` (positions are batch.positions). Writes K/V of all tokens, then the
  // logits of the LAST token of each sequence: logits [S, vocab] (or of the
  // tokens batch.logit_tokens lists: [that many, vocab]).
  // INVALID_ARGUMENT for token ids or positions out of range.
  absl::Status Forward(const ForwardBatch& batch, KvCache& kv, DecoderScratch& scratch,
                       std::vector<float>& logits) const;

  // The same forward in parts, for a caller that needs every token's final
  // hidden state or runs a forward in slices (causal_forward.h):
  // BeginForward checks `batch` as Forward does, sizes `scratch` and writes
  // the tokens' embeddings to scratch.hidden ([T, D]) and their rotary
  // angles; ForwardLayer runs block `layer` on them; FinalNorm applies the
  // final norm to `rows` rows of x in place. With kv null the forward is
  // uncached (DecoderBlock::ForwardUncached): every sequence whole, its
  // positions 0, 1, ... (INVALID_ARGUMENT otherwise), nothing kept.
  absl::Status BeginForward(const ForwardBatch& batch, const KvCache* kv, DecoderScratch& scratch) const;
  absl::Status ForwardLayer(int layer, const ForwardBatch& batch, KvCache* kv, DecoderScratch& scratch) const;
  void FinalNorm(float* x, int64_t rows) const;
  // Bytes of DecoderScratch a step of `tokens` tokens grows to (without an
  // attention kernel's own working buffers).
  int64_t ScratchBytes(int64_t tokens) const;

 private:
  DecoderModel() = default;
  absl::Status Build(LoadedDecoder loaded, const DecoderLoadOptions& options);
  void Embed(const ForwardBatch& batch, float* hidden) const;

  DecoderConfig config_;
  ModelDescription description_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string chat_template_;
  Tensor token_embedding_;     // [vocab, D], f32 or bf16; empty when tied or q8_0
  std::optional<PackedMatrix> embedding_q8_;  // the untied table with q8_0 storage
  bool tied_embedding_ = false;  // rows come from lm_head_ (held once)
  Tensor position_embedding_;  // [max_positions, D] (learned positions only)
  std::vector<float> final_norm_w_, final_norm_b_;
  std::vector<DecoderBlock> blocks_;
  std::optional<Linear> lm_head_;
  std::optional<Rope> rope_;
  // Gemma 3: the sliding-window layers' rope (config.local_rope_theta).
  std::optional<Rope> local_rope_;
  int max_positions_ = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_DECODER_MODEL_H_
