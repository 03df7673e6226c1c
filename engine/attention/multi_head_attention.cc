#include "engine/attention/multi_head_attention.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/sdpa.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

absl::StatusOr<const Tensor*> Find(const TensorMap& state, absl::string_view prefix,
                                   absl::string_view name, std::vector<int64_t> shape,
                                   bool required) {
  std::string full = absl::StrCat(prefix, name);
  auto it = state.find(full);
  if (it == state.end()) {
    if (!required) return nullptr;
    return absl::NotFoundError(absl::StrCat("MultiHeadAttention: missing tensor '", full, "'"));
  }
  if (it->second.shape() != shape || it->second.dtype() == DType::kF16) {
    return absl::InvalidArgumentError(absl::StrCat("MultiHeadAttention: '", full, "' is ",
                                                   it->second.DebugString(), ", expected ",
                                                   ShapeString(shape), " f32 or bf16"));
  }
  return &it->second;
}

// Rows [row0, row0 + rows) of a [R, C] tensor, as f32.
Tensor Slice(const Tensor& t, int64_t row0, int64_t rows) {
  const int64_t cols = t.rank() == 2 ? t.dim(1) : 1;
  std::vector<int64_t> shape = t.rank() == 2 ? std::vector<int64_t>{rows, cols}
                                             : std::vector<int64_t>{rows};
  Tensor out = Tensor::Empty(shape);
  if (t.dtype() == DType::kF32) {
    std::memcpy(out.f32(), t.f32() + row0 * cols, rows * cols * sizeof(float));
  } else {
    ConvertBf16ToF32(t.u16() + row0 * cols, out.f32(), rows * cols);
  }
  return out;
}

}  // namespace

absl::StatusOr<MultiHeadAttention> MultiHeadAttention::FromStateDict(const MhaConfig& config,
                                                                     const TensorMap& state,
                                                                     absl::string_view prefix) {
  MhaConfig c = config;
  if (c.kdim == 0) c.kdim = c.embed_dim;
  if (c.vdim == 0) c.vdim = c.embed_dim;
  if (c.embed_dim <= 0 || c.num_heads <= 0 || c.kdim <= 0 || c.vdim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("MultiHeadAttention: embed_dim (", c.embed_dim,
                                                   "), num_heads (", c.num_heads,
                                                   "), kdim, vdim must be > 0"));
  }
  if (c.embed_dim % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("MultiHeadAttention: embed_dim (", c.embed_dim,
                                                   ") is not divisible by num_heads (",
                                                   c.num_heads, ")"));
  }
  const int64_t D = c.embed_dim;
  const DType st = c.weight_storage;
  MultiHeadAttention mha;
  mha.config_ = c;
  ASSIGN_OR_RETURN(const Tensor* in_bias, Find(state, prefix, "in_proj_bias", {3 * D}, false));
  ASSIGN_OR_RETURN(const Tensor* in_w, Find(state, prefix, "in_proj_weight", {3 * D, D}, false));
  if (in_w != nullptr && c.kdim == D && c.vdim == D) {
    Tensor b;
    if (in_bias) b = Slice(*in_bias, 0, 3 * D);
    ASSIGN_OR_RETURN(Linear qkv, Linear::Create(*in_w, in_bias ? &b : nullptr, st));
    mha.qkv_.emplace(std::move(qkv));
    // Separate Q and K/V projections too, for cross-attention calls.
    Tensor wq = Slice(*in_w, 0, D), wk = Slice(*in_w, D, D), wv = Slice(*in_w, 2 * D, D);
    Tensor bq, bk, bv;
    if (in_bias) {
      bq = Slice(*in_bias, 0, D);
      bk = Slice(*in_bias, D, D);
      bv = Slice(*in_bias, 2 * D, D);
    }
    ASSIGN_OR_RETURN(Linear q, Linear::Create(wq, in_bias ? &bq : nullptr, st));
    ASSIGN_OR_RETURN(Linear k, Linear::Create(wk, in_bias ? &bk : nullptr, st));
    ASSIGN_OR_RETURN(Linear v, Linear::Create(wv, in_bias ? &bv : nullptr, st));
    mha.q_.emplace(std::move(q));
    mha.k_.emplace(std::move(k));
    mha.v_.emplace(std::move(v));
  } else {
    ASSIGN_OR_RETURN(const Tensor* wq, Find(state, prefix, "q_proj_weight", {D, D}, true));
    ASSIGN_OR_RETURN(const Tensor* wk, Find(state, prefix, "k_proj_weight", {D, c.kdim}, true));
    ASSIGN_OR_RETURN(const Tensor* wv, Find(state, prefix, "v_proj_weight", {D, c.vdim}, true));
    Tensor bq, bk, bv;
    if (in_bias) {
      bq = Slice(*in_bias, 0, D);
      bk = Slice(*in_bias, D, D);
      bv = Slice(*in_bias, 2 * D, D);
    }
    ASSIGN_OR_RETURN(Linear q, Linear::Create(*wq, in_bias ? &bq : nullptr, st));
    ASSIGN_OR_RETURN(Linear k, Linear::Create(*wk, in_bias ? &bk : nullptr, st));
    ASSIGN_OR_RETURN(Linear v, Linear::Create(*wv, in_bias ? &bv : nullptr, st));
    mha.q_.emplace(std::move(q));
    mha.k_.emplace(std::move(k));
    mha.v_.emplace(std::move(v));
  }
  ASSIGN_OR_RETURN(const Tensor* wo, Find(state, prefix, "out_proj.weight", {D, D}, true));
  ASSIGN_OR_RETURN(const Tensor* bo, Find(state, prefix, "out_proj.bias", {D}, false));
  ASSIGN_OR_RETURN(Linear o, Linear::Create(*wo, bo, st));
  mha.out_.emplace(std::move(o));
  return mha;
}

absl::Status MultiHeadAttention::Forward(const Inputs& in, float* out, float* weights) const {
  const int64_t D = config_.embed_dim;
  const int H = config_.num_heads, d = head_dim();
  const int B = in.batch_size, nq = in.q_len, nk = in.kv_len;
  if (B <= 0 || nq <= 0 || nk <= 0 || !in.query || !in.key || !in.value || !out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MultiHeadAttention::Forward: batch_size, q_len, kv_len must be > 0 and inputs non-null; "
        "got B=", B, " Nq=", nq, " Nk=", nk));
  }
  const bool self = in.query == in.key && in.key == in.value && nq == nk && qkv_.has_value();
  SdpaArgs a;
  a.shape = {B, H, H, nq, nk, d};
  std::vector<float> qkv, qbuf, kbuf, vbuf;
  if (self) {
    // One fused GEMM: [B*N, 3D]; Q, K, V are column slices of it.
    qkv.resize(int64_t{B} * nq * 3 * D);
    RETURN_IF_ERROR(qkv_->Forward(in.query, int64_t{B} * nq, qkv.data()));
    const int64_t bs = int64_t{nq} * 3 * D;
    a.q = {qkv.data(), DType::kF32, bs, d, 3 * D};
    a.k = {qkv.data() + D, DType::kF32, bs, d, 3 * D};
    a.v = {qkv.data() + 2 * D, DType::kF32, bs, d, 3 * D};
  } else {
    qbuf.resize(int64_t{B} * nq * D);
    kbuf.resize(int64_t{B} * nk * D);
    vbuf.resize(int64_t{B} * nk * D);
    RETURN_IF_ERROR(q_->Forward(in.query, int64_t{B} * nq, qbuf.data()));
    RETURN_IF_ERROR(k_->Forward(in.key, int64_t{B} * nk, kbuf.data()));
    RETURN_IF_ERROR(v_->Forward(in.value, int64_t{B} * nk, vbuf.data()));
    a.q = ConstAttnView::Interleaved(qbuf.data(), H, nq, d);
    a.k = ConstAttnView::Interleaved(kbuf.data(), H, nk, d);
    a.v = ConstAttnView::Interleaved(vbuf.data(), H, nk, d);
  }
  std::vector<float> attn(int64_t{B} * nq * D);
  a.out = AttnView::Interleaved(attn.data(), H, nq, d);  // [B, Nq, H, d] = concat of heads
  a.masks = in.masks;
  a.options.weights = in.weights_mode;
  a.weights = weights;
  RETURN_IF_ERROR(ScaledDotProductAttention(a));
  return out_->Forward(attn.data(), int64_t{B} * nq, out);
}

}  // namespace attnserve
