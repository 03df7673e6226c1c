#include "engine/models/bert.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/attention/sdpa.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/formats/decoder_weights.h"
#include "engine/models/bert_kernels.h"
#include "engine/ops/activation.h"

namespace attnserve {
namespace {

// Checkpoints saved from BertModel / XLMRobertaModel / MPNetModel /
// DistilBertModel name tensors "embeddings...."; those saved from a task
// model (BertForMaskedLM, XLMRobertaForSequenceClassification, ...) prefix
// them with "bert.", "roberta.", "mpnet." or "distilbert.".
// ModernBERT's are "embeddings.tok_embeddings...", "model." in a task model.
std::string DetectPrefix(const SafetensorsArchive& w, EncoderFamily family) {
  const char* table = family == EncoderFamily::kModernBert ? "embeddings.tok_embeddings.weight"
                                                           : "embeddings.word_embeddings.weight";
  for (const char* p : {"", "bert.", "roberta.", "mpnet.", "distilbert.", "deberta.", "electra.", "model."}) {
    if (w.Find(absl::StrCat(p, table)) != nullptr) return p;
  }
  return "";
}

// `bias` false: the projection has none (Nomic BERT's).
absl::StatusOr<Linear> LoadLinear(const SafetensorsArchive& w, const std::string& name, int64_t out, int64_t in,
                                  DType storage, MatmulPrecision precision, Activation act = Activation::kNone,
                                  bool bias = true) {
  ASSIGN_OR_RETURN(Tensor weight, w.LoadWithShape(name + ".weight", {out, in}, DType::kF32));
  Tensor b;
  if (bias) {
    ASSIGN_OR_RETURN(b, w.LoadWithShape(name + ".bias", {out}, DType::kF32));
  }
  return Linear::Create(weight, bias ? &b : nullptr, storage, act, Linear::Kernel::kAuto, precision);
}


// Where a layer's tensors are, under `<prefix><layers><i>.`: BERT's
// encoder.layer.i.attention.self.query / attention.output.dense /
// attention.output.LayerNorm / intermediate.dense / output.dense /
// output.LayerNorm; MPNet's attention.attn.q / attention.attn.o /
// attention.LayerNorm and BERT's feed-forward; DistilBERT's
// transformer.layer.i.attention.q_lin / attention.out_lin / sa_layer_norm /
// ffn.lin1 / ffn.lin2 / output_layer_norm.
struct LayerNames {
  const char* layers;
  const char* q;
  const char* k;
  const char* v;
  const char* out;
  const char* norm1;
  const char* ff1;
  const char* ff2;
  const char* norm2;
};
LayerNames LayerNamesOf(EncoderFamily family) {
  if (family == EncoderFamily::kMpnet) {
    return {"encoder.layer.", "attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o",
            "attention.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"};
  }
  if (family == EncoderFamily::kDebertaV2) {
    return {"encoder.layer.", "attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj",
            "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
            "output.LayerNorm"};
  }
  if (family == EncoderFamily::kDistilBert) {
    return {"transformer.layer.", "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
            "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm"};
  }
  return {"encoder.layer.", "attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
          "output.LayerNorm"};
}

ClassifierHead::Kind ClassifierKindOf(EncoderFamily family) {
  switch (family) {
    case EncoderFamily::kBert:
      return ClassifierHead::Kind::kBertPooler;
    case EncoderFamily::kDistilBert:
      return ClassifierHead::Kind::kDistilBert;
    case EncoderFamily::kModernBert:
      return ClassifierHead::Kind::kModernBert;
    case EncoderFamily::kDebertaV2:
      return ClassifierHead::Kind::kDeberta;
    case EncoderFamily::kElectra:
      return ClassifierHead::Kind::kElectra;
    case EncoderFamily::kRoberta:
    case EncoderFamily::kMpnet:
      return ClassifierHead::Kind::kRoberta;
  }
  return ClassifierHead::Kind::kBertPooler;
}

// Projections of `rows` outputs each (the named tensors, [rows, d], and
// with `has_bias` their [rows] biases) stacked into one GEMM, in order:
// BERT's Q, K and V; SwiGLU's up then gate.
absl::StatusOr<Linear> LoadStacked(const SafetensorsArchive& w, const std::vector<std::string>& names, int64_t rows,
                                   int64_t d, DType storage, MatmulPrecision precision, bool has_bias) {
  const int64_t n = static_cast<int64_t>(names.size());
  Tensor weight = Tensor::Empty({n * rows, d});
  Tensor bias = Tensor::Empty({n * rows});
  for (int64_t part = 0; part < n; ++part) {
    const std::string& base = names[static_cast<size_t>(part)];
    ASSIGN_OR_RETURN(Tensor pw, w.LoadWithShape(base + ".weight", {rows, d}, DType::kF32));
    std::memcpy(weight.f32() + part * rows * d, pw.f32(), pw.bytes());
    if (has_bias) {
      ASSIGN_OR_RETURN(Tensor pb, w.LoadWithShape(base + ".bias", {rows}, DType::kF32));
      std::memcpy(bias.f32() + part * rows, pb.f32(), pb.bytes());
    }
  }
  return Linear::Create(weight, has_bias ? &bias : nullptr, storage, Activation::kNone, Linear::Kernel::kAuto,
                        precision);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BertEncoder>> BertEncoder::Load(const SafetensorsArchive& w, const BertConfig& c,
                                                               DType storage,
                                                               MatmulPrecision precision) {
  if (storage != DType::kF32 && storage != DType::kBF16 && storage != DType::kQ8_0) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoder weight dtype must be f32, bf16 or q8_0, got ", DTypeName(storage)));
  }
  std::unique_ptr<BertEncoder> m(new BertEncoder());
  m->config_ = c;
  m->storage_ = storage;
  // The embedding tables in the storage's own dtype; with q8_0 the word
  // table is Q8_0 rows too (as llama.cpp holds a Q8_0 BERT GGUF's
  // token_embd; most of a small encoder's weights), read a row at a time;
  // the position and type tables (small) stay f32.
  const DType table = LoadDtypeFor(storage);
  const DType word_table = MatrixStorage(storage, {c.vocab_size, c.embedding_width()});
  const std::string p = DetectPrefix(w, c.family);
  const int64_t d = c.hidden_size;
  if (c.family == EncoderFamily::kModernBert) {
    RETURN_IF_ERROR(m->LoadModernBert(w, p, storage, precision));
    if (!c.labels.empty()) {
      ASSIGN_OR_RETURN(m->classifier_, ClassifierHead::Load(w, p, c, ClassifierHead::Kind::kModernBert));
    }
    return m;
  }
  // The tables' width: the hidden size, or ELECTRA's embedding_size.
  const int64_t e = c.embedding_width();
  ASSIGN_OR_RETURN(m->word_,
                   w.LoadWithShape(p + "embeddings.word_embeddings.weight", {c.vocab_size, e}, word_table));
  if (c.rotary_theta > 0) {
    RETURN_IF_ERROR(m->LoadRotary());
  } else if (c.learned_positions()) {  // ALiBi, DeBERTa-v3: positions only in the attention bias
    ASSIGN_OR_RETURN(m->position_,
                     w.LoadWithShape(p + "embeddings.position_embeddings.weight", {c.max_positions, e}, table));
  }
  if (c.type_vocab_size > 0) {
    ASSIGN_OR_RETURN(m->token_type_,
                     w.LoadWithShape(p + "embeddings.token_type_embeddings.weight", {c.type_vocab_size, e}, table));
  }
  if (c.relative_attention_buckets > 0) {
    // [buckets, H], read per head into the batch's bias planes.
    ASSIGN_OR_RETURN(m->relative_bias_, w.LoadWithShape(p + "encoder.relative_attention_bias.weight",
                                                        {c.relative_attention_buckets, c.num_heads}, DType::kF32));
  }
  const LayerNames names = LayerNamesOf(c.family);
  ASSIGN_OR_RETURN(m->emb_ln_g_, w.LoadWithShape(p + "embeddings.LayerNorm.weight", {e}, DType::kF32));
  ASSIGN_OR_RETURN(m->emb_ln_b_, w.LoadWithShape(p + "embeddings.LayerNorm.bias", {e}, DType::kF32));
  if (e != d) {
    ASSIGN_OR_RETURN(m->embeddings_project_, LoadLinear(w, p + "embeddings_project", d, e, storage, precision));
  }
  m->layers_.reserve(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string lp = absl::StrCat(p, names.layers, i, ".");
    const bool bias = c.projection_bias;
    ASSIGN_OR_RETURN(Linear qkv, LoadStacked(w, {lp + names.q, lp + names.k, lp + names.v}, d, d, storage,
                                             precision, bias));
    ASSIGN_OR_RETURN(Linear out, LoadLinear(w, lp + names.out, d, d, storage, precision, Activation::kNone, bias));
    ASSIGN_OR_RETURN(Linear ff1, c.gated_mlp() ? LoadStacked(w, {lp + names.ff1, lp + "intermediate.gate"},
                                                             c.intermediate_size, d, storage, precision, false)
                                               : LoadLinear(w, lp + names.ff1, c.intermediate_size, d, storage,
                                                            precision, Activation::kGeluErf, bias));
    ASSIGN_OR_RETURN(Linear ff2, LoadLinear(w, lp + names.ff2, d, c.intermediate_size, storage, precision,
                                            Activation::kNone, bias));
    ASSIGN_OR_RETURN(Tensor ln1_g, w.LoadWithShape(absl::StrCat(lp, names.norm1, ".weight"), {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln1_b, w.LoadWithShape(absl::StrCat(lp, names.norm1, ".bias"), {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln2_g, w.LoadWithShape(absl::StrCat(lp, names.norm2, ".weight"), {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor ln2_b, w.LoadWithShape(absl::StrCat(lp, names.norm2, ".bias"), {d}, DType::kF32));
    m->layers_.push_back(Layer{std::move(qkv), std::move(out), std::move(ff1), std::move(ff2), std::move(ln1_g),
                               std::move(ln1_b), std::move(ln2_g), std::move(ln2_b)});
  }
  if (c.deberta.disentangled()) RETURN_IF_ERROR(m->LoadDisentangled(w, p, storage, precision));
  if (!c.labels.empty()) {
    ASSIGN_OR_RETURN(m->classifier_,
                     ClassifierHead::Load(w, p, c,
                                          c.roberta_classifier_head ? ClassifierHead::Kind::kRoberta
                                                                    : ClassifierKindOf(c.family)));
  }
  if (c.masked_lm_head) {
    ASSIGN_OR_RETURN(m->mlm_head_, MlmHead::Load(w, p, c, precision));
  }
  return m;
}

int64_t BertEncoder::weight_bytes() const {
  int64_t bytes = static_cast<int64_t>(word_.bytes() + position_.bytes() + token_type_.bytes() + emb_ln_g_.bytes() +
                                       emb_ln_b_.bytes() + relative_bias_.bytes() + final_ln_g_.bytes() +
                                       final_ln_b_.bytes() + rope_global_.bytes() + rope_local_.bytes());
  for (const Layer& l : layers_) {
    bytes += l.qkv.weight_bytes() + l.out.weight_bytes() + l.ff1.weight_bytes() + l.ff2.weight_bytes();
    bytes += static_cast<int64_t>(l.ln1_g.bytes() + l.ln1_b.bytes() + l.ln2_g.bytes() + l.ln2_b.bytes());
  }
  for (const DisentangledAttentionBias& bias : disentangled_) bytes += bias.bytes();
  if (embeddings_project_.has_value()) bytes += embeddings_project_->weight_bytes();
  if (classifier_.has_value()) bytes += classifier_->weight_bytes();
  if (mlm_head_.has_value()) bytes += mlm_head_->weight_bytes();
  return bytes;
}

absl::Status BertEncoder::CreateAllPrimitives() const {
  for (const Layer& l : layers_) {
    for (const Linear* linear : {&l.qkv, &l.out, &l.ff1, &l.ff2}) {
      RETURN_IF_ERROR(linear->CreateAllPrimitives());
    }
  }
  if (embeddings_project_.has_value()) RETURN_IF_ERROR(embeddings_project_->CreateAllPrimitives());
  return absl::OkStatus();
}

int64_t BertEncoder::ScratchBytes(int batch_size, int seq_len) const {
  const int64_t t = int64_t{batch_size} * seq_len;
  const int64_t d = config_.hidden_size;
  // x, qkv, ctx, tmp, ff, all packed (attention reads and writes them in
  // place); MPNet's and ALiBi's biases by distance [H, 2N - 1].
  int64_t floats = t * (d + 3 * d + d + d + config_.intermediate_size);
  if (config_.embedding_width() != d) floats += t * config_.embedding_width();  // ELECTRA's tables' rows
  if (config_.relative_attention_buckets > 0 || config_.alibi) {
    floats += int64_t{config_.num_heads} * (2 * seq_len - 1);
  }
  if (config_.deberta.disentangled()) {
    // One sequence's bias planes [H, N, N] and its two [N, 2 span] products.
    floats += int64_t{config_.num_heads} * seq_len * seq_len;
    floats += 2 * int64_t{seq_len} * 2 * config_.deberta.span();
  }
  if (config_.family == EncoderFamily::kModernBert || config_.gated_mlp()) {
    // Wi's (up and gate's) [T, 2I] and the gated [T, I] (ModernBERT's
    // local layers' window is a key range per query row, no mask).
    floats += t * 2 * int64_t{config_.intermediate_size};
  }
  return floats * static_cast<int64_t>(sizeof(float));
}

absl::Status BertEncoder::Forward(absl::Span<const int32_t> token_ids, absl::Span<const int32_t> lengths,
                                  const BertForwardRequest& request, EncoderForwardResult* result,
                                  absl::Span<const int32_t> type_ids) const {
  ASSIGN_OR_RETURN(std::unique_ptr<BertForwardJob> job, Begin(token_ids, lengths, request, type_ids));
  while (!job->done()) RETURN_IF_ERROR(job->RunSlice());
  return job->Finish(result);
}

absl::StatusOr<std::unique_ptr<BertForwardJob>> BertEncoder::Begin(absl::Span<const int32_t> token_ids,
                                                                   absl::Span<const int32_t> lengths,
                                                                   const BertForwardRequest& request,
                                                                   absl::Span<const int32_t> type_ids) const {
  const int batch = static_cast<int>(lengths.size());
  if (batch == 0) return absl::InvalidArgumentError("BertEncoder::Forward: empty batch");
  int64_t total = 0;
  int max_len = 0;
  for (int b = 0; b < batch; ++b) {
    if (lengths[b] < 1 || lengths[b] > config_.max_sequence_length()) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder::Forward: length of sequence ", b, " is ",
                                                     lengths[b], ", outside [1, ", config_.max_sequence_length(), "]"));
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
  if (!type_ids.empty() && type_ids.size() != token_ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("BertEncoder::Forward: ", type_ids.size(), " token types for ",
                                                   token_ids.size(), " token ids"));
  }
  const int type_limit = std::max(1, config_.type_vocab_size);  // without a table, segment 0 only
  for (size_t i = 0; i < type_ids.size(); ++i) {
    if (type_ids[i] < 0 || type_ids[i] >= type_limit) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder::Forward: token type ", type_ids[i],
                                                     " outside [0, ", type_limit, ")"));
    }
  }
  for (int layer : request.attention_layers) {
    if (layer < 0 || layer >= config_.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention layer ", layer, " outside [0, ", config_.num_layers, ")"));
    }
  }
  std::unique_ptr<BertForwardJob> job(new BertForwardJob());
  job->model_ = this;
  job->request_ = request;
  job->num_layers_ = config_.num_layers;
  job->batch_ = batch;
  job->max_len_ = max_len;
  job->total_ = total;
  job->token_ids_.assign(token_ids.begin(), token_ids.end());
  job->type_ids_.assign(type_ids.begin(), type_ids.end());
  job->lengths_.assign(lengths.begin(), lengths.end());
  job->starts_.resize(batch);
  for (int b = 0, s = 0; b < batch; s += lengths[b], ++b) job->starts_[b] = s;
  const int64_t d = config_.hidden_size;
  job->x_ = Tensor::Empty({total, d});
  if (config_.embedding_width() != d) job->embedded_ = Tensor::Empty({total, config_.embedding_width()});
  job->qkv_ = Tensor::Empty({total, 3 * d});
  job->ctx_ = Tensor::Empty({total, d});
  job->tmp_ = Tensor::Empty({total, d});
  if (config_.family == EncoderFamily::kModernBert || config_.gated_mlp()) {
    job->ff_ = Tensor::Empty({total, 2 * int64_t{config_.intermediate_size}});
    job->glu_ = Tensor::Empty({total, config_.intermediate_size});
  } else {
    job->ff_ = Tensor::Empty({total, config_.intermediate_size});
  }
  if (config_.relative_attention_buckets > 0 || config_.alibi) job->position_bias_ = DistanceBias(max_len);
  if (config_.deberta.disentangled()) {
    // One sequence at a time (DisentangledAttention), unless the request
    // keeps attention weights: then the whole batch's products.
    job->disentangled_planes_ = Tensor::Empty({config_.num_heads, max_len, max_len});
    const bool whole = !request.attention_layers.empty();
    job->disentangled_scratch_ = Tensor::Empty({disentangled_[0].ScratchFloats(whole ? total : max_len)});
    job->position_index_ = DebertaPositionIndex(config_.deberta, max_len);
  }
  return job;
}

absl::Status BertEncoder::LoadDisentangled(const SafetensorsArchive& w, const std::string& p, DType storage,
                                           MatmulPrecision precision) {
  const BertConfig& c = config_;
  const DebertaConfig& dc = c.deberta;
  const int64_t d = c.hidden_size;
  const int64_t rows = 2 * int64_t{dc.span()};
  ASSIGN_OR_RETURN(Tensor table, w.LoadWithShape(p + "encoder.rel_embeddings.weight", {rows, d}, DType::kF32));
  if (dc.norm_rel_embeddings) {
    ASSIGN_OR_RETURN(Tensor g, w.LoadWithShape(p + "encoder.LayerNorm.weight", {d}, DType::kF32));
    ASSIGN_OR_RETURN(Tensor b, w.LoadWithShape(p + "encoder.LayerNorm.bias", {d}, DType::kF32));
    bert_internal::AddLayerNorm(table.f32(), nullptr, g.f32(), b.f32(), rows, d, c.layer_norm_eps);
  }
  // The table through each layer's projections, once: with share_att_key
  // the layer's own query and key (the fused QKV GEMM, biases included),
  // else its pos_query_proj / pos_key_proj.
  disentangled_.reserve(c.num_layers);
  const LayerNames names = LayerNamesOf(c.family);
  for (int i = 0; i < c.num_layers; ++i) {
    if (dc.share_att_key) {
      Tensor projected = Tensor::Empty({rows, 3 * d});
      RETURN_IF_ERROR(layers_[i].qkv.Forward(table.f32(), rows, projected.f32()));
      disentangled_.push_back(DisentangledAttentionBias::Create(dc.p2c ? projected.f32() : nullptr,
                                                                dc.c2p ? projected.f32() + d : nullptr, 3 * d, rows,
                                                                c.num_heads, c.head_dim()));
      continue;
    }
    const std::string lp = absl::StrCat(p, names.layers, i, ".attention.self.");
    Tensor pos_query, pos_key;
    for (const auto& [on, name, out] : {std::tuple{dc.p2c, "pos_query_proj", &pos_query},
                                        std::tuple{dc.c2p, "pos_key_proj", &pos_key}}) {
      if (!on) continue;
      ASSIGN_OR_RETURN(Linear proj, LoadLinear(w, lp + name, d, d, storage, precision));
      *out = Tensor::Empty({rows, d});
      RETURN_IF_ERROR(proj.Forward(table.f32(), rows, out->f32()));
    }
    disentangled_.push_back(DisentangledAttentionBias::Create(pos_query.empty() ? nullptr : pos_query.f32(),
                                                              pos_key.empty() ? nullptr : pos_key.f32(), d, rows,
                                                              c.num_heads, c.head_dim()));
  }
  return absl::OkStatus();
}

int MpnetRelativePositionBucket(int relative_position) {
  constexpr int kHalf = 16, kExact = 8, kMaxDistance = 128;
  const int n = -relative_position;
  const int base = n < 0 ? kHalf : 0;
  const int distance = std::abs(n);
  if (distance < kExact) return base + distance;
  // float32 as torch computes it; at the exact points (16, 32, 64) it gives
  // the integers 2, 4, 6 as double arithmetic does.
  const float scaled = std::log(static_cast<float>(distance) / kExact) /
                       static_cast<float>(std::log(static_cast<double>(kMaxDistance) / kExact)) * (kHalf - kExact);
  return base + std::min(kExact + static_cast<int>(scaled), kHalf - 1);
}

Tensor BertEncoder::DistanceBias(int n) const {
  const int heads = config_.num_heads;
  const int64_t row = 2 * int64_t{n} - 1;
  Tensor bias = Tensor::Empty({heads, row});
  float* out = bias.f32();
  if (config_.alibi) {
    // Press et al.'s slopes as JinaBERT and llama.cpp (max bias 8) compute
    // them: for the largest power of two p <= H, 2^(-8 (h + 1) / p) for
    // h < p, then the odd powers of 2^(-4 / p) for the rest.
    const int p = 1 << static_cast<int>(std::floor(std::log2(heads)));
    const double m0 = std::pow(2.0, -8.0 / p), m1 = std::pow(2.0, -4.0 / p);
    for (int h = 0; h < heads; ++h) {
      const double slope = h < p ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - p) + 1);
      for (int64_t r = 0; r < row; ++r) out[h * row + r] = static_cast<float>(-slope * std::abs(r - (n - 1)));
    }
    return bias;
  }
  const float* table = relative_bias_.f32();  // [buckets, H]
  for (int64_t r = 0; r < row; ++r) {
    const int bucket = MpnetRelativePositionBucket(static_cast<int>(r - (n - 1)));
    for (int h = 0; h < heads; ++h) out[h * row + r] = table[bucket * heads + h];
  }
  return bias;
}

absl::Status BertForwardJob::RunSlice() {
  if (!error_.ok()) return error_;
  if (done()) return absl::FailedPreconditionError("BertForwardJob::RunSlice: every slice has run");
  const int slice = next_slice_;
  if (model_->config_.family == EncoderFamily::kModernBert) {
    if (slice == 0) {
      ModernEmbed();
    } else {
      const int li = (slice - 1) / 3;
      switch ((slice - 1) % 3) {
        case 0: error_ = ModernAttentionBlock(li); break;
        case 1: error_ = ModernFeedForwardUp(li); break;
        default: error_ = ModernFeedForwardDown(li); break;
      }
    }
  } else if (slice == 0) {
    error_ = Embed();
  } else {
    const int li = (slice - 1) / 3;
    switch ((slice - 1) % 3) {
      case 0: error_ = AttentionBlock(li); break;
      case 1: error_ = FeedForwardUp(li); break;
      default: error_ = FeedForwardDown(li); break;
    }
  }
  if (!error_.ok()) return error_;
  ++next_slice_;
  return absl::OkStatus();
}

absl::Status BertForwardJob::Finish(EncoderForwardResult* result) {
  if (!error_.ok()) return error_;
  if (!done()) {
    return absl::FailedPreconditionError(absl::StrCat("BertForwardJob::Finish: ", next_slice_, " of ",
                                                      slices_total(), " slices have run"));
  }
  if (finished_) return absl::FailedPreconditionError("BertForwardJob::Finish: the result was already taken");
  finished_ = true;
  result_.last_hidden = std::move(x_);
  *result = std::move(result_);
  result_ = EncoderForwardResult();
  return absl::OkStatus();
}

// Embeddings: word + position + token type (segment 0 unless the batch
// carries pairs), normed; ELECTRA's narrower tables then projected to D.
absl::Status BertForwardJob::Embed() {
  const BertConfig& config = model_->config_;
  const int d = config.embedding_width();
  float* xp = embedded_.empty() ? x_.f32() : embedded_.f32();
#pragma omp parallel for schedule(static)
  for (int b = 0; b < batch_; ++b) {
    int counted = 0;  // RoBERTa: the sequence's non-pad tokens so far
    for (int pos = 0; pos < lengths_[b]; ++pos) {
      const int64_t t = starts_[b] + pos;
      float* row = xp + t * d;
      int position = pos;
      if (config.roberta_positions()) {
        const int pad = config.pad_token_id;
        position = token_ids_[t] == pad ? pad : pad + ++counted;
      }
      bert_internal::AddRow(model_->word_, token_ids_[t], row, /*first=*/true);
      // A rotary BERT has no position table: its layers rotate Q and K.
      if (!model_->position_.empty()) bert_internal::AddRow(model_->position_, position, row, false);
      if (!model_->token_type_.empty()) {
        bert_internal::AddRow(model_->token_type_, type_ids_.empty() ? 0 : type_ids_[t], row, false);
      }
    }
  }
  bert_internal::AddLayerNorm(xp, nullptr, model_->emb_ln_g_.f32(), model_->emb_ln_b_.f32(), total_, d,
                              config.layer_norm_eps);
  if (!embedded_.empty()) RETURN_IF_ERROR(model_->embeddings_project_->Forward(xp, total_, x_.f32()));
  if (request_.hidden_states) result_.hidden_states.push_back(x_.Copy());
  return absl::OkStatus();
}

// Ragged self-attention straight on the packed rows: sequence b is rows
// [starts_[b], starts_[b] + lengths_[b]) of qkv_ and ctx_ (the views' batch
// strides go unused). `masks` brings a layer's additive bias or window; the
// key lengths are added here. Keeps the weights when the request asks for
// layer li.
absl::Status BertForwardJob::SelfAttention(int li, AttentionMasks masks, int first, int sequences) {
  const BertConfig& config = model_->config_;
  const int d = config.hidden_size;
  const int heads = config.num_heads;
  const int head_dim = config.head_dim();
  const float* qkv_src = qkv_.f32();
  const bool whole = sequences < 0;
  const int count = whole ? batch_ : sequences;
  const int n = whole ? max_len_ : *std::max_element(lengths_.begin() + first, lengths_.begin() + first + count);
  SdpaArgs args;
  args.row_offsets = starts_.data() + first;
  args.shape = {count, heads, heads, n, n, head_dim};
  const int64_t row3 = 3 * int64_t{d};
  args.q = {qkv_src, DType::kF32, n * row3, head_dim, row3};
  args.k = {qkv_src + d, DType::kF32, n * row3, head_dim, row3};
  args.v = {qkv_src + 2 * d, DType::kF32, n * row3, head_dim, row3};
  args.masks = masks;
  args.masks.key_lengths = lengths_.data() + first;
  if (config.family == EncoderFamily::kDebertaV2) args.options.scale = config.deberta_scale();
  args.out = AttnView::Interleaved(ctx_.f32(), heads, n, head_dim);
  Tensor weights;
  if (whole && std::find(request_.attention_layers.begin(), request_.attention_layers.end(), li) !=
                   request_.attention_layers.end()) {
    weights = request_.average_heads ? Tensor::Empty({batch_, n, n}) : Tensor::Empty({batch_, heads, n, n});
    args.options.weights = request_.average_heads ? AttentionWeightsMode::kAveraged : AttentionWeightsMode::kPerHead;
    args.weights = weights.f32();
  }
  RETURN_IF_ERROR(ScaledDotProductAttention(args));
  if (!weights.empty()) result_.attentions.emplace_back(li, std::move(weights));
  return absl::OkStatus();
}

// x = LayerNorm(x + O(Attention(Q, K, V))).
absl::Status BertForwardJob::AttentionBlock(int li) {
  const BertConfig& config = model_->config_;
  const BertEncoder::Layer& layer = model_->layers_[li];
  float* xp = x_.f32();
  RETURN_IF_ERROR(layer.qkv.Forward(xp, total_, qkv_.f32()));
  if (model_->rope_.has_value()) RotateQueriesAndKeys(model_->rope_global_);  // Nomic BERT
  if (config.deberta.disentangled()) {
    RETURN_IF_ERROR(DisentangledAttention(li));
  } else {
    AttentionMasks masks;
    if (!position_bias_.empty()) {
      // MPNet, ALiBi: the same bias by distance for every sequence.
      masks.additive = {position_bias_.f32(), /*per_batch=*/false, /*per_head=*/true, /*by_distance=*/true};
    }
    RETURN_IF_ERROR(SelfAttention(li, masks));
  }
  RETURN_IF_ERROR(layer.out.Forward(ctx_.f32(), total_, tmp_.f32()));
  bert_internal::AddLayerNorm(xp, tmp_.f32(), layer.ln1_g.f32(), layer.ln1_b.f32(), total_, config.hidden_size,
                              config.layer_norm_eps);
  return absl::OkStatus();
}

// DeBERTa: the bias planes come from this layer's Q and K, so each
// sequence's [H, n, n] planes are written and its attention run in turn,
// one buffer of H · Nmax² serving the batch (the whole batch's planes would
// be B times that: 400 MB for 32 sequences of 512 tokens at 12 heads).
// Only a request for this layer's attention weights runs the batch at once.
absl::Status BertForwardJob::DisentangledAttention(int li) {
  const BertConfig& config = model_->config_;
  const DisentangledAttentionBias& bias = model_->disentangled_[li];
  AttentionMasks masks;
  if (std::find(request_.attention_layers.begin(), request_.attention_layers.end(), li) !=
      request_.attention_layers.end()) {
    Tensor planes = Tensor::Empty({batch_, config.num_heads, max_len_, max_len_});
    const DisentangledBatch all{qkv_.f32(), total_, batch_, max_len_, starts_.data(), lengths_.data()};
    bias.Fill(all, position_index_.data(), config.deberta_scale(), planes.f32(), disentangled_scratch_.f32());
    masks.additive = {planes.f32(), /*per_batch=*/true, /*per_head=*/true, /*by_distance=*/false};
    return SelfAttention(li, masks);
  }
  static constexpr int64_t kFirstRow = 0;
  masks.additive = {disentangled_planes_.f32(), /*per_batch=*/true, /*per_head=*/true, /*by_distance=*/false};
  for (int b = 0; b < batch_; ++b) {
    const int n = lengths_[b];
    const DisentangledBatch one{qkv_.f32() + starts_[b] * 3 * int64_t{config.hidden_size}, n, 1, n, &kFirstRow,
                                &lengths_[b]};
    bias.Fill(one, position_index_.data() + (max_len_ - n), config.deberta_scale(), disentangled_planes_.f32(),
              disentangled_scratch_.f32());
    RETURN_IF_ERROR(SelfAttention(li, masks, b, 1));
  }
  return absl::OkStatus();
}

// ff = GELU_erf(W1 x); gated: glu = up x * act(gate x) (SwiGLU, GeGLU).
absl::Status BertForwardJob::FeedForwardUp(int li) {
  RETURN_IF_ERROR(model_->layers_[li].ff1.Forward(x_.f32(), total_, ff_.f32()));
  const Activation act = model_->config_.gate_activation;
  if (act == Activation::kNone) return absl::OkStatus();
  const int inter = model_->config_.intermediate_size;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < total_; ++t) {
    const float* up = ff_.f32() + t * 2 * inter;
    float* gate = ff_.f32() + t * 2 * inter + inter;
    float* out = glu_.f32() + t * inter;
    ApplyActivation(act, gate, inter);
    for (int k = 0; k < inter; ++k) out[k] = up[k] * gate[k];
  }
  return absl::OkStatus();
}

// x = LayerNorm(x + W2 ff).
absl::Status BertForwardJob::FeedForwardDown(int li) {
  const BertConfig& config = model_->config_;
  const BertEncoder::Layer& layer = model_->layers_[li];
  RETURN_IF_ERROR(layer.ff2.Forward(config.gated_mlp() ? glu_.f32() : ff_.f32(), total_, tmp_.f32()));
  bert_internal::AddLayerNorm(x_.f32(), tmp_.f32(), layer.ln2_g.f32(), layer.ln2_b.f32(), total_,
                              config.hidden_size, config.layer_norm_eps);
  if (request_.hidden_states) result_.hidden_states.push_back(x_.Copy());
  return absl::OkStatus();
}

}  // namespace attnserve
