#include "engine/models/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/models/norms.h"

namespace attnserve {
namespace {

std::vector<float> ToVector(const Tensor& t, float offset = 0.0f) {
  if (t.empty()) return {};
  std::vector<float> v(t.f32(), t.f32() + t.numel());
  if (offset != 0.0f)
    for (float& x : v) x += offset;  // Gemma's (1 + weight)
  return v;
}

// Row `r` of a [rows, n] f32 or bf16 matrix, added to (or copied into) out.
void ReadRow(const Tensor& m, int64_t r, bool add, float* out) {
  const int64_t n = m.dim(1);
  if (m.dtype() == DType::kF32) {
    const float* src = m.f32() + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = (add ? out[i] : 0.0f) + src[i];
  } else if (m.dtype() == DType::kBF16) {
    const uint16_t* src = m.u16() + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = (add ? out[i] : 0.0f) + Bf16ToFloat(src[i]);
  } else {
    const uint16_t* src = m.u16() + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = (add ? out[i] : 0.0f) + F16ToFloat(src[i]);
  }
}

template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DecoderModel>> DecoderModel::Load(
    const std::string& path, const DecoderLoadOptions& options) {
  if (options.weight_dtype != DType::kF32 && options.weight_dtype != DType::kBF16 &&
      options.weight_dtype != DType::kQ8_0) {
    return absl::InvalidArgumentError(absl::StrCat("decoder weight dtype must be f32, bf16 or q8_0, got ",
                                                   DTypeName(options.weight_dtype)));
  }
  ASSIGN_OR_RETURN(LoadedDecoder loaded, LoadDecoder(path, options.weight_dtype));
  return FromLoaded(std::move(loaded), options);
}

absl::StatusOr<std::shared_ptr<const DecoderModel>> DecoderModel::FromLoaded(
    LoadedDecoder loaded, const DecoderLoadOptions& options) {
  if (options.kv_dtype != DType::kF32 && options.kv_dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder kv dtype must be f32 or bf16, got ", DTypeName(options.kv_dtype)));
  }
  std::shared_ptr<DecoderModel> model(new DecoderModel());
  RETURN_IF_ERROR(model->Build(std::move(loaded), options));
  return std::shared_ptr<const DecoderModel>(std::move(model));
}

absl::Status DecoderModel::Build(LoadedDecoder loaded, const DecoderLoadOptions& options) {
  config_ = std::move(loaded.config);
  RETURN_IF_ERROR(config_.Validate());
  if (loaded.tokenizer == nullptr && !options.hidden_states_only) {
    return absl::InvalidArgumentError(absl::StrCat(loaded.source, ": model has no tokenizer"));
  }
  if (config_.bidirectional && !options.hidden_states_only) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded.source, ": use_bidirectional_attention is true: an embedding model (EmbeddingGemma), which cannot "
                       "generate; serve it with --encoder-model"));
  }
  tokenizer_ = std::move(loaded.tokenizer);
  chat_template_ = std::move(loaded.chat_template);
  DecoderWeights& w = loaded.weights;
  if (static_cast<int>(w.layers.size()) != config_.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(loaded.source, ": ", w.layers.size(),
                                                   " layers of weights, config says ",
                                                   config_.num_layers));
  }
  if (config_.num_kv_heads <= 0 || config_.num_heads % config_.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(loaded.source, ": num_heads ", config_.num_heads,
                                                   " not a multiple of num_kv_heads ",
                                                   config_.num_kv_heads));
  }
  const DType storage = options.weight_dtype;
  RopeScaling& scaling = config_.rope_scaling;
  const bool longrope = config_.positions == PositionKind::kRope && scaling.kind == RopeScalingKind::kLongRope;
  if (longrope) {
    // One factor list for every sequence, chosen by the context served, as
    // llama.cpp chooses (engine/formats/decoder_config.h); with no context
    // asked for, the original one, where the short list gives transformers'
    // outputs exactly.
    const int served = options.context_length > 0 ? options.context_length : scaling.original_max_positions;
    scaling.use_long = served > scaling.original_max_positions;
  }
  if (config_.positions == PositionKind::kRope) {
    ASSIGN_OR_RETURN(Rope rope, Rope::Create(config_));
    rope_.emplace(std::move(rope));
    if (config_.local_rope_theta > 0) {
      DecoderConfig local = config_;
      local.rope_theta = config_.local_rope_theta;
      local.rope_scaling = RopeScaling();
      local.rope_freq_factors.clear();
      ASSIGN_OR_RETURN(Rope local_rope, Rope::Create(local));
      local_rope_.emplace(std::move(local_rope));
    }
  }
  int64_t bytes = 0;
  blocks_.reserve(config_.num_layers);
  for (int l = 0; l < config_.num_layers; ++l) {
    ASSIGN_OR_RETURN(DecoderBlock b, DecoderBlock::Create(config_, w.layers[l], storage,
                                                          options.matmul_precision, l));
    bytes += b.weight_bytes();
    blocks_.push_back(std::move(b));
    w.layers[l] = DecoderLayerWeights();  // packed copies live in the Linears now
  }
  final_norm_w_ = ToVector(w.final_norm_weight, config_.norm == NormKind::kRmsNorm ? config_.norm_weight_offset : 0.0f);
  final_norm_b_ = ToVector(w.final_norm_bias);
  if (options.hidden_states_only) {
    // An embedder: the table is read row by row, and nothing projects back
    // onto the vocabulary.
    token_embedding_ = std::move(w.token_embedding);
    w.lm_head = Tensor();
  } else {
    // The LM head only ever sees one row per sequence (the last token): the
    // packed small-M kernel, also for f32 (oneDNN is slow at M = 2..16).
    ASSIGN_OR_RETURN(Linear head, Linear::Create(w.LmHead(), nullptr, storage, Activation::kNone,
                                                 Linear::Kernel::kPacked));
    lm_head_.emplace(std::move(head));
    // Tied embeddings: the table is held once, as the LM head's packed
    // weights, and Embed reads its rows from there.
    tied_embedding_ = w.lm_head.empty();
    if (!tied_embedding_) token_embedding_ = std::move(w.token_embedding);
  }
  if (storage == DType::kQ8_0 && !token_embedding_.empty()) {
    // The table in Q8_0 blocks too, as llama.cpp holds a Q8_0 file's, its
    // rows dequantised as they are looked up.
    embedding_q8_.emplace(PackedMatrix::Pack(token_embedding_, DType::kQ8_0));
    token_embedding_ = Tensor();
  }
  w.token_embedding = Tensor();
  position_embedding_ = std::move(w.position_embedding);
  bytes += static_cast<int64_t>(token_embedding_.bytes() + position_embedding_.bytes()) +
           (embedding_q8_.has_value() ? embedding_q8_->bytes() : 0) +
           (lm_head_.has_value() ? lm_head_->weight_bytes() : 0) +
           static_cast<int64_t>(sizeof(float) * (final_norm_w_.size() + final_norm_b_.size()));

  max_positions_ = config_.positions == PositionKind::kLearned
                       ? config_.max_positions
                       : std::max(config_.max_positions, config_.trained_max_positions);
  if (options.context_length < 0 ||
      (options.context_length > max_positions_ && config_.positions == PositionKind::kLearned)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context_length ", options.context_length, " is not in [0, ", max_positions_,
        "] (learned position table)"));
  }
  if (options.context_length > 0) {
    max_positions_ = options.context_length;
  } else if (longrope) {
    max_positions_ = scaling.original_max_positions;
  }

  ModelDescription& d = description_;
  d.name = config_.name.empty() ? std::filesystem::path(loaded.source).filename().string()
                                : config_.name;
  d.architecture = config_.architecture;
  d.source = loaded.source;
  d.num_layers = config_.num_layers;
  d.num_heads = config_.num_heads;
  d.num_kv_heads = config_.num_kv_heads;
  d.head_dim = config_.head_dim;
  d.hidden_size = config_.hidden_size;
  d.vocab_size = config_.vocab_size;
  d.max_positions = max_positions_;
  d.weight_dtype = storage;
  d.matmul_precision = options.matmul_precision;
  d.kv_dtype = options.kv_dtype;
  d.weight_bytes = bytes;
  d.kv_bytes_per_token = config_.KvBytesPerToken(options.kv_dtype);
  d.num_experts = config_.num_experts;
  d.experts_per_token = config_.experts_per_token;
  if (options.prepare_kernels) {
    for (const DecoderBlock& b : blocks_) RETURN_IF_ERROR(b.CreateAllPrimitives());
  }
  return absl::OkStatus();
}

KvCacheShape DecoderModel::kv_shape() const {
  return KvCacheShape{config_.num_layers, config_.num_kv_heads, config_.head_dim};
}

void DecoderModel::Embed(const ForwardBatch& batch, float* hidden) const {
  const int D = config_.hidden_size;
  for (int t = 0; t < batch.num_tokens(); ++t) {
    if (tied_embedding_) {
      lm_head_->ReadRow(batch.tokens[t], hidden + int64_t{t} * D);
    } else if (embedding_q8_.has_value()) {
      embedding_q8_->ReadRow(batch.tokens[t], hidden + int64_t{t} * D);
    } else {
      ReadRow(token_embedding_, batch.tokens[t], false, hidden + int64_t{t} * D);
    }
    if (config_.embedding_scale > 0) {
      float* row = hidden + int64_t{t} * D;
      for (int i = 0; i < D; ++i) row[i] *= config_.embedding_scale;
    }
    if (config_.positions == PositionKind::kLearned) {
      ReadRow(position_embedding_, batch.positions[t], true, hidden + int64_t{t} * D);
    }
  }
}

absl::Status DecoderModel::BeginForward(const ForwardBatch& batch, const KvCache* kv, DecoderScratch& sc) const {
  const int64_t T = batch.num_tokens();
  const int D = config_.hidden_size;
  for (int64_t t = 0; t < T; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", batch.tokens[t],
                                                     " out of range [0, ", config_.vocab_size, ")"));
    }
    if (batch.positions[t] < 0 || batch.positions[t] >= max_positions_) {
      return absl::InvalidArgumentError(absl::StrCat("position ", batch.positions[t],
                                                     " out of range [0, ", max_positions_, ")"));
    }
    const int s = batch.token_seq[t];
    if (kv == nullptr) {
      if (batch.positions[t] != t - batch.seq_start[s]) {
        return absl::InvalidArgumentError(absl::StrCat("sequence ", batch.seq_ids[s], ": position ",
                                                       batch.positions[t], " where ", t - batch.seq_start[s],
                                                       " was expected (an uncached forward starts at 0)"));
      }
    } else if (batch.positions[t] >= static_cast<int>(kv->BlockTable(batch.seq_ids[s]).size()) *
                                         kv->block_size()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sequence ", batch.seq_ids[s], ": no KV block reserved for position ", batch.positions[t]));
    }
  }
  const int qkv_row = (config_.num_heads + 2 * config_.num_kv_heads) * config_.head_dim;
  Grow(sc.hidden, T * D);
  Grow(sc.normed, T * D);
  Grow(sc.qkv, T * qkv_row);
  Grow(sc.attn, T * config_.num_heads * config_.head_dim);
  Grow(sc.q, T * config_.num_heads * config_.head_dim);
  Grow(sc.proj, T * D);
  // The MLP's width: a mixture's shared expert may be wider than its experts.
  const int64_t mlp_width = std::max(config_.intermediate_size, config_.shared_expert_size);
  Grow(sc.mlp_in, T * 2 * mlp_width);
  Grow(sc.mlp_act, T * mlp_width);
  if (const int E = config_.num_experts; E > 0) {
    const int64_t pairs = T * config_.experts_per_token;
    Grow(sc.router_logits, T * E);
    Grow(sc.expert_choice, pairs);
    Grow(sc.expert_weight, pairs);
    Grow(sc.expert_rows, pairs);
    Grow(sc.expert_in, T * D);
    Grow(sc.expert_out, T * D);
  }
  Embed(batch, sc.hidden.data());
  if (rope_.has_value()) {
    Grow(sc.rope, T * rope_->rope_dim());
    rope_->BatchAngles(batch, sc.rope.data());  // per-sequence base for dynamic NTK
  }
  if (local_rope_.has_value()) {
    Grow(sc.local_rope, T * local_rope_->rope_dim());
    local_rope_->BatchAngles(batch, sc.local_rope.data());
  }
  return absl::OkStatus();
}

absl::Status DecoderModel::ForwardLayer(int layer, const ForwardBatch& batch, KvCache* kv,
                                        DecoderScratch& sc) const {
  if (layer < 0 || layer >= static_cast<int>(blocks_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer, " is outside [0, ", blocks_.size(), ")"));
  }
  const bool local = local_rope_.has_value() && config_.LayerWindow(layer) > 0;
  // SmolLM3's NoPE layers rotate nothing.
  const bool rotates = config_.rope_layers.empty() || config_.rope_layers[layer];
  const Rope* rope = !rotates ? nullptr : local ? &*local_rope_ : rope_.has_value() ? &*rope_ : nullptr;
  const float* angles = rope == nullptr ? nullptr : local ? sc.local_rope.data() : sc.rope.data();
  if (kv == nullptr) return blocks_[layer].ForwardUncached(batch, rope, angles, sc);
  return blocks_[layer].Forward(batch, *kv, rope, angles, sc);
}

void DecoderModel::FinalNorm(float* x, int64_t rows) const {
  const int D = config_.hidden_size;
  if (config_.norm == NormKind::kRmsNorm) {
    RmsNorm(x, final_norm_w_.data(), rows, D, config_.norm_eps, x);
  } else {
    LayerNorm(x, final_norm_w_.data(), final_norm_b_.empty() ? nullptr : final_norm_b_.data(), rows, D,
              config_.norm_eps, x);
  }
}

int64_t DecoderModel::ScratchBytes(int64_t tokens) const {
  const int64_t qkv_row = int64_t{config_.num_heads + 2 * config_.num_kv_heads} * config_.head_dim;
  const int64_t heads_row = int64_t{config_.num_heads} * config_.head_dim;
  const int64_t rope_row = (rope_.has_value() ? rope_->rope_dim() : 0) + (local_rope_.has_value() ? local_rope_->rope_dim() : 0);
  // A mixture adds router logits, k choices and weights, k grouped rows
  // (4-byte ints counted as floats) and an expert's input and output rows.
  const int64_t moe_row = config_.num_experts > 0 ? int64_t{config_.num_experts} + 3 * config_.experts_per_token +
                                                        2 * int64_t{config_.hidden_size}
                                                  : 0;
  const int64_t mlp_width = std::max(config_.intermediate_size, config_.shared_expert_size);
  const int64_t floats_per_token = 3 * int64_t{config_.hidden_size} + qkv_row + 2 * heads_row + 3 * mlp_width +
                                   rope_row + moe_row;
  return tokens * floats_per_token * static_cast<int64_t>(sizeof(float));
}

absl::Status DecoderModel::Forward(const ForwardBatch& batch, KvCache& kv, DecoderScratch& sc,
                                   std::vector<float>& logits) const {
  if (!lm_head_.has_value()) {
    return absl::FailedPreconditionError("DecoderModel::Forward: loaded without an LM head (hidden_states_only)");
  }
  const int64_t T = batch.num_tokens();
  const int S = batch.num_seqs();
  const int D = config_.hidden_size;
  if (T == 0) {
    logits.clear();
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(BeginForward(batch, &kv, sc));
  for (int l = 0; l < static_cast<int>(blocks_.size()); ++l) RETURN_IF_ERROR(ForwardLayer(l, batch, &kv, sc));
  // Final norm and lm head on each sequence's last token only (or on the
  // tokens asked for).
  const bool listed = !batch.logit_tokens.empty();
  const int R = listed ? static_cast<int>(batch.logit_tokens.size()) : S;
  Grow(sc.normed, int64_t{R} * D);
  for (int r = 0; r < R; ++r) {
    const int64_t t = listed ? batch.logit_tokens[r] : batch.seq_start[r + 1] - 1;
    if (t < 0 || t >= T) {
      return absl::InvalidArgumentError(absl::StrCat("logit_tokens[", r, "] = ", t, " is not in [0, ", T, ")"));
    }
    std::memcpy(sc.normed.data() + int64_t{r} * D, sc.hidden.data() + t * D, sizeof(float) * D);
  }
  FinalNorm(sc.normed.data(), R);
  logits.resize(int64_t{R} * config_.vocab_size);
  RETURN_IF_ERROR(lm_head_->Forward(sc.normed.data(), R, logits.data()));
  if (const float scale = config_.logit_scale; scale > 0) {
    for (float& x : logits) x /= scale;  // Granite's logits_scaling
  }
  if (const float cap = config_.final_logit_softcap; cap > 0) {
    for (float& x : logits) x = cap * std::tanh(x / cap);
  }
  return absl::OkStatus();
}

}  // namespace attnserve
