// ModernBERT's layers inside BertEncoder / BertForwardJob (see
// ModernBertConfig in bert_config.h): loading its tensors and the four
// kinds of forward slice, pre-norm where BERT's are post-norm; and the
// rotary tables a rotary BERT (Nomic) shares with them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/decoder_weights.h"
#include "engine/models/bert.h"
#include "engine/models/bert_kernels.h"
#include "engine/ops/activation.h"

namespace attnserve {
namespace {

// A LayerNorm's weight and bias (zeros when the config has no norm biases).
absl::Status LoadNorm(const SafetensorsArchive& w, const std::string& name, int64_t d, bool bias, Tensor* g,
                      Tensor* b) {
  ASSIGN_OR_RETURN(*g, w.LoadWithShape(name + ".weight", {d}, DType::kF32));
  if (bias) {
    ASSIGN_OR_RETURN(*b, w.LoadWithShape(name + ".bias", {d}, DType::kF32));
  } else {
    *b = Tensor::Zeros({d});
  }
  return absl::OkStatus();
}

absl::StatusOr<Linear> LoadProjection(const SafetensorsArchive& w, const std::string& name, int64_t out, int64_t in,
                                      bool bias, DType storage, MatmulPrecision precision) {
  ASSIGN_OR_RETURN(Tensor weight, w.LoadWithShape(name + ".weight", {out, in}, DType::kF32));
  Tensor b;
  if (bias) {
    ASSIGN_OR_RETURN(b, w.LoadWithShape(name + ".bias", {out}, DType::kF32));
  }
  return Linear::Create(weight, bias ? &b : nullptr, storage, Activation::kNone, Linear::Kernel::kAuto, precision);
}

// Rotary angles of every position for one theta: [positions, head_dim]
// (cos of each frequency, then sin), as transformers' default rope computes
// them; with `scale` != 1 the inverse frequencies divided by it (a linear
// rope scaling: GTE's fixed NTK).
absl::StatusOr<Rope> ModernRope(const BertConfig& c, float theta, float scale = 1.0f) {
  DecoderConfig d;
  if (scale != 1.0f) {
    d.rope_scaling.kind = RopeScalingKind::kLinear;
    d.rope_scaling.factor = scale;
  }
  d.positions = PositionKind::kRope;
  d.head_dim = c.head_dim();
  d.rope_dim = c.head_dim();
  d.rope_theta = theta;
  d.rope_pairing = RopePairing::kHalfSplit;
  d.max_positions = d.trained_max_positions = c.max_positions;
  return Rope::Create(d);
}

Tensor AngleTable(const Rope& rope, int positions) {
  Tensor table = Tensor::Empty({positions, rope.rope_dim()});
  for (int p = 0; p < positions; ++p) rope.Angles(p, table.f32() + int64_t{p} * rope.rope_dim());
  return table;
}

void AddInPlace(float* x, const float* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

absl::Status BertEncoder::LoadModernBert(const SafetensorsArchive& w, const std::string& p, DType storage,
                                         MatmulPrecision precision) {
  const BertConfig& c = config_;
  const ModernBertConfig& m = c.modern;
  const int64_t d = c.hidden_size;
  const int64_t inter = c.intermediate_size;
  ASSIGN_OR_RETURN(word_, w.LoadWithShape(p + "embeddings.tok_embeddings.weight", {c.vocab_size, d},
                                          MatrixStorage(storage, {c.vocab_size, d})));
  RETURN_IF_ERROR(LoadNorm(w, p + "embeddings.norm", d, m.norm_bias, &emb_ln_g_, &emb_ln_b_));
  layers_.reserve(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string lp = absl::StrCat(p, "layers.", i, ".");
    ASSIGN_OR_RETURN(Linear qkv, LoadProjection(w, lp + "attn.Wqkv", 3 * d, d, m.attention_bias, storage, precision));
    ASSIGN_OR_RETURN(Linear out, LoadProjection(w, lp + "attn.Wo", d, d, m.attention_bias, storage, precision));
    ASSIGN_OR_RETURN(Linear wi, LoadProjection(w, lp + "mlp.Wi", 2 * inter, d, m.mlp_bias, storage, precision));
    ASSIGN_OR_RETURN(Linear wo, LoadProjection(w, lp + "mlp.Wo", d, inter, m.mlp_bias, storage, precision));
    Tensor ln1_g, ln1_b, ln2_g, ln2_b;
    // The first layer's attention norm is the identity (the embeddings were just normalised).
    if (i > 0) RETURN_IF_ERROR(LoadNorm(w, lp + "attn_norm", d, m.norm_bias, &ln1_g, &ln1_b));
    RETURN_IF_ERROR(LoadNorm(w, lp + "mlp_norm", d, m.norm_bias, &ln2_g, &ln2_b));
    layers_.push_back(Layer{std::move(qkv), std::move(out), std::move(wi), std::move(wo), std::move(ln1_g),
                            std::move(ln1_b), std::move(ln2_g), std::move(ln2_b)});
  }
  RETURN_IF_ERROR(LoadNorm(w, p + "final_norm", d, m.norm_bias, &final_ln_g_, &final_ln_b_));
  ASSIGN_OR_RETURN(Rope global, ModernRope(c, m.global_rope_theta));
  ASSIGN_OR_RETURN(Rope local, ModernRope(c, m.local_rope_theta));
  rope_global_ = AngleTable(global, c.max_positions);
  rope_local_ = AngleTable(local, c.max_positions);
  rope_.emplace(std::move(global));
  return absl::OkStatus();
}

absl::Status BertEncoder::LoadRotary() {
  ASSIGN_OR_RETURN(Rope rope, ModernRope(config_, config_.rotary_theta, config_.rotary_scale));
  rope_global_ = AngleTable(rope, config_.max_positions);
  rope_.emplace(std::move(rope));
  return absl::OkStatus();
}

void BertForwardJob::RotateQueriesAndKeys(const Tensor& angles) {
  const BertConfig& config = model_->config_;
  const int d = config.hidden_size;
  const Rope& rope = *model_->rope_;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < batch_; ++b) {
    for (int pos = 0; pos < lengths_[b]; ++pos) {
      float* row = qkv_.f32() + (starts_[b] + pos) * 3 * int64_t{d};
      const float* cos_sin = angles.f32() + int64_t{pos} * config.head_dim();
      rope.Rotate(row, config.num_heads, cos_sin);      // queries
      rope.Rotate(row + d, config.num_heads, cos_sin);  // keys
    }
  }
}

// x = LayerNorm(token embedding), no positions or segments.
void BertForwardJob::ModernEmbed() {
  const BertConfig& config = model_->config_;
  float* xp = x_.f32();
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < total_; ++t) {
    bert_internal::AddRow(model_->word_, token_ids_[t], xp + t * config.hidden_size, /*first=*/true);
  }
  bert_internal::AddLayerNorm(xp, nullptr, model_->emb_ln_g_.f32(), model_->emb_ln_b_.f32(), total_,
                              config.hidden_size, config.layer_norm_eps);
  if (request_.hidden_states) result_.hidden_states.push_back(x_.Copy());
}

// x += Wo(Attention(rope(Wqkv(attn_norm(x))))), a local layer's keys within
// the window.
absl::Status BertForwardJob::ModernAttentionBlock(int li) {
  const BertConfig& config = model_->config_;
  const BertEncoder::Layer& layer = model_->layers_[li];
  const bool global = config.modern.global_layers[li];
  const int d = config.hidden_size;
  const float* src = x_.f32();
  if (!layer.ln1_g.empty()) {
    std::memcpy(tmp_.f32(), x_.f32(), sizeof(float) * total_ * d);
    bert_internal::AddLayerNorm(tmp_.f32(), nullptr, layer.ln1_g.f32(), layer.ln1_b.f32(), total_, d,
                                config.layer_norm_eps);
    src = tmp_.f32();
  }
  RETURN_IF_ERROR(layer.qkv.Forward(src, total_, qkv_.f32()));
  RotateQueriesAndKeys(global ? model_->rope_global_ : model_->rope_local_);
  AttentionMasks masks;
  // Local layers: the kernels visit only the keys within the window.
  if (!global) masks.window = config.modern.window;
  RETURN_IF_ERROR(SelfAttention(li, masks));
  RETURN_IF_ERROR(layer.out.Forward(ctx_.f32(), total_, tmp_.f32()));
  AddInPlace(x_.f32(), tmp_.f32(), total_ * d);
  return absl::OkStatus();
}

// glu = gelu(input) * gate, [input, gate] = Wi(mlp_norm(x)).
absl::Status BertForwardJob::ModernFeedForwardUp(int li) {
  const BertConfig& config = model_->config_;
  const BertEncoder::Layer& layer = model_->layers_[li];
  const int d = config.hidden_size;
  const int inter = config.intermediate_size;
  std::memcpy(tmp_.f32(), x_.f32(), sizeof(float) * total_ * d);
  bert_internal::AddLayerNorm(tmp_.f32(), nullptr, layer.ln2_g.f32(), layer.ln2_b.f32(), total_, d,
                              config.layer_norm_eps);
  RETURN_IF_ERROR(layer.ff1.Forward(tmp_.f32(), total_, ff_.f32()));
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < total_; ++t) {
    float* input = ff_.f32() + t * 2 * inter;
    const float* gate = input + inter;
    float* out = glu_.f32() + t * inter;
    ApplyActivation(Activation::kGeluErf, input, inter);
    for (int k = 0; k < inter; ++k) out[k] = input[k] * gate[k];
  }
  return absl::OkStatus();
}

// x += Wo(glu); after the last layer, x = final_norm(x).
absl::Status BertForwardJob::ModernFeedForwardDown(int li) {
  const BertConfig& config = model_->config_;
  const BertEncoder::Layer& layer = model_->layers_[li];
  const int d = config.hidden_size;
  RETURN_IF_ERROR(layer.ff2.Forward(glu_.f32(), total_, tmp_.f32()));
  AddInPlace(x_.f32(), tmp_.f32(), total_ * d);
  // Hidden states are the layers' outputs, before the final norm.
  if (request_.hidden_states) result_.hidden_states.push_back(x_.Copy());
  if (li == config.num_layers - 1) {
    bert_internal::AddLayerNorm(x_.f32(), nullptr, model_->final_ln_g_.f32(), model_->final_ln_b_.f32(), total_, d,
                                config.layer_norm_eps);
  }
  return absl::OkStatus();
}

}  // namespace attnserve
