#include "engine/models/bert.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/attention/sdpa.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/models/bert_kernels.h"

namespace attnserve {
namespace {

// Checkpoints saved from BertModel name tensors "embeddings...."; those saved
// from a task model (BertForMaskedLM, ...) prefix them with "bert.".
std::string DetectPrefix(const SafetensorsArchive& w) {
  for (const char* p : {"", "bert.", "model."}) {
    if (w.Find(absl::StrCat(p, "embeddings.word_embeddings.weight")) != nullptr) return p;
  }
  return "";
}

absl::StatusOr<Linear> LoadLinear(const SafetensorsArchive& w, const std::string& name, int64_t out, int64_t in,
                                  DType storage, Activation act = Activation::kNone) {
  ASSIGN_OR_RETURN(Tensor weight, w.LoadWithShape(name + ".weight", {out, in}, DType::kF32));
  ASSIGN_OR_RETURN(Tensor bias, w.LoadWithShape(name + ".bias", {out}, DType::kF32));
  return Linear::Create(weight, &bias, storage, act);
}

// Q, K and V projections concatenated into one [3D, D] GEMM.
absl::StatusOr<Linear> LoadQkv(const SafetensorsArchive& w, const std::string& prefix, int64_t d, DType storage) {
  Tensor weight = Tensor::Empty({3 * d, d});
  Tensor bias = Tensor::Empty({3 * d});
  int part = 0;
  for (const char* name : {"query", "key", "value"}) {
    const std::string base = absl::StrCat(prefix, "attention.self.", name);
    ASSIGN_OR_RETURN(Tensor pw, w.LoadWithShape(base + ".weight", {d, d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor pb, w.LoadWithShape(base + ".bias", {d}, DType::kF32));
    std::memcpy(weight.f32() + part * d * d, pw.f32(), pw.bytes());
    std::memcpy(bias.f32() + part * d, pb.f32(), pb.bytes());
    ++part;
  }
  return Linear::Create(weight, &bias, storage, Activation::kNone);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BertEncoder>> BertEncoder::Load(const SafetensorsArchive& w, const BertConfig& c,
                                                               DType storage) {
  if (storage != DType::kF32 && storage != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat("encoder weight dtype must be f32 or bf16, got ", DTypeName(storage)));
  }
  std::unique_ptr<BertEncoder> m(new BertEncoder());
  m->config_ = c;
  m->storage_ = storage;
  const std::string p = DetectPrefix(w);
  const int64_t d = c.hidden_size;
  ASSIGN_OR_RETURN(m->word_, w.LoadWithShape(p + "embeddings.word_embeddings.weight", {c.vocab_size, d}, storage));
  ASSIGN_OR_RETURN(m->position_,
                   w.LoadWithShape(p + "embeddings.position_embeddings.weight", {c.max_positions, d}, storage));
  ASSIGN_OR_RETURN(m->token_type_,
                   w.LoadWithShape(p + "embeddings.token_type_embeddings.weight", {c.type_vocab_size, d}, storage));
  ASSIGN_OR_RETURN(m->emb_ln_g_, w.LoadWithShape(p + "embeddings.LayerNorm.weight", {d}, DType::kF32));
  ASSIGN_OR_RETURN(m->emb_ln_b_, w.LoadWithShape(p + "embeddings.LayerNorm.bias", {d}, DType::kF32));
  m->layers_.reserve(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string lp = absl::StrCat(p, "encoder.layer.", i, ".");
    ASSIGN_OR_RETURN(Linear qkv, LoadQkv(w, lp, d, storage));
    ASSIGN_OR_RETURN(Linear out, LoadLinear(w, lp + "attention.output.dense", d, d, storage));
    ASSIGN_OR_RETURN(Linear ff1, LoadLinear(w, lp + "intermediate.dense", c.intermediate_size, d, storage,
                                            Activation::kGeluErf));
    ASSIGN_OR_RETURN(Linear ff2, LoadLinear(w, lp + "output.dense", d, c.intermediate_size, storage));
    ASSIGN_OR_RETURN(Tensor ln1_g, w.LoadWithShape(lp + "attention.output.LayerNorm.weight", {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln1_b, w.LoadWithShape(lp + "attention.output.LayerNorm.bias", {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln2_g, w.LoadWithShape(lp + "output.LayerNorm.weight", {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln2_b, w.LoadWithShape(lp + "output.LayerNorm.bias", {d}, DType::kF32));
    m->layers_.push_back(Layer{std::move(qkv), std::move(out), std::move(ff1), std::move(ff2), std::move(ln1_g),
                               std::move(ln1_b), std::move(ln2_g), std::move(ln2_b)});
  }
  return m;
}

int64_t BertEncoder::weight_bytes() const {
  int64_t bytes = static_cast<int64_t>(word_.bytes() + position_.bytes() + token_type_.bytes() + emb_ln_g_.bytes() +
                                       emb_ln_b_.bytes());
  for (const Layer& l : layers_) {
    bytes += l.qkv.weight_bytes() + l.out.weight_bytes() + l.ff1.weight_bytes() + l.ff2.weight_bytes();
    bytes += static_cast<int64_t>(l.ln1_g.bytes() + l.ln1_b.bytes() + l.ln2_g.bytes() + l.ln2_b.bytes());
  }
  return bytes;
}

int64_t BertEncoder::ScratchBytes(int batch_size, int seq_len) const {
  const int64_t t = int64_t{batch_size} * seq_len;
  const int64_t d = config_.hidden_size;
  // x, qkv, ctx, tmp, ff (packed) + padded qkv and ctx when B > 1.
  int64_t floats = t * (d + 3 * d + d + d + config_.intermediate_size);
  if (batch_size > 1) floats += t * (3 * d + d);
  return floats * static_cast<int64_t>(sizeof(float));
}

absl::Status BertEncoder::Forward(absl::Span<const int32_t> token_ids, absl::Span<const int32_t> lengths,
                                  const BertForwardRequest& request, BertForwardResult* result) const {
  const int batch = static_cast<int>(lengths.size());
  if (batch == 0) return absl::InvalidArgumentError("BertEncoder::Forward: empty batch");
  int64_t total = 0;
  int max_len = 0;
  for (int b = 0; b < batch; ++b) {
    if (lengths[b] < 1 || lengths[b] > config_.max_positions) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder::Forward: length of sequence ", b, " is ",
                                                     lengths[b], ", outside [1, ", config_.max_positions, "]"));
    }
    total += lengths[b];
    max_len = std::max(max_len, lengths[b]);
  }
  if (total != static_cast<int64_t>(token_ids.size())) {
    return absl::InvalidArgumentError("BertEncoder::Forward: lengths do not sum to the number of token ids");
  }
  for (size_t i = 0; i < token_ids.size(); ++i) {
    if (token_ids[i] < 0 || token_ids[i] >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder::Forward: token id ", token_ids[i],
                                                     " outside [0, ", config_.vocab_size, ")"));
    }
  }
  for (int layer : request.attention_layers) {
    if (layer < 0 || layer >= config_.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention layer ", layer, " outside [0, ", config_.num_layers, ")"));
    }
  }
  const int d = config_.hidden_size;
  const int heads = config_.num_heads;
  const int head_dim = config_.head_dim();
  const float eps = config_.layer_norm_eps;
  std::vector<int64_t> starts(batch);
  for (int b = 0, s = 0; b < batch; s += lengths[b], ++b) starts[b] = s;

  // Embeddings. Token type is always 0 (single-sequence inputs).
  Tensor x = Tensor::Empty({total, d});
  float* xp = x.f32();
#pragma omp parallel for schedule(static)
  for (int b = 0; b < batch; ++b) {
    for (int pos = 0; pos < lengths[b]; ++pos) {
      const int64_t t = starts[b] + pos;
      float* row = xp + t * d;
      bert_internal::AddRow(word_, token_ids[t], row, /*first=*/true);
      bert_internal::AddRow(position_, pos, row, false);
      bert_internal::AddRow(token_type_, 0, row, false);
    }
  }
  bert_internal::AddLayerNorm(xp, nullptr, emb_ln_g_.f32(), emb_ln_b_.f32(), total, d, eps);
  if (request.hidden_states) result->hidden_states.push_back(x.Copy());

  Tensor qkv = Tensor::Empty({total, 3 * d});
  Tensor ctx = Tensor::Empty({total, d});
  Tensor tmp = Tensor::Empty({total, d});
  Tensor ff = Tensor::Empty({total, config_.intermediate_size});
  // Padded attention layout, used when the batch has more than one sequence.
  // Padding rows stay zero: they are never written.
  const bool padded = batch > 1;
  Tensor qkv_pad, ctx_pad;
  if (padded) {
    qkv_pad = Tensor::Zeros({batch, max_len, 3 * d});
    ctx_pad = Tensor::Empty({batch, max_len, d});
  }
  std::vector<int32_t> key_lengths(lengths.begin(), lengths.end());

  for (int li = 0; li < config_.num_layers; ++li) {
    const Layer& layer = layers_[li];
    RETURN_IF_ERROR(layer.qkv.Forward(xp, total, qkv.f32()));
    const float* qkv_src = qkv.f32();
    float* ctx_dst = ctx.f32();
    const int n = padded ? max_len : static_cast<int>(total);
    if (padded) {
#pragma omp parallel for schedule(static)
      for (int b = 0; b < batch; ++b) {
        std::memcpy(qkv_pad.f32() + int64_t{b} * max_len * 3 * d, qkv.f32() + starts[b] * 3 * d,
                    sizeof(float) * lengths[b] * 3 * d);
      }
      qkv_src = qkv_pad.f32();
      ctx_dst = ctx_pad.f32();
    }
    SdpaArgs args;
    args.shape = {batch, heads, heads, n, n, head_dim};
    const int64_t row3 = 3 * int64_t{d};
    args.q = {qkv_src, DType::kF32, n * row3, head_dim, row3};
    args.k = {qkv_src + d, DType::kF32, n * row3, head_dim, row3};
    args.v = {qkv_src + 2 * d, DType::kF32, n * row3, head_dim, row3};
    args.masks.key_lengths = key_lengths.data();
    args.out = AttnView::Interleaved(ctx_dst, heads, n, head_dim);
    Tensor weights;
    if (std::find(request.attention_layers.begin(), request.attention_layers.end(), li) !=
        request.attention_layers.end()) {
      if (request.average_heads) {
        weights = Tensor::Empty({batch, n, n});
        args.options.weights = AttentionWeightsMode::kAveraged;
      } else {
        weights = Tensor::Empty({batch, heads, n, n});
        args.options.weights = AttentionWeightsMode::kPerHead;
      }
      args.weights = weights.f32();
    }
    RETURN_IF_ERROR(ScaledDotProductAttention(args));
    if (!weights.empty()) result->attentions.emplace_back(li, std::move(weights));
    if (padded) {
#pragma omp parallel for schedule(static)
      for (int b = 0; b < batch; ++b) {
        std::memcpy(ctx.f32() + starts[b] * d, ctx_pad.f32() + int64_t{b} * max_len * d,
                    sizeof(float) * lengths[b] * d);
      }
    }
    RETURN_IF_ERROR(layer.out.Forward(ctx.f32(), total, tmp.f32()));
    bert_internal::AddLayerNorm(xp, tmp.f32(), layer.ln1_g.f32(), layer.ln1_b.f32(), total, d, eps);
    RETURN_IF_ERROR(layer.ff1.Forward(xp, total, ff.f32()));
    RETURN_IF_ERROR(layer.ff2.Forward(ff.f32(), total, tmp.f32()));
    bert_internal::AddLayerNorm(xp, tmp.f32(), layer.ln2_g.f32(), layer.ln2_b.f32(), total, d, eps);
    if (request.hidden_states) result->hidden_states.push_back(x.Copy());
  }
  result->last_hidden = std::move(x);
  return absl::OkStatus();
}

}  // namespace attnserve
