// EncoderModel: a sentence encoder loaded from a Hugging Face /
// sentence-transformers directory: tokenizer (WordPiece, Unigram or
// byte-level BPE, engine/tokenizers/encoder_tokenizer.h) + network + pooling
// + optional L2 normalisation. What the Encode RPC serves. The network is a
// BertEncoder (BERT, RoBERTa, XLM-R, MPNet, DistilBERT, ModernBERT) or, for
// a decoder-only embedding model (config.json model_type llama, mistral,
// qwen2 or qwen3: Qwen3-Embedding, e5-mistral) or a llama.cpp GGUF file of
// one, the decoder's blocks run causally over each whole input
// (causal_forward.h), usually pooled at the last token.
//
// Immutable after Load; Encode and StartEncode are const and thread-safe.
// An EncodeJob (one batch in flight, run slice by slice) is thread-compatible
// and must not outlive its model.
#ifndef ATTNSERVE_ENGINE_MODELS_ENCODER_MODEL_H_
#define ATTNSERVE_ENGINE_MODELS_ENCODER_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/core/tensor.h"
#include "engine/formats/model_dir.h"
#include "engine/models/bert.h"
#include "engine/formats/decoder_loader.h"
#include "engine/models/decoder_model.h"
#include "engine/models/encoder_forward.h"
#include "engine/models/model_description.h"
#include "engine/models/pooling.h"
#include "engine/tokenizers/encoder_tokenizer.h"

namespace attnserve {

struct EncoderLoadOptions {
  DType weight_dtype = DType::kF32;  // kF32 or kBF16 storage; compute is f32
  // kBf16: the projections' oneDNN products may round to bf16
  // (engine/ops/matmul_precision.h). Attention stays f32.
  MatmulPrecision matmul_precision = MatmulPrecision::kF32;
  // As DecoderLoadOptions::prepare_kernels: every oneDNN primitive a forward
  // could use is built at load, not on the first batch of each size.
  bool prepare_kernels = false;
};

struct EncoderInput {
  bool is_text = true;
  std::string text;               // when is_text
  std::vector<int32_t> token_ids; // otherwise: exactly what the model sees (no [CLS]/[SEP] added)
  // With text: a second text read with it as BERT reads a pair ([CLS] text
  // [SEP] text_pair [SEP], the second in segment 1), which is how a
  // cross-encoder scores a query against a document.
  std::optional<std::string> text_pair = std::nullopt;
};

struct EncodeOptions {
  PoolingMode pooling = PoolingMode::kModelDefault;
  std::optional<bool> normalize;          // unset: the model's own (sentence-transformers Normalize module)
  bool truncate = true;                   // false: over-long input -> INVALID_ARGUMENT naming the limit
  // Which end truncation cuts (kStart keeps the last tokens; the special
  // tokens stay), for texts, pairs and token-id inputs alike.
  TruncationSide truncation_side = TruncationSide::kEnd;
  // > 0: keep the first `dimensions` values of each pooled embedding (a
  // Matryoshka-trained model's shorter embedding), then normalise if asked.
  // In [1, hidden size]; not with PoolingMode::kNone.
  int dimensions = 0;
  // A prompt of the model's configuration (config_sentence_transformers.json
  // "prompts") put before every single-text input, as sentence-transformers'
  // encode(prompt_name=...) does. nullopt: the model's default_prompt_name,
  // if any (applied to single texts only); "": no prompt. A named prompt
  // with a text pair or token ids is INVALID_ARGUMENT.
  std::optional<std::string> prompt_name;
  bool return_hidden_states = false;
  std::vector<int> attention_layers;      // layers whose attention weights to return
  bool attention_average_heads = false;   // [N,N] instead of [H,N,N]
};

struct EncodeResult {
  Tensor embedding;                        // [D] pooled, or [N, D] with kNone
  std::vector<int32_t> token_ids;          // what the model saw
  bool truncated = false;
  std::vector<Tensor> hidden_states;       // L+1 x [N, D] when asked
  std::vector<std::pair<int, Tensor>> attentions;  // (layer, [H,N,N] or [N,N]) when asked
  // A model with a classification head: its raw logits, one per label.
  std::vector<float> logits;
  // PoolingMode::kSplade (embedding then empty): the vocabulary entries with
  // a non-zero weight, ids ascending, and their weights.
  std::vector<int32_t> sparse_indices;
  std::vector<float> sparse_values;
};

class EncoderModel;

// One encode batch in flight: the forward's activations plus what pooling
// needs. RunSlice runs a bounded part of the forward (BertForwardJob: the
// embeddings or a third of a layer), then, with SPLADE pooling, of the
// masked-language-model head (one block of its vocabulary for every token,
// about a third of a layer's work); Finish pools. A decoder-based embedder's
// slices are its embeddings and one per layer (CausalForwardJob). The results are bit-identical to
// EncoderModel::Encode on the same inputs, which is StartEncode + every
// slice + Finish.
class EncodeJob {
 public:
  EncodeJob(const EncodeJob&) = delete;
  EncodeJob& operator=(const EncodeJob&) = delete;

  int slices_total() const { return forward_->slices_total() + head_slices_; }
  int slices_done() const { return forward_->slices_done() + head_slices_done_; }
  bool done() const { return forward_->done() && head_slices_done_ == head_slices_; }
  absl::Status RunSlice();
  // After done(): the results in input order (FAILED_PRECONDITION before).
  // Once only.
  absl::StatusOr<std::vector<EncodeResult>> Finish();

 private:
  friend class EncoderModel;
  EncodeJob() = default;

  const EncoderModel* model_ = nullptr;
  EncodeOptions options_;
  std::vector<EncodeResult> results_;  // token ids and truncation filled at start
  std::vector<int32_t> lengths_;
  std::unique_ptr<EncoderForwardJob> forward_;
  // Taken from forward_ when its last slice has run.
  std::optional<EncoderForwardResult> forward_result_;
  // SPLADE: the head's slices (one per vocabulary block), each sequence's
  // pooled vector so far ([B, V], filled slice by slice), every token's
  // transformed row ([T, D], from the first head slice to the last) and
  // each token's sequence vector.
  int head_slices_ = 0;
  int head_slices_done_ = 0;
  std::vector<float> splade_;
  Tensor head_x_;
  std::vector<float*> head_row_out_;
  absl::Status RunHeadSlice();
};

class EncoderModel {
 public:
  // `dir`: a model directory, or a llama.cpp GGUF file of a decoder-based embedder.
  static absl::StatusOr<std::unique_ptr<EncoderModel>> Load(const std::string& dir,
                                                            const EncoderLoadOptions& options);
  const ModelDescription& description() const { return description_; }

  // Validates every input (empty batch, invalid UTF-8, token ids out of
  // [0, vocab), empty token-id input, a text_pair without text, over-long
  // with truncate=false, attention layers out of range) BEFORE computing; errors are INVALID_ARGUMENT naming
  // the input index and the limit. The span runs as one padded batch; results
  // are in input order.
  absl::StatusOr<std::vector<EncodeResult>> Encode(absl::Span<const EncoderInput> inputs,
                                                   const EncodeOptions& options) const;
  // The same, as a job to run slice by slice; validation errors come here,
  // before any compute.
  absl::StatusOr<std::unique_ptr<EncodeJob>> StartEncode(absl::Span<const EncoderInput> inputs,
                                                         const EncodeOptions& options) const;
  // Token ids of `text` (no truncation).
  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text, bool add_special_tokens) const;
  std::vector<std::string> TokenStrings(absl::Span<const int32_t> ids) const;
  absl::StatusOr<std::string> Detokenize(absl::Span<const int32_t> ids, bool skip_special_tokens) const;
  // The model's maximum sequence length: sentence-transformers max_seq_length
  // if present, else max_position_embeddings.
  int max_tokens() const { return max_tokens_; }
  // Activation/scratch bytes a forward of that shape uses.
  int64_t ScratchBytes(int batch_size, int seq_len) const;
  // The pooling and normalisation the model directory asks for.
  PoolingMode default_pooling() const { return default_pooling_; }
  // A SPLADE model (its directory's SpladePooling module): kSplade is its
  // default pooling and the only one giving its sparse embeddings.
  bool sparse() const { return bert_ != nullptr && bert_->mlm_head() != nullptr; }
  bool default_normalize() const { return default_normalize_; }
  // Named prompts (config_sentence_transformers.json) and the default one's
  // name ("" if none).
  const std::map<std::string, std::string>& prompts() const { return prompts_; }
  const std::string& default_prompt_name() const { return default_prompt_name_; }
  const EncoderTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  friend class EncodeJob;
  EncoderModel() = default;
  // A llama.cpp GGUF embedding model (one file: weights, tokenizer,
  // <arch>.pooling_type; embeddings normalised as llama.cpp's server does):
  // a BERT ("bert", bert_gguf.h) or a decoder architecture.
  static absl::StatusOr<std::unique_ptr<EncoderModel>> LoadGguf(const std::string& path,
                                                                const EncoderLoadOptions& options);
  // Builds bert_ from a BERT-family config and its weights and takes its
  // sizes and description (the caller fills in name and source).
  absl::Status AdoptBert(const SafetensorsArchive& weights, const BertConfig& config, const EncoderLoadOptions& options,
                         const std::string& architecture);
  // A decoder-only embedding model's directory (see the file comment).
  static absl::StatusOr<std::unique_ptr<EncoderModel>> LoadCausal(const ModelDir& md,
                                                                  const EncoderLoadOptions& options);
  // Builds decoder_ from a decoder-only model's config and weights (no LM
  // head) and takes its sizes and description.
  absl::Status AdoptDecoder(LoadedDecoder loaded, const EncoderLoadOptions& options, const std::string& name,
                            const std::string& architecture);
  // The sentence-transformers modules' pooling, Dense layers (their weights
  // read here; the first takes hidden_size values), Normalize, prompts and
  // max_seq_length (capped at max_positions).
  absl::Status ReadSentenceTransformers(const ModelDir& md, int max_positions, int hidden_size);
  // The pooled vector through the Dense modules; returns it (or `pooled`
  // when there are none).
  Tensor ApplyDense(Tensor pooled) const;

  ModelDescription description_;
  std::unique_ptr<EncoderTokenizer> tokenizer_;
  // Exactly one of the two networks.
  std::unique_ptr<BertEncoder> bert_;
  std::shared_ptr<const DecoderModel> decoder_;
  // A decoder *ForSequenceClassification's score head ([labels, D], no
  // bias), read at each input's last token that is not pad_token_id (-1:
  // none, the last token), as transformers picks it.
  Tensor score_;
  int32_t score_pad_id_ = -1;
  // The network's sizes, whichever it is.
  int hidden_size_ = 0;
  int num_layers_ = 0;
  int num_heads_ = 0;
  int vocab_size_ = 0;
  // Whether a pair's second text reaches the model as segment 1 (the BERT
  // family's token-type table; see StartEncode).
  bool reads_segments_ = false;
  PoolingMode default_pooling_ = PoolingMode::kMean;
  bool default_normalize_ = false;
  std::map<std::string, std::string> prompts_;
  std::string default_prompt_name_;
  bool pooling_include_prompt_ = true;
  SpladePoolingConfig splade_;  // with a masked-language-model head
  // sentence-transformers Dense modules after the pooling, in order:
  // y = activation(W x + b).
  struct DenseLayer {
    Tensor weight;            // [out, in] f32
    std::vector<float> bias;  // [out] or empty
    bool tanh = false;
  };
  std::vector<DenseLayer> dense_;
  int max_tokens_ = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_ENCODER_MODEL_H_
