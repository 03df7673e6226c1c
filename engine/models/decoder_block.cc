#include "engine/models/decoder_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/attention/paged_attention.h"
#include "engine/attention/sdpa.h"
#include "engine/core/half.h"
#include "engine/core/parallel.h"
#include "engine/core/status_macros.h"
#include "engine/models/norms.h"
#include "engine/ops/activation.h"

namespace attnserve {
namespace {

// Rows of several [n_i, K] matrices of one dtype stacked into one [sum n_i, K].
Tensor StackRows(std::initializer_list<const Tensor*> parts) {
  int64_t rows = 0;
  for (const Tensor* p : parts) rows += p->dim(0);
  const Tensor& first = **parts.begin();
  Tensor out = Tensor::Empty({rows, first.dim(1)}, first.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (const Tensor* p : parts) {
    std::memcpy(dst, p->raw(), p->bytes());
    dst += p->bytes();
  }
  return out;
}

// Concatenated f32 biases; a missing (empty) part contributes `zeros` zeros.
Tensor StackBias(std::initializer_list<std::pair<const Tensor*, int64_t>> parts) {
  int64_t n = 0;
  for (auto [t, len] : parts) n += len;
  Tensor out = Tensor::Zeros({n});
  float* dst = out.f32();
  for (auto [t, len] : parts) {
    if (!t->empty()) std::memcpy(dst, t->f32(), len * sizeof(float));
    dst += len;
  }
  return out;
}

std::vector<float> ToVector(const Tensor& t, float offset = 0.0f) {
  if (t.empty()) return {};
  std::vector<float> v(t.f32(), t.f32() + t.numel());
  if (offset != 0.0f)
    for (float& x : v) x += offset;  // Gemma's (1 + weight), in f32 as transformers
  return v;
}

}  // namespace

int64_t DecoderScratch::HeldBytes() const {
  int64_t floats = 0;
  for (const std::vector<float>* v : {&hidden, &normed, &qkv, &attn, &proj, &mlp_in, &mlp_act, &rope, &local_rope, &q,
                                      &router_logits, &expert_weight, &expert_in, &expert_out}) {
    floats += static_cast<int64_t>(v->capacity());
  }
  int64_t ints = 0;
  for (const std::vector<int32_t>* v : {&seq_lengths, &expert_choice, &expert_start, &expert_rows}) {
    ints += static_cast<int64_t>(v->capacity());
  }
  return floats * static_cast<int64_t>(sizeof(float)) + ints * static_cast<int64_t>(sizeof(int32_t)) +
         static_cast<int64_t>(kv_seqs.capacity() * sizeof(PagedKvSequence) + row_starts.capacity() * sizeof(int64_t));
}

absl::StatusOr<DecoderBlock> DecoderBlock::Create(const DecoderConfig& config,
                                                  const DecoderLayerWeights& w, DType storage,
                                                  MatmulPrecision precision, int layer_index) {
  DecoderBlock b;
  b.config_ = &config;
  b.layer_ = layer_index;
  b.window_ = config.LayerWindow(layer_index);
  b.hidden_ = config.hidden_size;
  b.heads_ = config.num_heads;
  b.kv_heads_ = config.num_kv_heads;
  b.head_dim_ = config.head_dim;
  b.inter_ = config.intermediate_size;
  const float off = config.norm_weight_offset;
  b.attn_norm_w_ = ToVector(w.attn_norm_weight, off);
  b.attn_norm_b_ = ToVector(w.attn_norm_bias);
  b.mlp_norm_w_ = ToVector(w.mlp_norm_weight, off);
  b.mlp_norm_b_ = ToVector(w.mlp_norm_bias);
  b.q_norm_w_ = ToVector(w.q_norm_weight, off);
  b.k_norm_w_ = ToVector(w.k_norm_weight, off);
  b.post_attn_norm_w_ = ToVector(w.post_attn_norm_weight, off);
  b.post_mlp_norm_w_ = ToVector(w.post_mlp_norm_weight, off);
  const int64_t q_out = int64_t{b.heads_} * b.head_dim_;
  const int64_t kv_out = int64_t{b.kv_heads_} * b.head_dim_;

  Tensor qkv_w = StackRows({&w.q_weight, &w.k_weight, &w.v_weight});
  Tensor qkv_b;
  if (config.qkv_bias) qkv_b = StackBias({{&w.q_bias, q_out}, {&w.k_bias, kv_out}, {&w.v_bias, kv_out}});
  const std::string where = absl::StrCat("layer ", layer_index, ": ");
  auto wrap = [&](absl::StatusOr<Linear> l, const char* what) -> absl::StatusOr<Linear> {
    if (!l.ok()) {
      return absl::Status(l.status().code(), absl::StrCat(where, what, ": ", l.status().message()));
    }
    return l;
  };
  auto make = [&](const Tensor& weight, const Tensor& bias, Activation act = Activation::kNone) {
    return Linear::Create(weight, bias.empty() ? nullptr : &bias, storage, act, Linear::Kernel::kAuto,
                          precision);
  };
  ASSIGN_OR_RETURN(Linear qkv, wrap(make(qkv_w, qkv_b),
                                    "qkv"));
  b.qkv_.emplace(std::move(qkv));
  ASSIGN_OR_RETURN(Linear out, wrap(make(w.o_weight, w.o_bias), "o_proj"));
  b.out_.emplace(std::move(out));
  if (config.num_experts > 0) {
    // The router in f32 whatever the weights' dtype: its top-k choice is
    // what a rounding would change.
    ASSIGN_OR_RETURN(Linear router, wrap(Linear::Create(w.router_weight, nullptr), "router"));
    b.router_.emplace(std::move(router));
    for (size_t e = 0; e < w.experts.size(); ++e) {
      const DecoderExpertWeights& x = w.experts[e];
      const std::string name = absl::StrCat("expert ", e);
      ASSIGN_OR_RETURN(Linear gu, wrap(make(StackRows({&x.gate_weight, &x.up_weight}), Tensor()),
                                       (name + " gate_up").c_str()));
      b.expert_gate_up_.push_back(std::move(gu));
      ASSIGN_OR_RETURN(Linear down, wrap(make(x.down_weight, Tensor()), (name + " down").c_str()));
      b.expert_down_.push_back(std::move(down));
    }
    if (config.shared_expert_size > 0) {
      const DecoderExpertWeights& x = w.shared_expert;
      ASSIGN_OR_RETURN(Linear gu, wrap(make(StackRows({&x.gate_weight, &x.up_weight}), Tensor()),
                                       "shared expert gate_up"));
      b.shared_gate_up_.emplace(std::move(gu));
      ASSIGN_OR_RETURN(Linear down, wrap(make(x.down_weight, Tensor()), "shared expert down"));
      b.shared_down_.emplace(std::move(down));
      b.shared_gate_w_ = ToVector(w.shared_gate_weight);
    }
    return b;
  }
  if (config.mlp == MlpKind::kSwiGlu || config.mlp == MlpKind::kGeGlu) {
    Tensor gate_up = StackRows({&w.gate_weight, &w.up_weight});
    Tensor gate_up_b;
    if (!w.up_bias.empty()) {
      gate_up_b = StackBias({{&w.up_bias, 0}, {&w.up_bias, b.inter_}});  // gate has no bias
      std::memset(gate_up_b.f32(), 0, sizeof(float) * b.inter_);
    }
    ASSIGN_OR_RETURN(Linear gu, wrap(make(gate_up, gate_up_b), "gate_up"));
    b.gate_up_.emplace(std::move(gu));
  } else {
    ASSIGN_OR_RETURN(Linear up, wrap(make(w.up_weight, w.up_bias, Activation::kGeluTanh), "up"));
    b.gate_up_.emplace(std::move(up));
  }
  ASSIGN_OR_RETURN(Linear down, wrap(make(w.down_weight, w.down_bias), "down"));
  b.down_.emplace(std::move(down));
  return b;
}

int64_t DecoderBlock::weight_bytes() const {
  int64_t mlp = 0;
  for (const std::optional<Linear>* l : {&gate_up_, &down_, &router_, &shared_gate_up_, &shared_down_}) {
    if (l->has_value()) mlp += (*l)->weight_bytes();
  }
  mlp += static_cast<int64_t>(sizeof(float) * shared_gate_w_.size());
  for (const std::vector<Linear>* v : {&expert_gate_up_, &expert_down_}) {
    for (const Linear& l : *v) mlp += l.weight_bytes();
  }
  return qkv_->weight_bytes() + out_->weight_bytes() + mlp +
         static_cast<int64_t>(sizeof(float)) *
             (attn_norm_w_.size() + attn_norm_b_.size() + mlp_norm_w_.size() + mlp_norm_b_.size() +
              q_norm_w_.size() + k_norm_w_.size() + post_attn_norm_w_.size() + post_mlp_norm_w_.size());
}

absl::Status DecoderBlock::CreateAllPrimitives() const {
  for (const std::optional<Linear>* l : {&qkv_, &out_, &gate_up_, &down_, &router_, &shared_gate_up_, &shared_down_}) {
    if (l->has_value()) RETURN_IF_ERROR((*l)->CreateAllPrimitives());
  }
  for (const std::vector<Linear>* v : {&expert_gate_up_, &expert_down_}) {
    for (const Linear& l : *v) RETURN_IF_ERROR(l.CreateAllPrimitives());
  }
  return absl::OkStatus();
}

void DecoderBlock::Norm(const float* x, const std::vector<float>& w, const std::vector<float>& b,
                        int64_t rows, float* y) const {
  if (config_->norm == NormKind::kRmsNorm) {
    RmsNorm(x, w.data(), rows, hidden_, config_->norm_eps, y);
  } else {
    LayerNorm(x, w.data(), b.empty() ? nullptr : b.data(), rows, hidden_, config_->norm_eps, y);
  }
}

// The norm before a sub-layer, or a copy where the model has none (OLMo 2).
void DecoderBlock::PreNorm(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t rows,
                           float* y) const {
  if (config_->pre_norms) {
    Norm(x, w, b, rows, y);
  } else {
    std::memcpy(y, x, sizeof(float) * rows * hidden_);
  }
}

void DecoderBlock::WriteKv(const ForwardBatch& batch, KvCache& kv, const float* qkv) const {
  const KvLayout& layout = kv.layout();
  const int bs = layout.block_size;
  const int d = head_dim_;
  const int64_t row = int64_t{heads_ + 2 * kv_heads_} * d;
  std::byte* base = kv.LayerBase(layer_);
  const bool bf16 = layout.dtype == DType::kBF16;
  const size_t elem = DTypeSize(layout.dtype);
  for (int s = 0; s < batch.num_seqs(); ++s) {
    absl::Span<const int32_t> table = kv.BlockTable(batch.seq_ids[s]);
    for (int t = batch.seq_start[s]; t < batch.seq_start[s + 1]; ++t) {
      const int pos = batch.positions[t];
      std::byte* block = base + static_cast<int64_t>(table[pos / bs]) * layout.BlockBytes();
      const int off = pos % bs;
      const float* k = qkv + t * row + int64_t{heads_} * d;
      const float* v = k + int64_t{kv_heads_} * d;
      for (int h = 0; h < kv_heads_; ++h) {
        const int64_t kidx = layout.KOffset(h, off);
        const int64_t vidx = layout.VOffset(h, off);
        if (bf16) {
          auto* kb = reinterpret_cast<uint16_t*>(block) + kidx;
          auto* vb = reinterpret_cast<uint16_t*>(block) + vidx;
          for (int i = 0; i < d; ++i) {
            kb[i] = FloatToBf16(k[h * d + i]);
            vb[i] = FloatToBf16(v[h * d + i]);
          }
        } else {
          std::memcpy(block + kidx * elem, k + h * d, d * elem);
          std::memcpy(block + vidx * elem, v + h * d, d * elem);
        }
      }
    }
  }
}

// Causal attention of every new token over its sequence's cached positions
// (the K/V of this step already written; the last window_ of them in a
// sliding-window layer), reading the blocks in place.
absl::Status DecoderBlock::Attend(const ForwardBatch& batch, const KvCache& kv,
                                  DecoderScratch& sc) const {
  const int64_t T = batch.num_tokens();
  const int S = batch.num_seqs();
  const int64_t q_row = int64_t{heads_} * head_dim_;
  const int64_t row = int64_t{heads_ + 2 * kv_heads_} * head_dim_;
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(sc.q.data() + t * q_row, sc.qkv.data() + t * row, sizeof(float) * q_row);
  }
  sc.kv_seqs.resize(S);
  for (int s = 0; s < S; ++s) {
    absl::Span<const int32_t> table = kv.BlockTable(batch.seq_ids[s]);
    sc.kv_seqs[s] = PagedKvSequence{table.data(), static_cast<int>(table.size()),
                                    batch.positions[batch.seq_start[s + 1] - 1] + 1};
  }
  PagedAttentionArgs args;
  args.num_heads = heads_;
  args.q = sc.q.data();
  args.out = sc.attn.data();
  args.kv = PagedKvView{&kv.layout(), kv.LayerBase(layer_)};
  args.seqs = sc.kv_seqs.data();
  args.query_start = batch.seq_start.data();
  args.num_seqs = S;
  args.scale = config_->attn_scale;
  args.window = window_;
  args.softcap = config_->attn_logit_softcap;
  return PagedAttention(args);
}

// Attention-norm, fused QKV, Qwen3's q/k norms and the rotation: sc.qkv
// holds every token's rotated q, k and v heads.
absl::Status DecoderBlock::ProjectQkv(int64_t T, const Rope* rope, const float* rope_angles,
                                      DecoderScratch& sc) const {
  const int d = head_dim_;
  const int64_t row = int64_t{heads_ + 2 * kv_heads_} * d;
  PreNorm(sc.hidden.data(), attn_norm_w_, attn_norm_b_, T, sc.normed.data());
  RETURN_IF_ERROR(qkv_->Forward(sc.normed.data(), T, sc.qkv.data()));
  const float clip = config_->clip_qkv;
  if (!q_norm_w_.empty() || rope != nullptr || clip > 0) {
    ParallelFor(T, T * row >= (1 << 15), [&](int64_t t) {
      float* qk = sc.qkv.data() + t * row;
      if (config_->qk_norm_whole) {
        // OLMo 2 / OLMoE: all q heads as one vector, all k heads as another.
        RmsNorm(qk, q_norm_w_.data(), 1, int64_t{heads_} * d, config_->norm_eps, qk);
        RmsNorm(qk + int64_t{heads_} * d, k_norm_w_.data(), 1, int64_t{kv_heads_} * d, config_->norm_eps,
                qk + int64_t{heads_} * d);
      } else if (!q_norm_w_.empty()) {
        // Qwen3: each head over its own head_dim values, q heads then k
        // heads (one row at a time: this already runs per token).
        for (int hd = 0; hd < heads_ + kv_heads_; ++hd) {
          const std::vector<float>& w = hd < heads_ ? q_norm_w_ : k_norm_w_;
          RmsNorm(qk + int64_t{hd} * d, w.data(), 1, d, config_->norm_eps, qk + int64_t{hd} * d);
        }
      }
      if (clip > 0) {
        for (int64_t i = 0; i < row; ++i) qk[i] = std::clamp(qk[i], -clip, clip);
      }
      // q and k heads are contiguous in the qkv row and rotate alike.
      if (rope != nullptr) rope->Rotate(qk, heads_ + kv_heads_, rope_angles + t * rope->rope_dim());
    });
  }
  return absl::OkStatus();
}

// The output projection of sc.attn and the MLP, each added to the residual.
absl::Status DecoderBlock::OutputAndMlp(int64_t T, DecoderScratch& sc) const {
  float* h = sc.hidden.data();
  // Granite scales each sub-layer's output before its residual add (1
  // elsewhere: an exact no-op).
  const float r = config_->residual_scale > 0 ? config_->residual_scale : 1.0f;
  RETURN_IF_ERROR(out_->Forward(sc.attn.data(), T, sc.proj.data()));
  // Gemma 2/3 normalise each sub-layer's output before the residual add.
  if (!post_attn_norm_w_.empty()) Norm(sc.proj.data(), post_attn_norm_w_, {}, T, sc.proj.data());
  for (int64_t i = 0; i < T * hidden_; ++i) h[i] += r * sc.proj[i];

  PreNorm(h, mlp_norm_w_, mlp_norm_b_, T, sc.normed.data());
  if (router_.has_value()) {
    RETURN_IF_ERROR(MixtureOfExperts(T, sc));
    for (int64_t i = 0; i < T * hidden_; ++i) h[i] += r * sc.proj[i];
    return absl::OkStatus();
  }
  if (config_->mlp == MlpKind::kSwiGlu || config_->mlp == MlpKind::kGeGlu) {
    RETURN_IF_ERROR(gate_up_->Forward(sc.normed.data(), T, sc.mlp_in.data()));
    const int I = inter_;
    const bool geglu = config_->mlp == MlpKind::kGeGlu;
    ParallelFor(T, T * I >= (1 << 15), [&](int64_t t) {
      const float* g = sc.mlp_in.data() + t * 2 * I;
      const float* u = g + I;
      float* a = sc.mlp_act.data() + t * I;
      if (geglu) {
        GeluTanhMul(g, u, I, a);
      } else {
        SiluMul(g, u, I, a);
      }
    });
  } else {
    RETURN_IF_ERROR(gate_up_->Forward(sc.normed.data(), T, sc.mlp_act.data()));
  }
  RETURN_IF_ERROR(down_->Forward(sc.mlp_act.data(), T, sc.proj.data()));
  if (!post_mlp_norm_w_.empty()) Norm(sc.proj.data(), post_mlp_norm_w_, {}, T, sc.proj.data());
  for (int64_t i = 0; i < T * hidden_; ++i) h[i] += r * sc.proj[i];
  return absl::OkStatus();
}

// transformers' Qwen3MoeTopKRouter / MixtralTopKRouter and
// Qwen3MoeExperts: softmax of the router logits in f32, the top k
// probabilities (ties to the lower expert index), divided by their sum when
// norm_topk_prob; each expert runs once on the rows of the tokens that
// chose it and its outputs are added, weighted, to those tokens' rows.
absl::Status DecoderBlock::MixtureOfExperts(int64_t T, DecoderScratch& sc) const {
  const int E = config_->num_experts;
  const int k = config_->experts_per_token;
  const int I = inter_;
  const int64_t D = hidden_;
  RETURN_IF_ERROR(router_->Forward(sc.normed.data(), T, sc.router_logits.data()));
  sc.expert_start.assign(E + 1, 0);
  for (int64_t t = 0; t < T; ++t) {
    float* z = sc.router_logits.data() + t * E;
    const float top = *std::max_element(z, z + E);
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) {
      z[e] = std::exp(z[e] - top);
      sum += z[e];
    }
    for (int e = 0; e < E; ++e) z[e] /= sum;
    int32_t* choice = sc.expert_choice.data() + t * k;
    float* weight = sc.expert_weight.data() + t * k;
    float chosen = 0.0f;
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < E; ++e) {
        if (std::find(choice, choice + j, e) != choice + j) continue;
        if (best < 0 || z[e] > z[best]) best = e;
      }
      choice[j] = best;
      weight[j] = z[best];
      chosen += z[best];
      ++sc.expert_start[best + 1];
    }
    if (config_->norm_topk_prob) {
      for (int j = 0; j < k; ++j) weight[j] /= chosen;
    }
  }
  // Group the (token, choice) pairs by expert: expert e's are
  // expert_rows[expert_start[e] .. expert_start[e + 1]), as t * k + j.
  // (Counting sort: expert_start[e] serves as e's cursor, which leaves it at
  // e + 1's start; shifting back restores the starts.)
  for (int e = 0; e < E; ++e) sc.expert_start[e + 1] += sc.expert_start[e];
  std::vector<int32_t>& fill = sc.expert_rows;
  for (int64_t i = 0; i < T * k; ++i) fill[sc.expert_start[sc.expert_choice[i]]++] = static_cast<int32_t>(i);
  for (int e = E; e > 0; --e) sc.expert_start[e] = sc.expert_start[e - 1];
  sc.expert_start[0] = 0;
  std::fill(sc.proj.begin(), sc.proj.begin() + T * D, 0.0f);
  for (int e = 0; e < E; ++e) {
    const int begin = sc.expert_start[e];
    const int n = sc.expert_start[e + 1] - begin;
    if (n == 0) continue;
    for (int r = 0; r < n; ++r) {
      const int64_t t = fill[begin + r] / k;
      std::memcpy(sc.expert_in.data() + r * D, sc.normed.data() + t * D, sizeof(float) * D);
    }
    RETURN_IF_ERROR(expert_gate_up_[e].Forward(sc.expert_in.data(), n, sc.mlp_in.data()));
    ParallelFor(n, int64_t{n} * I >= (1 << 15), [&](int64_t r) {
      const float* g = sc.mlp_in.data() + r * 2 * I;
      SiluMul(g, g + I, I, sc.mlp_act.data() + r * I);
    });
    RETURN_IF_ERROR(expert_down_[e].Forward(sc.mlp_act.data(), n, sc.expert_out.data()));
    for (int r = 0; r < n; ++r) {
      const int32_t pair = fill[begin + r];
      const float w = sc.expert_weight[pair];
      float* dst = sc.proj.data() + int64_t{pair / k} * D;
      const float* src = sc.expert_out.data() + r * D;
      for (int64_t i = 0; i < D; ++i) dst[i] += w * src[i];
    }
  }
  if (shared_gate_up_.has_value()) {
    // Qwen2MoeSparseMoeBlock: + sigmoid(shared_expert_gate(x)) * shared_expert(x), every token.
    const int S = config_->shared_expert_size;
    RETURN_IF_ERROR(shared_gate_up_->Forward(sc.normed.data(), T, sc.mlp_in.data()));
    ParallelFor(T, T * S >= (1 << 15), [&](int64_t t) {
      const float* g = sc.mlp_in.data() + t * 2 * S;
      SiluMul(g, g + S, S, sc.mlp_act.data() + t * S);
    });
    RETURN_IF_ERROR(shared_down_->Forward(sc.mlp_act.data(), T, sc.expert_out.data()));
    for (int64_t t = 0; t < T; ++t) {
      const float* x = sc.normed.data() + t * D;
      float logit = 0.0f;
      for (int64_t i = 0; i < D; ++i) logit += shared_gate_w_[i] * x[i];
      const float gate = 1.0f / (1.0f + std::exp(-logit));
      float* dst = sc.proj.data() + t * D;
      const float* src = sc.expert_out.data() + t * D;
      for (int64_t i = 0; i < D; ++i) dst[i] += gate * src[i];
    }
  }
  return absl::OkStatus();
}

absl::Status DecoderBlock::Forward(const ForwardBatch& batch, KvCache& kv, const Rope* rope,
                                   const float* rope_angles, DecoderScratch& sc) const {
  const int64_t T = batch.num_tokens();
  RETURN_IF_ERROR(ProjectQkv(T, rope, rope_angles, sc));
  WriteKv(batch, kv, sc.qkv.data());
  RETURN_IF_ERROR(Attend(batch, kv, sc));
  return OutputAndMlp(T, sc);
}

absl::Status DecoderBlock::ForwardUncached(const ForwardBatch& batch, const Rope* rope, const float* rope_angles,
                                           DecoderScratch& sc) const {
  if (config_->attn_logit_softcap > 0) {
    return absl::FailedPreconditionError("an uncached forward has no attention score cap (Gemma 2)");
  }
  const int64_t T = batch.num_tokens();
  const int S = batch.num_seqs();
  RETURN_IF_ERROR(ProjectQkv(T, rope, rope_angles, sc));
  // Ragged causal self-attention on the packed QKV rows: sequence s is rows
  // [seq_start[s], seq_start[s + 1]), its queries and keys both from position 0.
  sc.row_starts.resize(S);
  sc.seq_lengths.resize(S);
  int max_len = 0;
  for (int s = 0; s < S; ++s) {
    sc.row_starts[s] = batch.seq_start[s];
    sc.seq_lengths[s] = batch.seq_start[s + 1] - batch.seq_start[s];
    max_len = std::max(max_len, sc.seq_lengths[s]);
  }
  const int d = head_dim_;
  const int64_t row = int64_t{heads_ + 2 * kv_heads_} * d;
  const float* qkv = sc.qkv.data();
  SdpaArgs args;
  args.row_offsets = sc.row_starts.data();
  args.shape = {S, heads_, kv_heads_, max_len, max_len, d};
  args.q = {qkv, DType::kF32, max_len * row, d, row};
  args.k = {qkv + int64_t{heads_} * d, DType::kF32, max_len * row, d, row};
  args.v = {qkv + int64_t{heads_ + kv_heads_} * d, DType::kF32, max_len * row, d, row};
  args.options.scale = config_->attn_scale;
  args.masks.causal = !config_->bidirectional;
  // SDPA's window is |i - j| <= window; with the causal rule that is keys
  // (i - window_, i], the sliding layer's window_ keys. Bidirectional
  // (transformers' Gemma3TextModel: |i - j| < window_ / 2 + 1): window_ / 2
  // on each side.
  if (window_ > 0) args.masks.window = config_->bidirectional ? window_ / 2 : window_ - 1;
  args.masks.key_lengths = sc.seq_lengths.data();
  args.out = AttnView::Interleaved(sc.attn.data(), heads_, max_len, d);
  RETURN_IF_ERROR(ScaledDotProductAttention(args));
  return OutputAndMlp(T, sc);
}

}  // namespace attnserve
