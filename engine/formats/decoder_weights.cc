#include "engine/formats/decoder_weights.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/safetensors.h"

namespace attnserve {
namespace {

using Shape = std::vector<int64_t>;

// Loads tensor NAME, which must have row-major SHAPE, as `dtype`.
using LoadFn = std::function<absl::StatusOr<Tensor>(const std::string& name, const Shape& shape, DType dtype)>;
using HasFn = std::function<bool(const std::string& name)>;

}  // namespace

DType MatrixStorage(DType md, const std::vector<int64_t>& shape) {
  if (md == DType::kQ8_0 && !IsQ8_0RowShape(shape)) return DType::kF32;
  return md;
}

namespace {

// Learned position tables are read row by row (never packed): q8_0 keeps
// them f32.
DType TableDtype(DType md) { return md == DType::kQ8_0 ? DType::kF32 : md; }

Tensor ToDType(const Tensor& src, DType dtype) {
  if (src.dtype() == dtype) return src.Copy();
  Tensor out = Tensor::Empty(src.shape(), dtype);
  ConvertTensorData(static_cast<const std::byte*>(src.raw()), src.dtype(), out.raw(), dtype, src.numel());
  return out;
}

// Rows [begin, begin + n) of an f32 tensor read as [rows, last dim] (1-D:
// elements), converted to dtype.
Tensor Rows(const Tensor& src, int64_t begin, int64_t n, DType dtype) {
  const int64_t cols = src.rank() >= 2 ? src.dim(src.rank() - 1) : 1;
  Shape shape = src.rank() >= 2 ? Shape{n, cols} : Shape{n};
  Tensor f32 = Tensor::Empty(shape, DType::kF32);
  std::copy(src.f32() + begin * cols, src.f32() + (begin + n) * cols, f32.f32());
  return ToDType(f32, MatrixStorage(dtype, shape));
}

// [r, c] f32 -> [c, r] in dtype (GPT-2 Conv1D weights are stored [in, out]).
Tensor Transpose(const Tensor& src, DType dtype) {
  const int64_t r = src.dim(0), c = src.dim(1);
  Tensor t = Tensor::Empty({c, r}, DType::kF32);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t.f32()[j * r + i] = src.f32()[i * c + j];
  return ToDType(t, MatrixStorage(dtype, t.shape()));
}

absl::Status CheckMatrixDtype(DType md) {
  if (md == DType::kF32 || md == DType::kBF16 || md == DType::kQ8_0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("weight dtype must be f32, bf16 or q8_0, got ", DTypeName(md)));
}

struct Names {
  std::string embed, pos_embed, final_norm, final_norm_bias, lm_head;
  std::function<std::string(int layer, const char* what)> layer;
  // Phi-3: q, k, v as one matrix ("qkv": [q; k; v] rows) and gate, up as
  // one ("gate_up": [gate; up] rows), split here into the separate weights.
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // A mixture's experts: "gate", "up" or "down" of expert `e` in `layer`,
  // [rows, cols], as `dtype` (each format knows where it keeps them).
  std::function<absl::StatusOr<Tensor>(int layer, int e, const char* what, const Shape& shape, DType dtype)> expert;
  // Qwen2-MoE's shared-expert gate of `layer` (hidden values, f32; HF keeps
  // it [1, hidden], llama.cpp [hidden]).
  std::function<absl::StatusOr<Tensor>(int layer)> shared_gate;
};

// Llama-family assembly, shared by both formats.
absl::StatusOr<DecoderWeights> LoadLlama(const DecoderConfig& c, const Names& n, const LoadFn& load,
                                         const HasFn& has, DType md) {
  DecoderWeights w;
  const int64_t h = c.hidden_size, q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim,
                f = c.intermediate_size, v = c.vocab_size;
  ASSIGN_OR_RETURN(w.token_embedding, load(n.embed, {v, h}, md));
  for (int i = 0; i < c.num_layers; ++i) {
    DecoderLayerWeights l;
    auto L = [&](const char* what) { return n.layer(i, what); };
    if (c.pre_norms) {
      ASSIGN_OR_RETURN(l.attn_norm_weight, load(L("attn_norm"), {h}, DType::kF32));
    }
    if (n.fused_qkv) {
      ASSIGN_OR_RETURN(Tensor qkv, load(L("qkv"), {q + 2 * kv, h}, DType::kF32));
      l.q_weight = Rows(qkv, 0, q, md);
      l.k_weight = Rows(qkv, q, kv, md);
      l.v_weight = Rows(qkv, q + kv, kv, md);
    } else {
      ASSIGN_OR_RETURN(l.q_weight, load(L("q"), {q, h}, md));
      ASSIGN_OR_RETURN(l.k_weight, load(L("k"), {kv, h}, md));
      ASSIGN_OR_RETURN(l.v_weight, load(L("v"), {kv, h}, md));
    }
    if (c.qkv_bias) {
      ASSIGN_OR_RETURN(l.q_bias, load(L("q_bias"), {q}, DType::kF32));
      ASSIGN_OR_RETURN(l.k_bias, load(L("k_bias"), {kv}, DType::kF32));
      ASSIGN_OR_RETURN(l.v_bias, load(L("v_bias"), {kv}, DType::kF32));
    }
    if (c.qk_norm || c.qk_norm_whole) {
      ASSIGN_OR_RETURN(l.q_norm_weight, load(L("q_norm"), {c.qk_norm ? c.head_dim : q}, DType::kF32));
      ASSIGN_OR_RETURN(l.k_norm_weight, load(L("k_norm"), {c.qk_norm ? c.head_dim : kv}, DType::kF32));
    }
    ASSIGN_OR_RETURN(l.o_weight, load(L("o"), {h, q}, md));
    if (c.attn_out_bias) {
      ASSIGN_OR_RETURN(l.o_bias, load(L("o_bias"), {h}, DType::kF32));
    }
    if (c.pre_norms) {
      ASSIGN_OR_RETURN(l.mlp_norm_weight, load(L("mlp_norm"), {h}, DType::kF32));
    }
    if (c.sandwich_norms) {
      ASSIGN_OR_RETURN(l.post_attn_norm_weight, load(L("post_attn_norm"), {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.post_mlp_norm_weight, load(L("post_mlp_norm"), {h}, DType::kF32));
    }
    if (c.num_experts > 0) {
      ASSIGN_OR_RETURN(l.router_weight, load(L("router"), {c.num_experts, h}, DType::kF32));
      l.experts.resize(c.num_experts);
      for (int e = 0; e < c.num_experts; ++e) {
        DecoderExpertWeights& x = l.experts[e];
        ASSIGN_OR_RETURN(x.gate_weight, n.expert(i, e, "gate", {f, h}, md));
        ASSIGN_OR_RETURN(x.up_weight, n.expert(i, e, "up", {f, h}, md));
        ASSIGN_OR_RETURN(x.down_weight, n.expert(i, e, "down", {h, f}, md));
      }
      if (const int64_t s = c.shared_expert_size; s > 0) {
        ASSIGN_OR_RETURN(l.shared_expert.gate_weight, load(L("shared_gate_proj"), {s, h}, md));
        ASSIGN_OR_RETURN(l.shared_expert.up_weight, load(L("shared_up_proj"), {s, h}, md));
        ASSIGN_OR_RETURN(l.shared_expert.down_weight, load(L("shared_down_proj"), {h, s}, md));
        ASSIGN_OR_RETURN(l.shared_gate_weight, n.shared_gate(i));
      }
    } else if (n.fused_gate_up) {
      ASSIGN_OR_RETURN(Tensor gate_up, load(L("gate_up"), {2 * f, h}, DType::kF32));
      l.gate_weight = Rows(gate_up, 0, f, md);
      l.up_weight = Rows(gate_up, f, f, md);
    } else {
      ASSIGN_OR_RETURN(l.gate_weight, load(L("gate"), {f, h}, md));
      ASSIGN_OR_RETURN(l.up_weight, load(L("up"), {f, h}, md));
    }
    if (c.num_experts == 0) {
      ASSIGN_OR_RETURN(l.down_weight, load(L("down"), {h, f}, md));
    }
    if (c.mlp_bias) {
      ASSIGN_OR_RETURN(l.gate_bias, load(L("gate_bias"), {f}, DType::kF32));
      ASSIGN_OR_RETURN(l.up_bias, load(L("up_bias"), {f}, DType::kF32));
      ASSIGN_OR_RETURN(l.down_bias, load(L("down_bias"), {h}, DType::kF32));
    }
    w.layers.push_back(std::move(l));
  }
  ASSIGN_OR_RETURN(w.final_norm_weight, load(n.final_norm, {h}, DType::kF32));
  if (!c.tie_word_embeddings) {
    if (!has(n.lm_head)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", n.lm_head,
                                                     "' is missing and the config does not tie embeddings"));
    }
    ASSIGN_OR_RETURN(w.lm_head, load(n.lm_head, {v, h}, md));
  }
  return w;
}

}  // namespace

int64_t DecoderWeights::TotalBytes() const {
  int64_t total = 0;
  auto add = [&](const Tensor& t) { total += static_cast<int64_t>(t.bytes()); };
  add(token_embedding);
  add(position_embedding);
  add(final_norm_weight);
  add(final_norm_bias);
  add(lm_head);
  for (const DecoderLayerWeights& l : layers) {
    for (const Tensor* t : {&l.attn_norm_weight, &l.attn_norm_bias, &l.q_weight, &l.k_weight, &l.v_weight,
                            &l.q_bias, &l.k_bias, &l.v_bias, &l.q_norm_weight, &l.k_norm_weight, &l.o_weight,
                            &l.o_bias, &l.mlp_norm_weight, &l.mlp_norm_bias, &l.post_attn_norm_weight,
                            &l.post_mlp_norm_weight, &l.gate_weight, &l.gate_bias,
                            &l.up_weight, &l.up_bias, &l.down_weight, &l.down_bias, &l.router_weight}) {
      add(*t);
    }
    for (const DecoderExpertWeights& x : l.experts) {
      add(x.gate_weight);
      add(x.up_weight);
      add(x.down_weight);
    }
    add(l.shared_expert.gate_weight);
    add(l.shared_expert.up_weight);
    add(l.shared_expert.down_weight);
    add(l.shared_gate_weight);
  }
  return total;
}

absl::Status ValidateDecoderWeights(const DecoderConfig& c, const DecoderWeights& w, DType md) {
  const int64_t h = c.hidden_size, q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim,
                f = c.intermediate_size, v = c.vocab_size;
  auto check = [&](const std::string& name, const Tensor& t, bool required, const Shape& shape,
                   DType dtype) -> absl::Status {
    dtype = MatrixStorage(dtype, shape);
    if (!required) {
      if (!t.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": present but the config has no use for it"));
      return absl::OkStatus();
    }
    if (t.shape() != shape || t.dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", t.DebugString(), ", want ", ShapeString(shape), " ",
                                                     DTypeName(dtype)));
    }
    return absl::OkStatus();
  };
  const bool gpt2 = c.arch == DecoderArch::kGpt2;
  const bool ln = c.norm_bias;
  RETURN_IF_ERROR(check("token_embedding", w.token_embedding, true, {v, h}, md));
  RETURN_IF_ERROR(check("position_embedding", w.position_embedding, c.positions == PositionKind::kLearned,
                        {c.max_positions, h}, TableDtype(md)));
  if (static_cast<int>(w.layers.size()) != c.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat("layers: ", w.layers.size(), ", want ", c.num_layers));
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const DecoderLayerWeights& l = w.layers[i];
    const std::string p = absl::StrCat("layers.", i, ".");
    RETURN_IF_ERROR(check(p + "attn_norm_weight", l.attn_norm_weight, c.pre_norms, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "attn_norm_bias", l.attn_norm_bias, ln, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "q_weight", l.q_weight, true, {q, h}, md));
    RETURN_IF_ERROR(check(p + "k_weight", l.k_weight, true, {kv, h}, md));
    RETURN_IF_ERROR(check(p + "v_weight", l.v_weight, true, {kv, h}, md));
    RETURN_IF_ERROR(check(p + "q_bias", l.q_bias, c.qkv_bias, {q}, DType::kF32));
    RETURN_IF_ERROR(check(p + "k_bias", l.k_bias, c.qkv_bias, {kv}, DType::kF32));
    RETURN_IF_ERROR(check(p + "v_bias", l.v_bias, c.qkv_bias, {kv}, DType::kF32));
    const bool qk_norms = c.qk_norm || c.qk_norm_whole;
    RETURN_IF_ERROR(check(p + "q_norm_weight", l.q_norm_weight, qk_norms, {c.qk_norm ? c.head_dim : q}, DType::kF32));
    RETURN_IF_ERROR(check(p + "k_norm_weight", l.k_norm_weight, qk_norms, {c.qk_norm ? c.head_dim : kv}, DType::kF32));
    RETURN_IF_ERROR(check(p + "o_weight", l.o_weight, true, {h, q}, md));
    RETURN_IF_ERROR(check(p + "o_bias", l.o_bias, c.attn_out_bias, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "mlp_norm_weight", l.mlp_norm_weight, c.pre_norms, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "mlp_norm_bias", l.mlp_norm_bias, ln, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "post_attn_norm_weight", l.post_attn_norm_weight, c.sandwich_norms, {h}, DType::kF32));
    RETURN_IF_ERROR(check(p + "post_mlp_norm_weight", l.post_mlp_norm_weight, c.sandwich_norms, {h}, DType::kF32));
    const bool moe = c.num_experts > 0;
    RETURN_IF_ERROR(check(p + "gate_weight", l.gate_weight, !gpt2 && !moe, {f, h}, md));
    RETURN_IF_ERROR(check(p + "gate_bias", l.gate_bias, !gpt2 && c.mlp_bias, {f}, DType::kF32));
    RETURN_IF_ERROR(check(p + "up_weight", l.up_weight, !moe, {f, h}, md));
    RETURN_IF_ERROR(check(p + "up_bias", l.up_bias, c.mlp_bias, {f}, DType::kF32));
    RETURN_IF_ERROR(check(p + "down_weight", l.down_weight, !moe, {h, f}, md));
    RETURN_IF_ERROR(check(p + "router_weight", l.router_weight, moe, {c.num_experts, h}, DType::kF32));
    if (static_cast<int>(l.experts.size()) != c.num_experts) {
      return absl::InvalidArgumentError(absl::StrCat(p, "experts: ", l.experts.size(), ", want ", c.num_experts));
    }
    const int64_t sh = c.shared_expert_size;
    const bool shared = sh > 0;
    RETURN_IF_ERROR(check(p + "shared_expert.gate_weight", l.shared_expert.gate_weight, shared, {sh, h}, md));
    RETURN_IF_ERROR(check(p + "shared_expert.up_weight", l.shared_expert.up_weight, shared, {sh, h}, md));
    RETURN_IF_ERROR(check(p + "shared_expert.down_weight", l.shared_expert.down_weight, shared, {h, sh}, md));
    RETURN_IF_ERROR(check(p + "shared_gate_weight", l.shared_gate_weight, shared, {h}, DType::kF32));
    for (int e = 0; e < c.num_experts; ++e) {
      const DecoderExpertWeights& x = l.experts[e];
      const std::string q = absl::StrCat(p, "experts.", e, ".");
      RETURN_IF_ERROR(check(q + "gate_weight", x.gate_weight, true, {f, h}, md));
      RETURN_IF_ERROR(check(q + "up_weight", x.up_weight, true, {f, h}, md));
      RETURN_IF_ERROR(check(q + "down_weight", x.down_weight, true, {h, f}, md));
    }
    RETURN_IF_ERROR(check(p + "down_bias", l.down_bias, c.mlp_bias, {h}, DType::kF32));
  }
  RETURN_IF_ERROR(check("final_norm_weight", w.final_norm_weight, true, {h}, DType::kF32));
  RETURN_IF_ERROR(check("final_norm_bias", w.final_norm_bias, ln, {h}, DType::kF32));
  RETURN_IF_ERROR(check("lm_head", w.lm_head, !c.tie_word_embeddings, {v, h}, md));
  return absl::OkStatus();
}

absl::StatusOr<DecoderWeights> LoadDecoderWeightsFromGguf(const GgufFile& g, const DecoderConfig& c, DType md) {
  RETURN_IF_ERROR(CheckMatrixDtype(md));
  LoadFn load = [&](const std::string& name, const Shape& shape, DType dtype) {
    return g.LoadTensorWithShape(name, shape, MatrixStorage(dtype, shape));
  };
  HasFn has = [&](const std::string& name) { return g.FindTensor(name) != nullptr; };
  DecoderWeights w;
  if (c.arch == DecoderArch::kLlama) {
    Names n;
    n.embed = "token_embd.weight";
    n.final_norm = "output_norm.weight";
    n.lm_head = "output.weight";
    n.layer = [](int i, const char* what) {
      static const std::map<std::string, std::string> kMap = {
          {"attn_norm", "attn_norm.weight"}, {"q", "attn_q.weight"}, {"k", "attn_k.weight"},
          {"v", "attn_v.weight"}, {"q_bias", "attn_q.bias"}, {"k_bias", "attn_k.bias"},
          {"v_bias", "attn_v.bias"}, {"q_norm", "attn_q_norm.weight"}, {"k_norm", "attn_k_norm.weight"},
          {"o", "attn_output.weight"}, {"o_bias", "attn_output.bias"},
          {"mlp_norm", "ffn_norm.weight"}, {"gate", "ffn_gate.weight"}, {"up", "ffn_up.weight"},
          {"down", "ffn_down.weight"}, {"gate_bias", "ffn_gate.bias"}, {"up_bias", "ffn_up.bias"},
          {"down_bias", "ffn_down.bias"}, {"post_attn_norm", "post_attention_norm.weight"},
          {"post_mlp_norm", "post_ffw_norm.weight"}, {"qkv", "attn_qkv.weight"}, {"gate_up", "ffn_up.weight"},
          {"router", "ffn_gate_inp.weight"}, {"shared_gate_proj", "ffn_gate_shexp.weight"},
          {"shared_up_proj", "ffn_up_shexp.weight"}, {"shared_down_proj", "ffn_down_shexp.weight"}};
      return absl::StrCat("blk.", i, ".", kMap.at(what));
    };
    n.shared_gate = [&](int i) {
      return g.LoadTensorWithShape(absl::StrCat("blk.", i, ".ffn_gate_inp_shexp.weight"), {c.hidden_size},
                                   DType::kF32);
    };
    // The experts stacked: ffn_gate_exps / ffn_up_exps [experts, ffn,
    // hidden], ffn_down_exps [experts, hidden, ffn].
    n.expert = [&](int i, int e, const char* what, const Shape& shape, DType dtype) {
      return g.LoadTensorSlab(absl::StrCat("blk.", i, ".ffn_", what, "_exps.weight"),
                              {c.num_experts, shape[0], shape[1]}, e, MatrixStorage(dtype, shape));
    };
    // llama.cpp's phi3: attn_qkv (or attn_q / attn_k / attn_v) and always
    // one [2 * ffn, hidden] ffn_up, gate first (its swiglu of the halves).
    n.fused_qkv = has("blk.0.attn_qkv.weight");
    n.fused_gate_up = c.architecture == "phi3";
    ASSIGN_OR_RETURN(w, LoadLlama(c, n, load, has, md));
  } else {
    const int64_t h = c.hidden_size, f = c.intermediate_size;
    ASSIGN_OR_RETURN(w.token_embedding, load("token_embd.weight", {c.vocab_size, h}, md));
    ASSIGN_OR_RETURN(w.position_embedding, load("position_embd.weight", {c.max_positions, h}, TableDtype(md)));
    for (int i = 0; i < c.num_layers; ++i) {
      DecoderLayerWeights l;
      const std::string p = absl::StrCat("blk.", i, ".");
      ASSIGN_OR_RETURN(l.attn_norm_weight, load(p + "attn_norm.weight", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.attn_norm_bias, load(p + "attn_norm.bias", {h}, DType::kF32));
      // Fused QKV, already [3h, h] (llama.cpp's converter transposed Conv1D).
      ASSIGN_OR_RETURN(Tensor qkv, load(p + "attn_qkv.weight", {3 * h, h}, DType::kF32));
      ASSIGN_OR_RETURN(Tensor qkv_b, load(p + "attn_qkv.bias", {3 * h}, DType::kF32));
      l.q_weight = Rows(qkv, 0, h, md);
      l.k_weight = Rows(qkv, h, h, md);
      l.v_weight = Rows(qkv, 2 * h, h, md);
      l.q_bias = Rows(qkv_b, 0, h, DType::kF32);
      l.k_bias = Rows(qkv_b, h, h, DType::kF32);
      l.v_bias = Rows(qkv_b, 2 * h, h, DType::kF32);
      ASSIGN_OR_RETURN(l.o_weight, load(p + "attn_output.weight", {h, h}, md));
      ASSIGN_OR_RETURN(l.o_bias, load(p + "attn_output.bias", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.mlp_norm_weight, load(p + "ffn_norm.weight", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.mlp_norm_bias, load(p + "ffn_norm.bias", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.up_weight, load(p + "ffn_up.weight", {f, h}, md));
      ASSIGN_OR_RETURN(l.up_bias, load(p + "ffn_up.bias", {f}, DType::kF32));
      ASSIGN_OR_RETURN(l.down_weight, load(p + "ffn_down.weight", {h, f}, md));
      ASSIGN_OR_RETURN(l.down_bias, load(p + "ffn_down.bias", {h}, DType::kF32));
      w.layers.push_back(std::move(l));
    }
    ASSIGN_OR_RETURN(w.final_norm_weight, load("output_norm.weight", {h}, DType::kF32));
    ASSIGN_OR_RETURN(w.final_norm_bias, load("output_norm.bias", {h}, DType::kF32));
    if (!c.tie_word_embeddings) {
      ASSIGN_OR_RETURN(w.lm_head, load("output.weight", {c.vocab_size, h}, md));
    }
  }
  RETURN_IF_ERROR(ValidateDecoderWeights(c, w, md));
  return w;
}

absl::StatusOr<DecoderWeights> LoadDecoderWeightsFromHf(const SafetensorsArchive& a, const DecoderConfig& c,
                                                        DType md) {
  RETURN_IF_ERROR(CheckMatrixDtype(md));
  LoadFn load = [&](const std::string& name, const Shape& shape, DType dtype) {
    return a.LoadWithShape(name, shape, MatrixStorage(dtype, shape));
  };
  HasFn has = [&](const std::string& name) { return a.Find(name) != nullptr; };
  DecoderWeights w;
  if (c.arch == DecoderArch::kLlama) {
    // A *ForCausalLM checkpoint keeps the body under "model."; the bare
    // *Model an embedder saves (Qwen3-Embedding, e5-mistral) has no prefix.
    const std::string pre = has("model.embed_tokens.weight") || !has("embed_tokens.weight") ? "model." : "";
    Names n;
    n.embed = pre + "embed_tokens.weight";
    n.final_norm = pre + "norm.weight";
    n.lm_head = "lm_head.weight";
    // Gemma 2/3 call their attention-output norm post_attention_layernorm
    // (Llama's name for the MLP's pre-norm) and the MLP's pre-norm
    // pre_feedforward_layernorm.
    const bool sandwich = c.sandwich_norms;
    const bool mixtral = c.architecture == "mixtral";
    const bool granite_moe = c.architecture == "granitemoe";
    n.layer = [pre, sandwich, mixtral, granite_moe](int i, const char* what) {
      static const std::map<std::string, std::string> kSandwich = {
          {"mlp_norm", "pre_feedforward_layernorm.weight"}, {"post_attn_norm", "post_attention_layernorm.weight"},
          {"post_mlp_norm", "post_feedforward_layernorm.weight"}};
      if (sandwich && kSandwich.contains(what)) return absl::StrCat(pre, "layers.", i, ".", kSandwich.at(what));
      static const std::map<std::string, std::string> kMap = {
          {"attn_norm", "input_layernorm.weight"}, {"q", "self_attn.q_proj.weight"},
          {"k", "self_attn.k_proj.weight"}, {"v", "self_attn.v_proj.weight"},
          {"q_bias", "self_attn.q_proj.bias"}, {"k_bias", "self_attn.k_proj.bias"},
          {"v_bias", "self_attn.v_proj.bias"}, {"q_norm", "self_attn.q_norm.weight"},
          {"k_norm", "self_attn.k_norm.weight"}, {"o", "self_attn.o_proj.weight"},
          {"o_bias", "self_attn.o_proj.bias"}, {"mlp_norm", "post_attention_layernorm.weight"},
          {"gate", "mlp.gate_proj.weight"}, {"up", "mlp.up_proj.weight"}, {"down", "mlp.down_proj.weight"},
          {"gate_bias", "mlp.gate_proj.bias"}, {"up_bias", "mlp.up_proj.bias"}, {"down_bias", "mlp.down_proj.bias"},
          {"qkv", "self_attn.qkv_proj.weight"}, {"gate_up", "mlp.gate_up_proj.weight"},
          {"shared_gate_proj", "mlp.shared_expert.gate_proj.weight"},
          {"shared_up_proj", "mlp.shared_expert.up_proj.weight"},
          {"shared_down_proj", "mlp.shared_expert.down_proj.weight"}};
      if (std::string(what) == "router") {
        return absl::StrCat(pre, "layers.", i, ".",
                            granite_moe ? "block_sparse_moe.router.layer.weight"
                            : mixtral   ? "block_sparse_moe.gate.weight"
                                        : "mlp.gate.weight");
      }
      return absl::StrCat(pre, "layers.", i, ".", kMap.at(what));
    };
    // Granite MoE's experts are stacked in two tensors, input_linear
    // [experts, 2 ffn, hidden] (each expert's gate rows, then its up rows)
    // and output_linear [experts, hidden, ffn]; each is read once per layer
    // (f32) and the experts' rows cut from it.
    auto stacked = std::make_shared<std::pair<int, std::map<std::string, Tensor>>>(-1, std::map<std::string, Tensor>());
    auto granite_expert = [&, pre, stacked](int i, int e, const char* what, const Shape& shape,
                                            DType dtype) -> absl::StatusOr<Tensor> {
      if (stacked->first != i) {
        stacked->first = i;
        stacked->second.clear();
      }
      const bool down = std::string(what) == "down";
      const std::string name = absl::StrCat(pre, "layers.", i, ".block_sparse_moe.",
                                            down ? "output_linear" : "input_linear", ".weight");
      const int64_t rows = down ? shape[0] : 2 * shape[0];
      if (!stacked->second.contains(name)) {
        ASSIGN_OR_RETURN(Tensor t, load(name, {c.num_experts, rows, shape[1]}, DType::kF32));
        stacked->second.emplace(name, std::move(t));
      }
      const int64_t first = e * rows + (std::string(what) == "up" ? shape[0] : 0);
      return Rows(stacked->second.at(name), first, shape[0], MatrixStorage(dtype, shape));
    };
    n.shared_gate = [&, pre](int i) -> absl::StatusOr<Tensor> {
      ASSIGN_OR_RETURN(Tensor t, load(absl::StrCat(pre, "layers.", i, ".mlp.shared_expert_gate.weight"),
                                      {1, c.hidden_size}, DType::kF32));
      t.Reshape({c.hidden_size});
      return t;
    };
    // Mixtral's experts are w1 (gate), w3 (up), w2 (down); Qwen3-MoE's are
    // named as Llama's MLP.
    n.expert = [&, pre, mixtral, granite_moe, granite_expert](int i, int e, const char* what, const Shape& shape,
                                                              DType dtype) -> absl::StatusOr<Tensor> {
      if (granite_moe) return granite_expert(i, e, what, shape, dtype);
      static const std::map<std::string, std::string> kMixtral = {{"gate", "w1"}, {"up", "w3"}, {"down", "w2"}};
      const std::string name =
          mixtral ? absl::StrCat(pre, "layers.", i, ".block_sparse_moe.experts.", e, ".", kMixtral.at(what), ".weight")
                  : absl::StrCat(pre, "layers.", i, ".mlp.experts.", e, ".", what, "_proj.weight");
      return load(name, shape, dtype);
    };
    // Phi-3's fused projections.
    n.fused_qkv = has(n.layer(0, "qkv"));
    n.fused_gate_up = has(n.layer(0, "gate_up"));
    ASSIGN_OR_RETURN(w, LoadLlama(c, n, load, has, md));
  } else {
    // GPT-2: Conv1D weights are [in, out] and are transposed here.
    const std::string pre = has("transformer.wte.weight") ? "transformer." : "";
    const int64_t h = c.hidden_size, f = c.intermediate_size;
    ASSIGN_OR_RETURN(w.token_embedding, load(pre + "wte.weight", {c.vocab_size, h}, md));
    ASSIGN_OR_RETURN(w.position_embedding, load(pre + "wpe.weight", {c.max_positions, h}, TableDtype(md)));
    for (int i = 0; i < c.num_layers; ++i) {
      DecoderLayerWeights l;
      const std::string p = absl::StrCat(pre, "h.", i, ".");
      ASSIGN_OR_RETURN(l.attn_norm_weight, load(p + "ln_1.weight", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.attn_norm_bias, load(p + "ln_1.bias", {h}, DType::kF32));
      ASSIGN_OR_RETURN(Tensor c_attn, load(p + "attn.c_attn.weight", {h, 3 * h}, DType::kF32));
      Tensor qkv = Transpose(c_attn, DType::kF32);  // [3h, h]
      ASSIGN_OR_RETURN(Tensor qkv_b, load(p + "attn.c_attn.bias", {3 * h}, DType::kF32));
      l.q_weight = Rows(qkv, 0, h, md);
      l.k_weight = Rows(qkv, h, h, md);
      l.v_weight = Rows(qkv, 2 * h, h, md);
      l.q_bias = Rows(qkv_b, 0, h, DType::kF32);
      l.k_bias = Rows(qkv_b, h, h, DType::kF32);
      l.v_bias = Rows(qkv_b, 2 * h, h, DType::kF32);
      ASSIGN_OR_RETURN(Tensor c_proj, load(p + "attn.c_proj.weight", {h, h}, DType::kF32));
      l.o_weight = Transpose(c_proj, md);
      ASSIGN_OR_RETURN(l.o_bias, load(p + "attn.c_proj.bias", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.mlp_norm_weight, load(p + "ln_2.weight", {h}, DType::kF32));
      ASSIGN_OR_RETURN(l.mlp_norm_bias, load(p + "ln_2.bias", {h}, DType::kF32));
      ASSIGN_OR_RETURN(Tensor c_fc, load(p + "mlp.c_fc.weight", {h, f}, DType::kF32));
      l.up_weight = Transpose(c_fc, md);
      ASSIGN_OR_RETURN(l.up_bias, load(p + "mlp.c_fc.bias", {f}, DType::kF32));
      ASSIGN_OR_RETURN(Tensor mlp_proj, load(p + "mlp.c_proj.weight", {f, h}, DType::kF32));
      l.down_weight = Transpose(mlp_proj, md);
      ASSIGN_OR_RETURN(l.down_bias, load(p + "mlp.c_proj.bias", {h}, DType::kF32));
      w.layers.push_back(std::move(l));
    }
    ASSIGN_OR_RETURN(w.final_norm_weight, load(pre + "ln_f.weight", {h}, DType::kF32));
    ASSIGN_OR_RETURN(w.final_norm_bias, load(pre + "ln_f.bias", {h}, DType::kF32));
    if (!c.tie_word_embeddings) {
      ASSIGN_OR_RETURN(w.lm_head, load("lm_head.weight", {c.vocab_size, h}, md));
    }
  }
  RETURN_IF_ERROR(ValidateDecoderWeights(c, w, md));
  return w;
}

}  // namespace attnserve
