#include "engine/formats/decoder_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status_macros.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"

namespace attnserve {

const char* RopeScalingKindName(RopeScalingKind kind) {
  switch (kind) {
    case RopeScalingKind::kNone: return "none";
    case RopeScalingKind::kLinear: return "linear";
    case RopeScalingKind::kDynamicNtk: return "dynamic";
    case RopeScalingKind::kLlama3: return "llama3";
    case RopeScalingKind::kYarn: return "yarn";
    case RopeScalingKind::kLongRope: return "longrope";
  }
  return "unknown";
}

const char* RopePairingName(RopePairing pairing) {
  return pairing == RopePairing::kHalfSplit ? "half_split" : "adjacent";
}

namespace {

// ", sliding window 4096 (layers 2-27)" or "" when there is none.
std::string SlidingWindowDescription(const DecoderConfig& c) {
  std::vector<int> layers;
  for (int l = 0; l < c.num_layers; ++l)
    if (c.LayerWindow(l) > 0) layers.push_back(l);
  if (layers.empty()) return "";
  if (static_cast<int>(layers.size()) == c.num_layers) return absl::StrCat(", sliding window ", c.sliding_window);
  return absl::StrCat(", sliding window ", c.sliding_window, " (layers ", absl::StrJoin(layers, ","), ")");
}

}  // namespace

absl::Status DecoderConfig::Validate() const {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("decoder config (", architecture, "): ", why));
  };
  if (hidden_size <= 0 || num_layers <= 0 || num_heads <= 0 || num_kv_heads <= 0 || head_dim <= 0 ||
      vocab_size <= 0 || intermediate_size <= 0) {
    return bad(absl::StrCat("sizes must be positive: hidden ", hidden_size, ", layers ", num_layers, ", heads ",
                            num_heads, ", kv heads ", num_kv_heads, ", head_dim ", head_dim, ", vocab ", vocab_size,
                            ", intermediate ", intermediate_size));
  }
  if (num_heads % num_kv_heads != 0) {
    return bad(absl::StrCat("num_heads ", num_heads, " is not a multiple of num_kv_heads ", num_kv_heads));
  }
  if (max_positions <= 0) return bad(absl::StrCat("max_positions ", max_positions, " must be positive"));
  if (!(norm_eps > 0) || !std::isfinite(norm_eps)) return bad(absl::StrCat("norm epsilon ", norm_eps, " must be > 0"));
  if (positions == PositionKind::kRope) {
    if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
      return bad(absl::StrCat("rope_dim ", rope_dim, " must be even and in (0, head_dim ", head_dim, "]"));
    }
    if (!(rope_theta > 0) || !std::isfinite(rope_theta)) return bad(absl::StrCat("rope_theta ", rope_theta));
    if (!rope_freq_factors.empty() && static_cast<int>(rope_freq_factors.size()) != rope_dim / 2) {
      return bad(absl::StrCat("rope_freq_factors has ", rope_freq_factors.size(), " entries, want ", rope_dim / 2));
    }
    if (rope_scaling.kind != RopeScalingKind::kNone && !(rope_scaling.factor > 0)) {
      return bad(absl::StrCat("rope_scaling factor ", rope_scaling.factor, " must be > 0"));
    }
    if (rope_scaling.kind == RopeScalingKind::kLlama3 &&
        (rope_scaling.original_max_positions <= 0 || !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))) {
      return bad("llama3 rope_scaling needs original_max_position_embeddings > 0 and high_freq_factor > "
                 "low_freq_factor");
    }
    if (rope_scaling.kind == RopeScalingKind::kYarn &&
        (rope_scaling.original_max_positions <= 0 || !(rope_scaling.beta_fast > 0) ||
         !(rope_scaling.beta_slow > 0) || !(rope_scaling.attn_factor > 0))) {
      return bad(absl::StrCat("yarn rope_scaling needs original_max_position_embeddings > 0 (got ",
                              rope_scaling.original_max_positions, "), beta_fast > 0 (", rope_scaling.beta_fast,
                              "), beta_slow > 0 (", rope_scaling.beta_slow, ") and attention_factor > 0 (",
                              rope_scaling.attn_factor, ")"));
    }
    if (rope_scaling.kind == RopeScalingKind::kLongRope) {
      const size_t want = static_cast<size_t>(rope_dim / 2);
      if (rope_scaling.short_factor.size() != want || rope_scaling.long_factor.size() != want ||
          rope_scaling.original_max_positions <= 0 || !(rope_scaling.attn_factor > 0)) {
        return bad(absl::StrCat("longrope rope_scaling needs short_factor and long_factor of rope_dim / 2 = ", want,
                                " entries (got ", rope_scaling.short_factor.size(), " and ",
                                rope_scaling.long_factor.size(), "), original_max_position_embeddings > 0 (",
                                rope_scaling.original_max_positions, ") and attention_factor > 0 (",
                                rope_scaling.attn_factor, ")"));
      }
      for (const std::vector<float>* list : {&rope_scaling.short_factor, &rope_scaling.long_factor}) {
        for (float f : *list) {
          if (!(f > 0) || !std::isfinite(f)) return bad(absl::StrCat("longrope factor ", f, " must be > 0"));
        }
      }
    }
    if (rope_scaling.kind == RopeScalingKind::kDynamicNtk && rope_dim <= 2) {
      return bad(absl::StrCat("dynamic rope_scaling needs rope_dim > 2, got ", rope_dim));
    }
  }
  if (num_experts < 0 || (num_experts > 0 && (experts_per_token < 1 || experts_per_token > num_experts))) {
    return bad(absl::StrCat("experts_per_token ", experts_per_token, " must be in [1, num_experts ", num_experts,
                            "] (num_experts ", num_experts, " must be >= 0)"));
  }
  if (!rope_layers.empty() && static_cast<int>(rope_layers.size()) != num_layers) {
    return bad(absl::StrCat("rope_layers has ", rope_layers.size(), " entries, want num_layers ", num_layers));
  }
  if (qk_norm && qk_norm_whole) return bad("qk_norm (per head) and qk_norm_whole (whole projection) exclude each other");
  if (!pre_norms && !sandwich_norms) return bad("a model without pre-norms needs its post-norms (sandwich_norms)");
  if (!(clip_qkv >= 0) || !std::isfinite(clip_qkv)) return bad(absl::StrCat("clip_qkv ", clip_qkv, " must be >= 0"));
  if (shared_expert_size < 0 || (shared_expert_size > 0 && num_experts == 0)) {
    return bad(absl::StrCat("shared_expert_size ", shared_expert_size, " needs experts (num_experts ", num_experts,
                            ") and must be >= 0"));
  }
  if (num_experts > 0 && (mlp != MlpKind::kSwiGlu || arch != DecoderArch::kLlama)) {
    return bad("a mixture of experts needs SwiGLU experts in a Llama-family body");
  }
  if (sliding_window < 0) return bad(absl::StrCat("sliding_window ", sliding_window, " must be >= 0"));
  if (!(attn_scale >= 0) || !(embedding_scale >= 0) || !(final_logit_softcap >= 0) || !(local_rope_theta >= 0) ||
      !(attn_logit_softcap >= 0) || !(residual_scale >= 0) || !(logit_scale >= 0) || !std::isfinite(attn_scale) ||
      !std::isfinite(embedding_scale) || !std::isfinite(residual_scale) || !std::isfinite(logit_scale)) {
    return bad(absl::StrCat("attn_scale ", attn_scale, ", embedding_scale ", embedding_scale, ", final_logit_softcap ",
                            final_logit_softcap, ", attn_logit_softcap ", attn_logit_softcap, ", local_rope_theta ",
                            local_rope_theta, ", residual_scale ", residual_scale, " and logit_scale ", logit_scale,
                            " must be finite and >= 0"));
  }
  if (!sliding_layers.empty() && static_cast<int>(sliding_layers.size()) != num_layers) {
    return bad(absl::StrCat("sliding_layers has ", sliding_layers.size(), " entries, want num_layers ", num_layers));
  }
  return absl::OkStatus();
}

int DecoderConfig::LayerWindow(int layer) const {
  if (sliding_window <= 0 || layer < 0 || layer >= static_cast<int>(sliding_layers.size())) return 0;
  return sliding_layers[layer] ? sliding_window : 0;
}

int DecoderConfig::UniformWindow() const {
  for (int l = 0; l < num_layers; ++l)
    if (LayerWindow(l) == 0) return 0;
  return sliding_window;
}

int64_t DecoderConfig::KvBytesPerToken(DType kv_dtype) const {
  return int64_t{2} * num_layers * num_kv_heads * head_dim * static_cast<int64_t>(DTypeSize(kv_dtype));
}

std::string DecoderConfig::DebugString() const {
  return absl::StrCat(architecture, ": hidden ", hidden_size, ", ffn ", intermediate_size, ", layers ", num_layers,
                      ", heads ", num_heads, "/", num_kv_heads, " x ", head_dim, ", vocab ", vocab_size,
                      ", positions ", max_positions,
                      positions == PositionKind::kRope
                          ? absl::StrCat(" (rope theta ", rope_theta, ", dim ", rope_dim, ", ",
                                         RopePairingName(rope_pairing), ", scaling ",
                                         RopeScalingKindName(rope_scaling.kind),
                                         rope_scaling.kind == RopeScalingKind::kLongRope
                                             ? (rope_scaling.use_long ? " (long factors)" : " (short factors)")
                                             : "",
                                         ")")
                          : std::string(" (learned)"),
                      qkv_bias ? ", qkv bias" : "", tie_word_embeddings ? ", tied embeddings" : "",
                      residual_scale > 0 ? absl::StrCat(", residuals x ", residual_scale) : "",
                      logit_scale > 0 ? absl::StrCat(", logits / ", logit_scale) : "",
                      num_experts > 0 ? absl::StrCat(", ", experts_per_token, " of ", num_experts, " experts",
                                                     norm_topk_prob ? " (weights renormalised)" : "")
                                      : "",
                      shared_expert_size > 0 ? absl::StrCat(", a gated shared expert of ", shared_expert_size) : "",
                      SlidingWindowDescription(*this),
                      local_rope_theta > 0 ? absl::StrCat(" (their rope theta ", local_rope_theta, ")") : "");
}

namespace {

// 1 / theta^(2i / dim), in float32 as HF computes it.
std::vector<float> PlainInvFreq(float theta, int rope_dim) {
  std::vector<float> inv(rope_dim / 2);
  for (int i = 0; i < rope_dim / 2; ++i) {
    const float expo = static_cast<float>(2 * i) / static_cast<float>(rope_dim);
    inv[i] = 1.0f / std::pow(theta, expo);
  }
  return inv;
}

// transformers' _compute_yarn_parameters (the correction range in double, the
// frequencies and the ramp in float32, like its python-float / torch mix).
std::vector<float> YarnInvFreq(const DecoderConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  const int dim = c.rope_dim;
  const double base = c.rope_theta;
  const double orig = s.original_max_positions;
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(orig / (rotations * 2.0 * M_PI))) / (2.0 * std::log(base));
  };
  double low = correction_dim(s.beta_fast);
  double high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // HF: prevent a singular ramp
  const float lo = static_cast<float>(low);
  const float span = static_cast<float>(high - low);
  std::vector<float> inv(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const float pos_freq = std::pow(c.rope_theta, static_cast<float>(2 * i) / static_cast<float>(dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (s.factor * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - lo) / span, 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    inv[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return inv;
}

void ApplyFreqFactors(const DecoderConfig& c, std::vector<float>& inv) {
  for (size_t i = 0; i < c.rope_freq_factors.size() && i < inv.size(); ++i) inv[i] /= c.rope_freq_factors[i];
}

}  // namespace

absl::StatusOr<std::vector<float>> RopeInvFreq(const DecoderConfig& c) {
  if (c.positions != PositionKind::kRope) return absl::FailedPreconditionError("model has no rotary embeddings");
  std::vector<float> inv = PlainInvFreq(c.rope_theta, c.rope_dim);
  const RopeScaling& s = c.rope_scaling;
  switch (s.kind) {
    case RopeScalingKind::kNone:
    case RopeScalingKind::kDynamicNtk:  // unscaled up to max_positions
      break;
    case RopeScalingKind::kLinear:
      for (float& f : inv) f /= s.factor;
      break;
    case RopeScalingKind::kLlama3: {
      // transformers' _compute_llama3_parameters.
      const float old_ctx = static_cast<float>(s.original_max_positions);
      const float low_wavelen = old_ctx / s.low_freq_factor;
      const float high_wavelen = old_ctx / s.high_freq_factor;
      for (float& f : inv) {
        const float wavelen = 2.0f * static_cast<float>(M_PI) / f;
        if (wavelen > low_wavelen) {
          f = f / s.factor;
        } else if (wavelen >= high_wavelen) {
          const float smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1.0f - smooth) * f / s.factor + smooth * f;
        }
      }
      break;
    }
    case RopeScalingKind::kYarn:
      inv = YarnInvFreq(c);
      break;
    case RopeScalingKind::kLongRope: {
      // transformers' _compute_longrope_parameters, in float32:
      // 1 / (ext * base^(2i / dim)).
      const std::vector<float>& ext = s.use_long ? s.long_factor : s.short_factor;
      for (size_t i = 0; i < inv.size() && i < ext.size(); ++i) {
        const float expo = static_cast<float>(2 * i) / static_cast<float>(c.rope_dim);
        inv[i] = 1.0f / (ext[i] * std::pow(c.rope_theta, expo));
      }
      break;
    }
  }
  ApplyFreqFactors(c, inv);
  return inv;
}

std::vector<float> RopeInvFreqForLength(const DecoderConfig& c, int seq_len) {
  if (c.rope_scaling.kind != RopeScalingKind::kDynamicNtk || seq_len <= c.max_positions) {
    auto inv = RopeInvFreq(c);
    return inv.ok() ? *std::move(inv) : std::vector<float>();
  }
  // HF (seq_len a tensor): every step in float32.
  const float factor = c.rope_scaling.factor;
  const float dim = static_cast<float>(c.rope_dim);
  const float ratio = factor * static_cast<float>(seq_len) / static_cast<float>(c.max_positions) - (factor - 1.0f);
  const float base = c.rope_theta * std::pow(ratio, dim / (dim - 2.0f));
  std::vector<float> inv = PlainInvFreq(base, c.rope_dim);
  ApplyFreqFactors(c, inv);
  return inv;
}

float RopeAttentionScaling(const DecoderConfig& c) {
  const RopeScalingKind k = c.rope_scaling.kind;
  return c.positions == PositionKind::kRope && (k == RopeScalingKind::kYarn || k == RopeScalingKind::kLongRope)
             ? c.rope_scaling.attn_factor
             : 1.0f;
}

// ---------------------------------------------------------------- GGUF

namespace {

absl::StatusOr<int> GgufPositiveInt(const GgufFile& g, const std::string& key) {
  ASSIGN_OR_RETURN(int64_t v, g.GetInt(key));
  if (v <= 0 || v > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", key, " = ", v, " is out of range"));
  }
  return static_cast<int>(v);
}

absl::StatusOr<int> GgufIntOr(const GgufFile& g, const std::string& key, int def) {
  if (g.Find(key) == nullptr) return def;
  return GgufPositiveInt(g, key);
}

absl::StatusOr<RopeScalingKind> ParseScalingType(const std::string& type, const std::string& where) {
  if (type.empty() || type == "none" || type == "default") return RopeScalingKind::kNone;
  if (type == "linear") return RopeScalingKind::kLinear;
  if (type == "dynamic") return RopeScalingKind::kDynamicNtk;
  if (type == "llama3") return RopeScalingKind::kLlama3;
  if (type == "yarn") return RopeScalingKind::kYarn;
  if (type == "longrope") return RopeScalingKind::kLongRope;
  return absl::InvalidArgumentError(absl::StrCat(where, ": unknown rope scaling type '", type, "'"));
}

// llama.cpp's tokens that end generation ("EOG"), by their text
// (llama-vocab.cpp, llama-cpp-python 0.3.36's llama.cpp): a GGUF names only
// its EOS (and perhaps EOT / EOM) token, so llama.cpp also stops at any
// token spelled as a turn or text end of the families it knows. Its two
// exceptions, for architectures this server refuses (gpt-oss's and
// Solar-Open's <|end|>, Gemma 4's and PLaMo's </s>), are not mirrored.
constexpr std::array<absl::string_view, 22> kLlamaCppEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
};

// The ids that end a GGUF decoder's generation, as llama.cpp's
// special_eog_ids: EOS, EOT, EOM, the fill-in-the-middle pad / repo /
// separator tokens, and every token whose text is one above (Gemma's
// <end_of_turn>, which its GGUFs name nowhere; Qwen's <|endoftext|> beside
// <|im_end|>; Llama-3's <|eom_id|>), as transformers stops at
// generation_config.json's list.
absl::Status ReadGgufEndOfGeneration(const GgufFile& g, DecoderConfig& c) {
  auto add = [&c](int64_t id) {
    if (id >= 0 && id < c.vocab_size &&
        std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(static_cast<int>(id));
    }
  };
  add(c.eos_token_id);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                          "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id",
                          "tokenizer.ggml.fim_sep_token_id"}) {
    ASSIGN_OR_RETURN(int64_t id, g.GetIntOr(key, -1));
    add(id);
  }
  if (g.Find("tokenizer.ggml.tokens") == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, g.GetStringArray("tokenizer.ggml.tokens"));
  for (size_t id = 0; id < tokens->size(); ++id) {
    const std::string& text = (*tokens)[id];
    if (std::find(kLlamaCppEndOfGenerationTexts.begin(), kLlamaCppEndOfGenerationTexts.end(), text) !=
        kLlamaCppEndOfGenerationTexts.end()) {
      add(static_cast<int64_t>(id));
    }
  }
  return absl::OkStatus();
}

// The Gemmas as llama.cpp converts and runs them (convert_hf_to_gguf.py's
// Gemma classes; llama-model.cpp's load_hparams and llm_build_gemma*): the
// file's norm weights already hold transformers' 1 + weight (offset 0 here);
// embeddings times sqrt(hidden); GeGLU. Gemma 2 and 3: sandwich norms, and
// attention scores times 1/sqrt(hidden / heads) for the 27B sizes (46 and 62
// layers), 1/sqrt(head_dim) otherwise, llama.cpp's stand-in for
// query_pre_attn_scalar, which the converter does not write. Gemma 2:
// windows on the even layers (4096 keys unless attention.sliding_window
// says), attention scores and logits capped (50 and 30 unless the file
// says). Gemma 3: windows on every layer but each sixth (5, 11, ...), none
// without attention.sliding_window; those layers rotate with
// rope.freq_base_swa (10,000: llama.cpp hard-codes it and the converter
// writes transformers' rope_local_base_freq) and no scaling; q/k norms; a
// logit cap only where the file has one.
absl::Status ReadGgufGemma(const GgufFile& g, DecoderConfig& c) {
  const std::string& a = c.architecture;
  const std::string p = a + ".";
  c.mlp = MlpKind::kGeGlu;
  c.norm_weight_offset = 0.0f;
  c.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
  if (a == "gemma") return absl::OkStatus();
  c.sandwich_norms = true;
  const bool size_27b = (a == "gemma2" && c.num_layers == 46) || (a == "gemma3" && c.num_layers == 62);
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(size_27b ? static_cast<double>(c.hidden_size / c.num_heads)
                                                             : static_cast<double>(c.head_dim)));
  const int period = a == "gemma2" ? 2 : 6;
  std::vector<bool> sliding(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) sliding[l] = l % period < period - 1;
  if (a == "gemma2" || g.Find(p + "attention.sliding_window") != nullptr) {
    ASSIGN_OR_RETURN(c.sliding_window, GgufIntOr(g, p + "attention.sliding_window", 4096));
    c.sliding_layers = std::move(sliding);
  }
  ASSIGN_OR_RETURN(double final_cap, g.GetFloatOr(p + "final_logit_softcapping", a == "gemma2" ? 30.0 : 0.0));
  c.final_logit_softcap = static_cast<float>(final_cap);
  if (a == "gemma2") {
    ASSIGN_OR_RETURN(double attn_cap, g.GetFloatOr(p + "attn_logit_softcapping", 50.0));
    c.attn_logit_softcap = static_cast<float>(attn_cap);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(double local_theta, g.GetFloatOr(p + "rope.freq_base_swa", 10000.0));
  c.local_rope_theta = static_cast<float>(local_theta);
  return absl::OkStatus();
}

// Phi-3's longrope as llama.cpp's converter writes it (Phi3MiniModel):
// rope_factors_short / rope_factors_long.weight, rope.scaling.attn_factor
// and rope.scaling.original_context_length; no rope.scaling.type. A file
// without the factor tensors (Phi-3-mini-4k) has plain rope.
// attention.sliding_window is read by nobody: llama.cpp runs phi3 without
// windows ("Phi SWA is currently disabled"), and so do we, to give its
// outputs.
absl::Status ReadGgufPhi3LongRope(const GgufFile& g, DecoderConfig& c) {
  const std::string p = c.architecture + ".";
  const bool has_short = g.FindTensor("rope_factors_short.weight") != nullptr;
  const bool has_long = g.FindTensor("rope_factors_long.weight") != nullptr;
  if (!has_short && !has_long) {
    if (c.rope_scaling.kind == RopeScalingKind::kLongRope) {
      return absl::InvalidArgumentError(absl::StrCat(
          g.where(), ": rope.scaling.type longrope without rope_factors_short.weight / rope_factors_long.weight"));
    }
    return absl::OkStatus();
  }
  if (!has_short || !has_long) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tensor '",
                                                   has_short ? "rope_factors_long.weight" : "rope_factors_short.weight",
                                                   "' is missing (longrope needs both factor lists)"));
  }
  RopeScaling& s = c.rope_scaling;
  s.kind = RopeScalingKind::kLongRope;
  for (auto [name, list] : {std::pair{"rope_factors_short.weight", &s.short_factor},
                            std::pair{"rope_factors_long.weight", &s.long_factor}}) {
    ASSIGN_OR_RETURN(Tensor t, g.LoadTensorWithShape(name, {c.rope_dim / 2}, DType::kF32));
    list->assign(t.f32(), t.f32() + t.numel());
  }
  ASSIGN_OR_RETURN(double attn, g.GetFloatOr(p + "rope.scaling.attn_factor", 1.0));
  s.attn_factor = static_cast<float>(attn);
  s.factor = static_cast<float>(c.max_positions) / static_cast<float>(s.original_max_positions);
  return absl::OkStatus();
}

// Granite's scales as llama.cpp's converter writes them: logit_scale
// (required by llama.cpp), residual_scale, embedding_scale and
// attention.scale (0 or absent: llama.cpp's defaults, no scaling and
// 1/sqrt(head_dim)).
absl::Status ReadGgufGraniteScales(const GgufFile& g, DecoderConfig& c) {
  const std::string p = c.architecture + ".";
  ASSIGN_OR_RETURN(double logit, g.GetFloatOr(p + "logit_scale", 0.0));
  if (!(logit > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", p, "logit_scale must be > 0 (got ", logit, ")"));
  }
  ASSIGN_OR_RETURN(double residual, g.GetFloatOr(p + "residual_scale", 0.0));
  ASSIGN_OR_RETURN(double embedding, g.GetFloatOr(p + "embedding_scale", 0.0));
  ASSIGN_OR_RETURN(double attention, g.GetFloatOr(p + "attention.scale", 0.0));
  c.logit_scale = static_cast<float>(logit);
  c.residual_scale = static_cast<float>(residual);
  c.embedding_scale = static_cast<float>(embedding);
  c.attn_scale = static_cast<float>(attention);
  return absl::OkStatus();
}

// A mixture of experts as llama.cpp describes one: *.expert_count experts
// (Mixtral is architecture "llama" with experts; qwen2moe, qwen3moe,
// granitemoe and olmoe always have them), *.expert_used_count per token, each
// of *.expert_feed_forward_length (qwen2moe, qwen3moe; llama.cpp falls back
// to feed_forward_length / expert_used_count) or feed_forward_length (llama,
// granitemoe, olmoe). llama.cpp renormalises the chosen experts' weights
// (build_moe_ffn's norm_w) for llama, qwen3moe and granitemoe, as Mixtral,
// Granite MoE and every published Qwen3-MoE do, and not for qwen2moe and
// olmoe (their models' norm_topk_prob is false). qwen2moe's shared expert is
// expert_shared_feed_forward_length wide (llama.cpp: feed_forward_length
// without it); another architecture's shared expert is refused.
absl::Status ReadGgufExperts(const GgufFile& g, DecoderConfig& c) {
  const std::string p = c.architecture + ".";
  ASSIGN_OR_RETURN(c.num_experts, GgufIntOr(g, p + "expert_count", 0));
  const bool qwen2moe = c.architecture == "qwen2moe";
  const bool always = c.architecture == "qwen3moe" || c.architecture == "granitemoe" || c.architecture == "olmoe" ||
                      qwen2moe;
  if (c.num_experts <= 0) {
    c.num_experts = 0;
    if (always) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", c.architecture, " needs ", p,
                                                     "expert_count > 0"));
    }
    return absl::OkStatus();
  }
  if (c.architecture != "llama" && !always) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", p,
                                                   "expert_count: experts are supported for llama (Mixtral), "
                                                   "qwen2moe, qwen3moe, granitemoe and olmoe, not ", c.architecture));
  }
  ASSIGN_OR_RETURN(int shared,
                   GgufIntOr(g, p + "expert_shared_feed_forward_length", qwen2moe ? c.intermediate_size : 0));
  if (qwen2moe) {
    c.shared_expert_size = shared;
  } else if (shared > 0) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", p, "expert_shared_feed_forward_length ", shared,
                                                   ": a shared expert (Granite MoE Shared) is not supported"));
  }
  ASSIGN_OR_RETURN(c.experts_per_token, GgufPositiveInt(g, p + "expert_used_count"));
  if (c.architecture == "qwen3moe" || qwen2moe) {
    ASSIGN_OR_RETURN(c.intermediate_size, GgufIntOr(g, p + "expert_feed_forward_length",
                                                    c.intermediate_size / c.experts_per_token));
  }
  // llama.cpp's qwen2moe graph does not renormalise (Qwen1.5-MoE's and
  // Qwen2-57B-A14B's norm_topk_prob false); its other mixtures do.
  c.norm_topk_prob = !qwen2moe && c.architecture != "olmoe";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DecoderConfig> DecoderConfigFromGguf(const GgufFile& g) {
  DecoderConfig c;
  ASSIGN_OR_RETURN(c.architecture, g.GetString("general.architecture"));
  ASSIGN_OR_RETURN(c.name, g.GetStringOr("general.name", ""));
  const std::string& a = c.architecture;
  const bool gemma = a == "gemma" || a == "gemma2" || a == "gemma3";
  const bool granite = a == "granite" || a == "granitemoe";
  const bool olmo = a == "olmo2" || a == "olmoe";
  if (a == "llama" || a == "mistral" || a == "qwen2" || a == "qwen2moe" || a == "qwen3" || a == "qwen3moe" ||
      a == "phi3" || a == "smollm3" || gemma || granite || olmo) {
    c.arch = DecoderArch::kLlama;
  } else if (a == "gpt2") {
    c.arch = DecoderArch::kGpt2;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        g.where(), ": general.architecture '", a,
        "' is not supported (llama, mistral, qwen2, qwen2moe, qwen3, qwen3moe, phi3, smollm3, granite, granitemoe, "
        "olmo2, olmoe, gemma, gemma2, gemma3, gpt2)"));
  }
  const std::string p = a + ".";
  ASSIGN_OR_RETURN(c.num_layers, GgufPositiveInt(g, p + "block_count"));
  ASSIGN_OR_RETURN(c.hidden_size, GgufPositiveInt(g, p + "embedding_length"));
  ASSIGN_OR_RETURN(c.intermediate_size, GgufPositiveInt(g, p + "feed_forward_length"));
  RETURN_IF_ERROR(ReadGgufExperts(g, c));
  ASSIGN_OR_RETURN(c.num_heads, GgufPositiveInt(g, p + "attention.head_count"));
  ASSIGN_OR_RETURN(c.num_kv_heads, GgufIntOr(g, p + "attention.head_count_kv", c.num_heads));
  ASSIGN_OR_RETURN(c.max_positions, GgufPositiveInt(g, p + "context_length"));
  c.trained_max_positions = c.max_positions;
  ASSIGN_OR_RETURN(c.head_dim, GgufIntOr(g, p + "attention.key_length", c.hidden_size / c.num_heads));

  // vocab: explicit key, else the token list, else the embedding rows.
  const GgufTensorInfo* emb = g.FindTensor("token_embd.weight");
  if (emb == nullptr || emb->shape.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tensor 'token_embd.weight' is missing or not 2-D"));
  }
  c.vocab_size = static_cast<int>(emb->shape[0]);
  if (g.Find(p + "vocab_size") != nullptr) {
    ASSIGN_OR_RETURN(int v, GgufPositiveInt(g, p + "vocab_size"));
    if (v != c.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", p, "vocab_size ", v,
                                                     " disagrees with token_embd.weight rows ", c.vocab_size));
    }
  }
  c.tie_word_embeddings = g.FindTensor("output.weight") == nullptr;

  ASSIGN_OR_RETURN(int64_t bos, g.GetIntOr("tokenizer.ggml.bos_token_id", -1));
  ASSIGN_OR_RETURN(int64_t eos, g.GetIntOr("tokenizer.ggml.eos_token_id", -1));
  c.bos_token_id = bos >= 0 && bos < c.vocab_size ? static_cast<int>(bos) : -1;
  c.eos_token_id = eos >= 0 && eos < c.vocab_size ? static_cast<int>(eos) : -1;
  RETURN_IF_ERROR(ReadGgufEndOfGeneration(g, c));

  if (c.arch == DecoderArch::kGpt2) {
    c.norm = NormKind::kLayerNorm;
    c.norm_bias = true;
    c.mlp = MlpKind::kGeluTanh;
    c.positions = PositionKind::kLearned;
    c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
    ASSIGN_OR_RETURN(double eps, g.GetFloatOr(p + "attention.layer_norm_epsilon", 1e-5));
    c.norm_eps = static_cast<float>(eps);
  } else {
    ASSIGN_OR_RETURN(double eps, g.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
    c.norm_eps = static_cast<float>(eps);
    ASSIGN_OR_RETURN(double theta, g.GetFloatOr(p + "rope.freq_base", 10000.0));
    c.rope_theta = static_cast<float>(theta);
    ASSIGN_OR_RETURN(c.rope_dim, GgufIntOr(g, p + "rope.dimension_count", c.head_dim));
    // See the header: llama.cpp permutes Q/K of `llama` so adjacent pairs apply;
    // qwen2, qwen3 and the Gemmas are converted unpermuted and run with NEOX
    // (half-split) rope.
    c.rope_pairing =
        a == "llama" || a == "mistral" || a == "smollm3" || granite ? RopePairing::kAdjacent : RopePairing::kHalfSplit;
    c.qk_norm = a == "qwen3" || a == "qwen3moe" || a == "gemma3";
    ASSIGN_OR_RETURN(std::string scaling, g.GetStringOr(p + "rope.scaling.type", ""));
    ASSIGN_OR_RETURN(c.rope_scaling.kind, ParseScalingType(scaling, g.where()));
    ASSIGN_OR_RETURN(double factor, g.GetFloatOr(p + "rope.scaling.factor", 1.0));
    c.rope_scaling.factor = static_cast<float>(factor);
    ASSIGN_OR_RETURN(c.rope_scaling.original_max_positions,
                     GgufIntOr(g, p + "rope.scaling.original_context_length", c.max_positions));
    if (c.rope_scaling.kind == RopeScalingKind::kNone) c.rope_scaling.factor = 1.0f;
    if (c.rope_scaling.kind == RopeScalingKind::kYarn) {
      // llama.cpp's defaults, which equal HF's without mscale keys.
      RopeScaling& s = c.rope_scaling;
      ASSIGN_OR_RETURN(double bf, g.GetFloatOr(p + "rope.scaling.yarn_beta_fast", 32.0));
      ASSIGN_OR_RETURN(double bs, g.GetFloatOr(p + "rope.scaling.yarn_beta_slow", 1.0));
      s.beta_fast = static_cast<float>(bf);
      s.beta_slow = static_cast<float>(bs);
      s.attn_factor = s.factor > 1.0f ? 0.1f * std::log(s.factor) + 1.0f : 1.0f;
    }
    if (g.FindTensor("rope_freqs.weight") != nullptr) {
      ASSIGN_OR_RETURN(Tensor f, g.LoadTensorWithShape("rope_freqs.weight", {c.rope_dim / 2}, DType::kF32));
      c.rope_freq_factors.assign(f.f32(), f.f32() + f.numel());
    }
    c.qkv_bias = g.FindTensor("blk.0.attn_q.bias") != nullptr;
    c.attn_out_bias = g.FindTensor("blk.0.attn_output.bias") != nullptr;
    if (gemma) RETURN_IF_ERROR(ReadGgufGemma(g, c));
    if (a == "phi3") RETURN_IF_ERROR(ReadGgufPhi3LongRope(g, c));
    if (granite) RETURN_IF_ERROR(ReadGgufGraniteScales(g, c));
    if (a == "smollm3") {
      // llama.cpp's smollm3: every 4th layer without rope (its fixed
      // n_no_rope_layer_step, SmolLM3Config's default interval).
      for (int l = 0; l < c.num_layers; ++l) c.rope_layers.push_back((l + 1) % 4 != 0);
    }
    if (olmo) {
      // llama.cpp's olmo2 / olmoe: q/k norms over the whole projections;
      // OLMo 2 has only the norms after attention and the MLP.
      c.qk_norm_whole = true;
      if (a == "olmo2") {
        c.pre_norms = false;
        c.sandwich_norms = true;
        if (g.Find(p + "attention.sliding_window") != nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", p,
                                                         "attention.sliding_window (OLMo 3's windows) is not supported"));
        }
      }
    }
  }
  if (c.name.empty()) c.name = a;
  RETURN_IF_ERROR(c.Validate());
  return c;
}

// ---------------------------------------------------------------- HF

namespace {

absl::Status ReadHfRope(const HfConfig& hf, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  // transformers >= 5 writes rope_parameters {rope_theta, rope_type, ...};
  // older files write rope_theta and rope_scaling {type|rope_type, ...}.
  const nlohmann::json* params = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) params = &j["rope_parameters"];
  else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) params = &j["rope_scaling"];
  // MixtralConfig's default_theta is 1e6; every other family's 10000.
  ASSIGN_OR_RETURN(double theta, hf.DoubleOr("rope_theta", c.architecture == "mixtral" ? 1e6 : 10000.0));
  c.rope_theta = static_cast<float>(theta);
  if (params == nullptr) return absl::OkStatus();
  auto num = [&](const char* key, double def) -> absl::StatusOr<double> {
    if (!params->contains(key) || (*params)[key].is_null()) return def;
    if (!(*params)[key].is_number()) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": rope parameter '", key, "' must be a number"));
    }
    return (*params)[key].get<double>();
  };
  ASSIGN_OR_RETURN(double t2, num("rope_theta", c.rope_theta));
  c.rope_theta = static_cast<float>(t2);
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (params->contains(key) && (*params)[key].is_string()) {
      type = (*params)[key].get<std::string>();
      break;
    }
  }
  ASSIGN_OR_RETURN(c.rope_scaling.kind, ParseScalingType(type, hf.path()));
  RopeScaling& s = c.rope_scaling;
  ASSIGN_OR_RETURN(double factor, num("factor", 1.0));
  ASSIGN_OR_RETURN(double orig, num("original_max_position_embeddings", c.max_positions));
  // HF standardize_rope_params: a top-level original_max_position_embeddings wins.
  ASSIGN_OR_RETURN(orig, hf.DoubleOr("original_max_position_embeddings", orig));
  ASSIGN_OR_RETURN(double low, num("low_freq_factor", 1.0));
  ASSIGN_OR_RETURN(double high, num("high_freq_factor", 4.0));
  ASSIGN_OR_RETURN(double bf, num("beta_fast", 32.0));
  ASSIGN_OR_RETURN(double bs, num("beta_slow", 1.0));
  if (bf == 0) bf = 32.0;  // HF: `get("beta_fast") or 32`
  if (bs == 0) bs = 1.0;
  s.factor = static_cast<float>(factor);
  s.original_max_positions = static_cast<int>(orig);
  if (s.kind == RopeScalingKind::kYarn) {
    // HF _compute_yarn_parameters: no factor -> max_position_embeddings /
    // original; no attention_factor -> from mscale / mscale_all_dim or factor.
    if (!params->contains("factor") || (*params)["factor"].is_null()) {
      factor = static_cast<double>(c.max_positions) / orig;
      s.factor = static_cast<float>(factor);
    }
    auto get_mscale = [](double scale, double mscale) {
      return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
    };
    ASSIGN_OR_RETURN(double mscale, num("mscale", 0.0));
    ASSIGN_OR_RETURN(double mscale_all_dim, num("mscale_all_dim", 0.0));
    double af = get_mscale(factor, 1.0);
    if (mscale != 0 && mscale_all_dim != 0) af = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim);
    ASSIGN_OR_RETURN(af, num("attention_factor", af));
    s.attn_factor = static_cast<float>(af);
    if (params->contains("truncate") && (*params)["truncate"].is_boolean()) {
      s.truncate = (*params)["truncate"].get<bool>();
    }
  }
  s.low_freq_factor = static_cast<float>(low);
  s.high_freq_factor = static_cast<float>(high);
  s.beta_fast = static_cast<float>(bf);
  s.beta_slow = static_cast<float>(bs);
  if (s.kind == RopeScalingKind::kNone) s.factor = 1.0f;
  return absl::OkStatus();
}

// The body's sizes, as every Llama-like config.json names them;
// head_dim defaults to hidden / heads (0) or to `head_dim_default`.
absl::Status ReadHfBodySizes(const HfConfig& hf, int64_t head_dim_default, int64_t positions_default,
                             double eps_default, DecoderConfig& c) {
  constexpr int64_t kMax = int64_t{1} << 30;
  ASSIGN_OR_RETURN(int64_t hidden, hf.Int("hidden_size", 1, kMax));
  ASSIGN_OR_RETURN(int64_t layers, hf.Int("num_hidden_layers", 1, kMax));
  ASSIGN_OR_RETURN(int64_t heads, hf.Int("num_attention_heads", 1, kMax));
  ASSIGN_OR_RETURN(int64_t kv_heads, hf.IntOr("num_key_value_heads", heads, 1, kMax));
  ASSIGN_OR_RETURN(int64_t head_dim, hf.IntOr("head_dim", head_dim_default > 0 ? head_dim_default : hidden / heads,
                                              1, kMax));
  ASSIGN_OR_RETURN(int64_t inter, hf.Int("intermediate_size", 1, kMax));
  ASSIGN_OR_RETURN(int64_t vocab, hf.Int("vocab_size", 1, kMax));
  ASSIGN_OR_RETURN(int64_t positions, hf.IntOr("max_position_embeddings", positions_default, 1, kMax));
  ASSIGN_OR_RETURN(double eps, hf.DoubleOr("rms_norm_eps", eps_default));
  c.hidden_size = static_cast<int>(hidden);
  c.num_layers = static_cast<int>(layers);
  c.num_heads = static_cast<int>(heads);
  c.num_kv_heads = static_cast<int>(kv_heads);
  c.head_dim = static_cast<int>(head_dim);
  c.intermediate_size = static_cast<int>(inter);
  c.vocab_size = static_cast<int>(vocab);
  c.max_positions = c.trained_max_positions = static_cast<int>(positions);
  c.norm_eps = static_cast<float>(eps);
  c.rope_dim = c.head_dim;
  c.rope_pairing = RopePairing::kHalfSplit;
  return absl::OkStatus();
}

// ReadHfBodySizes for a Llama-like SwiGLU body: hidden_act must be silu,
// embeddings untied unless tie_word_embeddings.
absl::Status ReadHfSiluBody(const HfConfig& hf, int64_t positions_default, double eps_default, DecoderConfig& c) {
  RETURN_IF_ERROR(ReadHfBodySizes(hf, 0, positions_default, eps_default, c));
  ASSIGN_OR_RETURN(std::string act, hf.StringOr("hidden_act", "silu"));
  if (act != "silu") {
    return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": hidden_act '", act, "' is not supported (silu)"));
  }
  ASSIGN_OR_RETURN(c.tie_word_embeddings, hf.BoolOr("tie_word_embeddings", false));
  return absl::OkStatus();
}

// LlamaConfig's attention_bias: biases on q, k, v and o alike.
absl::Status ReadHfAttentionBias(const HfConfig& hf, DecoderConfig& c) {
  ASSIGN_OR_RETURN(bool attention_bias, hf.BoolOr("attention_bias", false));
  c.qkv_bias = c.attn_out_bias = attention_bias;
  return absl::OkStatus();
}

// layer_types (transformers 5 writes it for every model that has windows):
// true for "sliding_attention", false for "full_attention"; nullopt when the
// file has none.
absl::StatusOr<std::optional<std::vector<bool>>> ReadLayerTypes(const HfConfig& hf, int num_layers) {
  const nlohmann::json& j = hf.json();
  const auto it = j.find("layer_types");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_array() || static_cast<int>(it->size()) != num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": layer_types must be an array of num_hidden_layers (",
                                                   num_layers, ") strings"));
  }
  std::vector<bool> sliding(num_layers, false);
  for (int l = 0; l < num_layers; ++l) {
    const nlohmann::json& e = (*it)[l];
    const std::string kind = e.is_string() ? e.get<std::string>() : e.dump();
    if (kind != "full_attention" && kind != "sliding_attention") {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": layer_types[", l, "] = ", kind,
                                                     " is not supported (full_attention, sliding_attention)"));
    }
    sliding[l] = kind == "sliding_attention";
  }
  return sliding;
}

// Sliding-window attention as transformers 5.24 configures it. Mistral: a
// missing "sliding_window" means MistralConfig's default 4096, null means
// none, and it applies to every layer. Qwen2 / Qwen3: only with
// use_sliding_window true; the layers are layer_types' "sliding_attention"
// entries, or (no layer_types) those at or after max_window_layers.
absl::Status ReadHfSlidingWindow(const HfConfig& hf, const std::string& type, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  if (type == "mistral") {
    const auto it = j.find("sliding_window");
    if (it != j.end() && it->is_null()) return absl::OkStatus();
    ASSIGN_OR_RETURN(int64_t window, hf.IntOr("sliding_window", 4096, 1, int64_t{1} << 30));
    c.sliding_window = static_cast<int>(window);
    c.sliding_layers.assign(c.num_layers, true);
    return absl::OkStatus();
  }
  if (type != "qwen2" && type != "qwen3") return absl::OkStatus();
  ASSIGN_OR_RETURN(bool enabled, hf.BoolOr("use_sliding_window", false));
  ASSIGN_OR_RETURN(std::optional<std::vector<bool>> listed, ReadLayerTypes(hf, c.num_layers));
  std::vector<bool> layers(c.num_layers, false);
  if (listed.has_value()) {
    layers = *std::move(listed);
  } else if (enabled) {
    ASSIGN_OR_RETURN(int64_t first, hf.IntOr("max_window_layers", 28, 0, int64_t{1} << 20));
    for (int l = 0; l < c.num_layers; ++l) layers[l] = l >= first;
  }
  const bool any = std::find(layers.begin(), layers.end(), true) != layers.end();
  if (!any) return absl::OkStatus();
  const auto window_it = j.find("sliding_window");
  const bool no_window = window_it != j.end() && window_it->is_null();
  if (!enabled || no_window) {
    // transformers cannot run this either ("Could not find a sliding_window").
    return absl::InvalidArgumentError(absl::StrCat(
        hf.path(), ": layer_types names sliding_attention layers but ",
        enabled ? "sliding_window is null" : "use_sliding_window is false", ": set both or neither"));
  }
  ASSIGN_OR_RETURN(int64_t window, hf.IntOr("sliding_window", 4096, 1, int64_t{1} << 30));
  c.sliding_window = static_cast<int>(window);
  c.sliding_layers = std::move(layers);
  return absl::OkStatus();
}

// Qwen2-MoE's and SmolLM3's windows: the layers layer_types names
// (transformers writes it), as Qwen2's; use_sliding_window without
// layer_types is refused (those configs' own patterns of windowed layers,
// which differ from Qwen2's max_window_layers, are not read).
absl::Status ReadHfListedWindows(const HfConfig& hf, DecoderConfig& c) {
  ASSIGN_OR_RETURN(bool enabled, hf.BoolOr("use_sliding_window", false));
  if (enabled && !hf.json().contains("layer_types")) {
    return absl::InvalidArgumentError(
        absl::StrCat(hf.path(), ": use_sliding_window without layer_types is not supported"));
  }
  return ReadHfSlidingWindow(hf, "qwen2", c);
}

// Mixtral, Qwen2-MoE and Qwen3-MoE as transformers 5.24 defines them:
// Llama's attention (Qwen2-MoE with Qwen2's q/k/v biases; Qwen3-MoE with
// Qwen3's per-head q/k norms and its attention_bias), every layer's MLP a mixture of SwiGLU experts
// (num_experts, or num_local_experts as transformers 5 writes it;
// num_experts_per_tok; Qwen3-MoE's experts are moe_intermediate_size wide,
// Mixtral's intermediate_size; Qwen2-MoE's shared expert
// shared_expert_intermediate_size). Mixtral always renormalises the chosen
// experts' weights, the Qwens when norm_topk_prob (default false). A window
// applies to every layer: Mixtral's sliding_window (default none),
// Qwen3-MoE's when use_sliding_window (Qwen2-MoE's: its layer_types). The
// Qwens' dense layers (mlp_only_layers, decoder_sparse_step > 1) are
// refused: no published checkpoint has them.
absl::Status ReadHfMixtureOfExperts(const HfConfig& hf, DecoderConfig& c) {
  const std::string& t = c.architecture;
  const nlohmann::json& j = hf.json();
  constexpr int64_t kMax = int64_t{1} << 30;
  const bool qwen2 = t == "qwen2_moe";
  const bool qwen = t == "qwen3_moe" || qwen2;
  RETURN_IF_ERROR(ReadHfSiluBody(hf, qwen ? 32768 : 131072, qwen ? 1e-6 : 1e-5, c));
  const char* experts_key = j.contains("num_experts") ? "num_experts" : "num_local_experts";
  ASSIGN_OR_RETURN(int64_t experts, hf.IntOr(experts_key, qwen2 ? 60 : qwen ? 128 : 8, 1, kMax));
  ASSIGN_OR_RETURN(int64_t per_token, hf.IntOr("num_experts_per_tok", qwen2 ? 4 : qwen ? 8 : 2, 1, experts));
  c.num_experts = static_cast<int>(experts);
  c.experts_per_token = static_cast<int>(per_token);
  if (qwen) {
    ASSIGN_OR_RETURN(int64_t expert_size, hf.IntOr("moe_intermediate_size", qwen2 ? 1408 : 768, 1, kMax));
    c.intermediate_size = static_cast<int>(expert_size);
    ASSIGN_OR_RETURN(c.norm_topk_prob, hf.BoolOr("norm_topk_prob", false));
    ASSIGN_OR_RETURN(int64_t step, hf.IntOr("decoder_sparse_step", 1, 1, kMax));
    const auto dense = j.find("mlp_only_layers");
    if (step != 1 || (dense != j.end() && !dense->is_null() && !(dense->is_array() && dense->empty()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          hf.path(), ": mlp_only_layers / decoder_sparse_step ", step,
          " make some layers dense: only models whose every layer is a mixture of experts are supported"));
    }
    if (qwen2) {
      // Qwen2-MoE: Qwen2's attention (q/k/v biased, o not), a shared
      // expert gated by a sigmoid.
      ASSIGN_OR_RETURN(c.qkv_bias, hf.BoolOr("qkv_bias", true));
      ASSIGN_OR_RETURN(int64_t shared, hf.IntOr("shared_expert_intermediate_size", 5632, 1, kMax));
      c.shared_expert_size = static_cast<int>(shared);
    } else {
      RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
      c.qk_norm = true;
    }
  } else {
    c.norm_topk_prob = true;
  }
  RETURN_IF_ERROR(ReadHfRope(hf, c));
  if (qwen2) return ReadHfListedWindows(hf, c);
  ASSIGN_OR_RETURN(bool windowed, hf.BoolOr("use_sliding_window", !qwen));
  const auto window = j.find("sliding_window");
  if (windowed && window != j.end() && !window->is_null()) {
    ASSIGN_OR_RETURN(int64_t w, hf.Int("sliding_window", 1, kMax));
    c.sliding_window = static_cast<int>(w);
    c.sliding_layers.assign(c.num_layers, true);
  }
  return absl::OkStatus();
}

// SmolLM3 (smollm3) as transformers 5.24 defines it: Llama's layers,
// embeddings tied by default, and layers without rope: no_rope_layers (1:
// rotate, 0: not, one per layer) or, without it, every
// no_rope_layer_interval-th layer (default 4) left unrotated. With
// use_sliding_window, the layers layer_types names attend over
// sliding_window keys.
absl::Status ReadHfSmolLM3(const HfConfig& hf, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  RETURN_IF_ERROR(ReadHfSiluBody(hf, 32768, 1e-6, c));
  ASSIGN_OR_RETURN(c.tie_word_embeddings, hf.BoolOr("tie_word_embeddings", true));
  RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
  ASSIGN_OR_RETURN(c.mlp_bias, hf.BoolOr("mlp_bias", false));
  const auto listed = j.find("no_rope_layers");
  if (listed != j.end() && !listed->is_null()) {
    if (!listed->is_array() || static_cast<int>(listed->size()) != c.num_layers) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": no_rope_layers must be a list of num_hidden_layers (",
                                                     c.num_layers, ") 0 / 1 entries"));
    }
    for (const nlohmann::json& e : *listed) {
      if (!e.is_number_integer() || (e.get<int64_t>() != 0 && e.get<int64_t>() != 1)) {
        return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": no_rope_layers entries must be 0 or 1"));
      }
      c.rope_layers.push_back(e.get<int64_t>() == 1);
    }
  } else {
    ASSIGN_OR_RETURN(int64_t interval, hf.IntOr("no_rope_layer_interval", 4, 1, int64_t{1} << 20));
    for (int l = 0; l < c.num_layers; ++l) c.rope_layers.push_back((l + 1) % interval != 0);
  }
  RETURN_IF_ERROR(ReadHfRope(hf, c));
  return ReadHfListedWindows(hf, c);
}

// OLMo 2 (olmo2) and OLMoE (olmoe) as transformers 5.24 defines them:
// Llama's layers with q and k RMS-normalised over their whole projections
// before rope (OLMoE's q_norm is hidden_size wide, so its heads must fill
// it). OLMo 2 has no norm before attention and the MLP, a norm after each
// (post_attention_layernorm, post_feedforward_layernorm) before its
// residual add. OLMoE: pre-norms, num_experts experts of intermediate_size,
// num_experts_per_tok per token, renormalised when norm_topk_prob (default
// false), q, k and v clamped to clip_qkv when set.
absl::Status ReadHfOlmo(const HfConfig& hf, DecoderConfig& c) {
  constexpr int64_t kMax = int64_t{1} << 30;
  const bool moe = c.architecture == "olmoe";
  RETURN_IF_ERROR(ReadHfSiluBody(hf, moe ? 4096 : 2048, 1e-5, c));
  RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
  c.qk_norm_whole = true;
  if (moe) {
    if (int64_t{c.num_heads} * c.head_dim != c.hidden_size) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": OLMoE's q_norm is hidden_size (", c.hidden_size,
                                                     ") wide: num_attention_heads x head_dim must equal it"));
    }
    ASSIGN_OR_RETURN(int64_t experts, hf.IntOr("num_experts", 64, 1, kMax));
    ASSIGN_OR_RETURN(int64_t per_token, hf.IntOr("num_experts_per_tok", 8, 1, experts));
    c.num_experts = static_cast<int>(experts);
    c.experts_per_token = static_cast<int>(per_token);
    ASSIGN_OR_RETURN(c.norm_topk_prob, hf.BoolOr("norm_topk_prob", false));
    if (hf.json().contains("clip_qkv") && !hf.json()["clip_qkv"].is_null()) {
      ASSIGN_OR_RETURN(double clip, hf.DoubleOr("clip_qkv", 0.0));
      if (!(clip > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": clip_qkv must be > 0 or null (got ", clip, ")"));
      }
      c.clip_qkv = static_cast<float>(clip);
    }
  } else {
    c.pre_norms = false;
    c.sandwich_norms = true;
  }
  return ReadHfRope(hf, c);
}

// Granite 3 (granite) and Granite MoE (granitemoe) as transformers 5.24
// defines them: Llama's layers (attention_bias, mlp_bias) with four
// multipliers: the embeddings times embedding_multiplier (the tied LM head
// not), attention scores times attention_multiplier (instead of
// 1/sqrt(head_dim)), each sub-layer's output times residual_multiplier
// before its residual add, the logits divided by logits_scaling. Granite
// MoE: every layer's MLP num_local_experts experts of intermediate_size,
// num_experts_per_tok per token, the softmax over the chosen ones' logits
// (the renormalised top-k).
absl::Status ReadHfGranite(const HfConfig& hf, DecoderConfig& c) {
  constexpr int64_t kMax = int64_t{1} << 30;
  RETURN_IF_ERROR(ReadHfSiluBody(hf, 2048, 1e-6, c));
  RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
  ASSIGN_OR_RETURN(c.mlp_bias, hf.BoolOr("mlp_bias", false));
  struct Multiplier {
    const char* key;
    float* field;
  };
  for (auto [key, field] : {Multiplier{"embedding_multiplier", &c.embedding_scale},
                            Multiplier{"attention_multiplier", &c.attn_scale},
                            Multiplier{"residual_multiplier", &c.residual_scale},
                            Multiplier{"logits_scaling", &c.logit_scale}}) {
    ASSIGN_OR_RETURN(double v, hf.DoubleOr(key, 1.0));
    if (!(v > 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": ", key, " must be a positive number (got ", v, ")"));
    }
    *field = static_cast<float>(v);
  }
  if (c.architecture == "granitemoe") {
    if (c.mlp_bias) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": mlp_bias with experts is not supported"));
    }
    ASSIGN_OR_RETURN(int64_t experts, hf.IntOr("num_local_experts", 8, 1, kMax));
    ASSIGN_OR_RETURN(int64_t per_token, hf.IntOr("num_experts_per_tok", 2, 1, experts));
    c.num_experts = static_cast<int>(experts);
    c.experts_per_token = static_cast<int>(per_token);
    c.norm_topk_prob = true;
  }
  return ReadHfRope(hf, c);
}

// Phi-3 / Phi-3.5 as transformers 5.24 defines them (modular_phi3.py,
// configuration_phi3.py): Llama's layers with q, k, v fused into qkv_proj
// ([q; k; v] rows) and gate, up into gate_up_proj ([gate; up]), no biases,
// silu, rms_norm_eps 1e-5 and 4096 positions by default, untied embeddings
// by default, partial_rotary_factor (rope parameters or top level), a window
// on every layer when sliding_window is set (Phi-3-mini-4k: 2047), and
// longrope ("su" and "yarn" are read as longrope, as Phi3Config does).
absl::Status ReadHfPhi3(const HfConfig& hf, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  RETURN_IF_ERROR(ReadHfSiluBody(hf, 4096, 1e-5, c));
  // transformers >= 5 writes rope_parameters; older files rope_scaling.
  const nlohmann::json* params = nullptr;
  std::string where = "rope_parameters";
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    params = &j["rope_parameters"];
  } else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    params = &j["rope_scaling"];
    where = "rope_scaling";
  }
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& rp = params != nullptr ? *params : empty;
  auto number = [&](const char* key, double def) -> absl::StatusOr<double> {
    if (rp.contains(key) && !rp[key].is_null()) {
      if (!rp[key].is_number()) {
        return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": ", where, ".", key, " must be a number"));
      }
      return rp[key].get<double>();
    }
    return hf.DoubleOr(key, def);
  };
  ASSIGN_OR_RETURN(double theta, number("rope_theta", 10000.0));
  ASSIGN_OR_RETURN(double partial, number("partial_rotary_factor", 1.0));
  if (!(theta > 0)) return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": rope_theta must be > 0"));
  if (!(partial > 0 && partial <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(hf.path(), ": partial_rotary_factor ", partial, " must be in (0, 1]"));
  }
  c.rope_theta = static_cast<float>(theta);
  c.rope_dim = static_cast<int>(c.head_dim * partial);  // transformers: int(head_dim * factor)
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (rp.contains(key) && rp[key].is_string()) {
      type = rp[key].get<std::string>();
      break;
    }
  }
  if (type == "su" || type == "yarn" || type == "longrope") {
    RopeScaling& s = c.rope_scaling;
    s.kind = RopeScalingKind::kLongRope;
    for (auto [key, list] : {std::pair{"short_factor", &s.short_factor}, std::pair{"long_factor", &s.long_factor}}) {
      const auto it = rp.find(key);
      if (it == rp.end() || !it->is_array() || static_cast<int>(it->size()) != c.rope_dim / 2) {
        return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": ", where, ".", key,
                                                       " must be a list of rope_dim / 2 = ", c.rope_dim / 2,
                                                       " numbers for longrope"));
      }
      for (const auto& e : *it) {
        if (!e.is_number()) {
          return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": ", where, ".", key, " holds ", e.dump()));
        }
        list->push_back(e.get<float>());
      }
    }
    ASSIGN_OR_RETURN(double orig, number("original_max_position_embeddings", 4096.0));
    // HF standardize_rope_params: a top-level original_max_position_embeddings wins.
    ASSIGN_OR_RETURN(orig, hf.DoubleOr("original_max_position_embeddings", orig));
    if (!(orig >= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(hf.path(), ": original_max_position_embeddings must be >= 1 for longrope"));
    }
    s.original_max_positions = static_cast<int>(orig);
    double factor = static_cast<double>(c.max_positions) / orig;
    if (rp.contains("factor") && rp["factor"].is_number()) factor = rp["factor"].get<double>();
    s.factor = static_cast<float>(factor);
    double attention = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(orig));
    if (rp.contains("attention_factor") && rp["attention_factor"].is_number()) {
      attention = rp["attention_factor"].get<double>();
    }
    s.attn_factor = static_cast<float>(attention);
  } else if (!type.empty() && type != "default") {
    return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": ", where, " type '", type,
                                                   "' is not supported for phi3 (default, longrope, su)"));
  }
  const auto window = j.find("sliding_window");
  if (window != j.end() && !window->is_null()) {
    ASSIGN_OR_RETURN(int64_t w, hf.Int("sliding_window", 1, int64_t{1} << 30));
    c.sliding_window = static_cast<int>(w);
    c.sliding_layers.assign(c.num_layers, true);
  }
  return absl::OkStatus();
}

// Which layers of a Gemma 2 / 3 file slide: layer_types, else every
// `period`-th layer full and the others windowed (Gemma 2: 2, so the even
// layers slide; Gemma 3: sliding_window_pattern, 6).
absl::StatusOr<std::vector<bool>> GemmaSlidingLayers(const HfConfig& hf, int num_layers, int64_t period) {
  ASSIGN_OR_RETURN(std::optional<std::vector<bool>> listed, ReadLayerTypes(hf, num_layers));
  if (listed.has_value()) return *std::move(listed);
  std::vector<bool> sliding(num_layers, false);
  for (int l = 0; l < num_layers; ++l) sliding[l] = (l + 1) % period != 0;
  return sliding;
}

// Gemma 3's rope: the full layers' parameters go through the common reader
// (a copy of the config whose rope_parameters is the "full_attention"
// entry), the sliding layers' base is local_rope_theta. transformers 5
// writes rope_parameters {"full_attention": {...}, "sliding_attention":
// {...}}; older files rope_theta, rope_local_base_freq and rope_scaling.
absl::Status ReadHfGemma3Rope(const HfConfig& hf, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  nlohmann::json full = j;
  full.erase("rope_parameters");
  full.erase("rope_scaling");
  double local_theta = 10000.0;
  const auto params = j.find("rope_parameters");
  if (params != j.end() && params->is_object() && params->contains("full_attention")) {
    full["rope_parameters"] = (*params)["full_attention"];
    if (!full["rope_parameters"].contains("rope_theta")) full["rope_parameters"]["rope_theta"] = 1000000.0;
    const nlohmann::json local = params->value("sliding_attention", nlohmann::json::object());
    if (!local.is_object() || local.value("rope_type", "default") != "default") {
      return absl::InvalidArgumentError(absl::StrCat(
          hf.path(), ": rope_parameters.sliding_attention must be the default rope (got ", local.dump(), ")"));
    }
    if (local.contains("rope_theta") && local["rope_theta"].is_number()) local_theta = local["rope_theta"].get<double>();
  } else {
    if (!full.contains("rope_theta") || full["rope_theta"].is_null()) full["rope_theta"] = 1000000.0;
    if (const auto scaling = j.find("rope_scaling"); scaling != j.end() && scaling->is_object()) {
      full["rope_scaling"] = *scaling;
    }
    ASSIGN_OR_RETURN(local_theta, hf.DoubleOr("rope_local_base_freq", 10000.0));
  }
  ASSIGN_OR_RETURN(HfConfig full_hf, HfConfig::FromJson(std::move(full), hf.path()));
  RETURN_IF_ERROR(ReadHfRope(full_hf, c));
  if (!(local_theta > 0)) return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": the local rope_theta must be > 0"));
  c.local_rope_theta = static_cast<float>(local_theta);
  return absl::OkStatus();
}

// The Gemma decoders as transformers 5.24 defines them (modeling_gemma,
// modeling_gemma2, modeling_gemma3's Gemma3ForCausalLM). All three: RMSNorm
// scaling by (1 + weight), GeGLU with gelu_pytorch_tanh, embeddings times
// sqrt(hidden_size), tied embeddings by default, head_dim 256 by default.
// Gemma 2 and 3 add a norm on each sub-layer's output (sandwich), scores
// times query_pre_attn_scalar^-0.5 and sliding-window layers; Gemma 2 caps
// attention scores and logits with tanh (attn_logit_softcapping 50,
// final_logit_softcapping 30 by default); Gemma 3 adds q/k norms and a local
// rope for its sliding layers, and caps nothing by default.
absl::Status ReadHfGemma(const HfConfig& hf, int generation, DecoderConfig& c) {
  constexpr int64_t kMax = int64_t{1} << 30;
  const nlohmann::json& j = hf.json();
  RETURN_IF_ERROR(ReadHfBodySizes(hf, 256, generation == 3 ? 131072 : 8192, 1e-6, c));
  // Gemma 1 names it hidden_act, and transformers reads its released "gelu"
  // as the tanh approximation; Gemma 2 and 3 name it hidden_activation.
  const char* act_key = generation == 1 ? "hidden_act" : "hidden_activation";
  ASSIGN_OR_RETURN(std::string act, hf.StringOr(act_key, "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && !(generation == 1 && act == "gelu")) {
    return absl::InvalidArgumentError(
        absl::StrCat(hf.path(), ": ", act_key, " '", act, "' is not supported (gelu_pytorch_tanh)"));
  }
  // EmbeddingGemma; DecoderModel refuses it for generation.
  ASSIGN_OR_RETURN(c.bidirectional, hf.BoolOr("use_bidirectional_attention", false));
  if (generation == 3) {
    // transformers' Gemma 3 reads but never applies it: refuse rather than guess.
    if (const auto it = j.find("attn_logit_softcapping"); it != j.end() && !it->is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": attn_logit_softcapping = ", it->dump(),
                                                     " is not supported (Gemma 3's decoders have none)"));
    }
  }
  if (generation == 2) {
    // Gemma 2's defaults are 50 and 30; null turns a cap off.
    const auto cap = [&](const char* key, double def) -> absl::StatusOr<float> {
      const auto it = j.find(key);
      if (it != j.end() && it->is_null()) return 0.0f;
      ASSIGN_OR_RETURN(double v, hf.DoubleOr(key, def));
      return static_cast<float>(v);
    };
    ASSIGN_OR_RETURN(c.attn_logit_softcap, cap("attn_logit_softcapping", 50.0));
    ASSIGN_OR_RETURN(c.final_logit_softcap, cap("final_logit_softcapping", 30.0));
  } else if (generation == 3) {
    ASSIGN_OR_RETURN(double final_cap, hf.DoubleOr("final_logit_softcapping", 0.0));
    c.final_logit_softcap = static_cast<float>(final_cap);
  }
  ASSIGN_OR_RETURN(c.tie_word_embeddings, hf.BoolOr("tie_word_embeddings", true));
  RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
  c.mlp = MlpKind::kGeGlu;
  c.norm_weight_offset = 1.0f;
  c.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
  if (generation == 1) return ReadHfRope(hf, c);

  c.qk_norm = generation == 3;
  c.sandwich_norms = true;
  ASSIGN_OR_RETURN(double pre_attn, hf.DoubleOr("query_pre_attn_scalar", 256.0));
  if (!(pre_attn > 0)) return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": query_pre_attn_scalar must be > 0"));
  c.attn_scale = static_cast<float>(std::pow(pre_attn, -0.5));
  int64_t period = 2;
  if (generation == 3) {
    ASSIGN_OR_RETURN(period, hf.IntOr("sliding_window_pattern", 6, 1, kMax));
  }
  ASSIGN_OR_RETURN(std::vector<bool> sliding, GemmaSlidingLayers(hf, c.num_layers, period));
  const auto window_it = j.find("sliding_window");
  if (window_it == j.end() || !window_it->is_null()) {
    ASSIGN_OR_RETURN(int64_t window, hf.IntOr("sliding_window", 4096, 1, kMax));
    c.sliding_window = static_cast<int>(window);
    c.sliding_layers = std::move(sliding);
  }
  return generation == 3 ? ReadHfGemma3Rope(hf, c) : ReadHfRope(hf, c);
}

absl::Status ReadHfSpecialIds(const HfConfig& hf, DecoderConfig& c) {
  const nlohmann::json& j = hf.json();
  auto id_or = [&](const char* key) -> int {
    if (j.contains(key) && j[key].is_number_integer()) return j[key].get<int>();
    return -1;
  };
  c.bos_token_id = id_or("bos_token_id");
  if (j.contains("eos_token_id") && j["eos_token_id"].is_array()) {
    for (const auto& e : j["eos_token_id"]) {
      if (!e.is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat(hf.path(), ": eos_token_id list must hold integers"));
      }
      c.eos_token_ids.push_back(e.get<int>());
    }
    if (!c.eos_token_ids.empty()) c.eos_token_id = c.eos_token_ids[0];
  } else {
    c.eos_token_id = id_or("eos_token_id");
    if (c.eos_token_id >= 0) c.eos_token_ids.push_back(c.eos_token_id);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DecoderConfig> DecoderConfigFromHf(const HfConfig& hf) {
  DecoderConfig c;
  c.architecture = hf.model_type();
  const std::string& t = c.architecture;
  constexpr int64_t kMax = int64_t{1} << 30;
  // GPTQ, AWQ, bitsandbytes, FP8... checkpoints store packed integer
  // tensors under other names: say so rather than report a missing weight.
  if (const auto q = hf.json().find("quantization_config"); q != hf.json().end() && !q->is_null()) {
    const std::string method =
        q->is_object() && q->contains("quant_method") && (*q)["quant_method"].is_string()
            ? (*q)["quant_method"].get<std::string>()
            : "unknown";
    return absl::InvalidArgumentError(absl::StrCat(
        hf.path(), ": quantization_config (quant_method ", method,
        ") is not supported: load the unquantised checkpoint (f32, f16 or bf16 safetensors) or a GGUF file, "
        "which may be quantised (Q4_K_M, Q8_0, ...)"));
  }
  if (t == "gpt2") {
    c.arch = DecoderArch::kGpt2;
    ASSIGN_OR_RETURN(int64_t hidden, hf.Int("n_embd", 1, kMax));
    ASSIGN_OR_RETURN(int64_t layers, hf.Int("n_layer", 1, kMax));
    ASSIGN_OR_RETURN(int64_t heads, hf.Int("n_head", 1, kMax));
    ASSIGN_OR_RETURN(int64_t positions, hf.Int("n_positions", 1, kMax));
    ASSIGN_OR_RETURN(int64_t inner, hf.IntOr("n_inner", 4 * hidden, 1, kMax));
    ASSIGN_OR_RETURN(int64_t vocab, hf.Int("vocab_size", 1, kMax));
    ASSIGN_OR_RETURN(double eps, hf.DoubleOr("layer_norm_epsilon", 1e-5));
    ASSIGN_OR_RETURN(std::string act, hf.StringOr("activation_function", "gelu_new"));
    if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
      return absl::InvalidArgumentError(
          absl::StrCat(hf.path(), ": activation_function '", act, "' is not supported (gelu_new)"));
    }
    ASSIGN_OR_RETURN(c.tie_word_embeddings, hf.BoolOr("tie_word_embeddings", true));
    c.hidden_size = static_cast<int>(hidden);
    c.num_layers = static_cast<int>(layers);
    c.num_heads = c.num_kv_heads = static_cast<int>(heads);
    c.head_dim = c.hidden_size / c.num_heads;
    c.max_positions = c.trained_max_positions = static_cast<int>(positions);
    c.intermediate_size = static_cast<int>(inner);
    c.vocab_size = static_cast<int>(vocab);
    c.norm = NormKind::kLayerNorm;
    c.norm_bias = true;
    c.norm_eps = static_cast<float>(eps);
    c.mlp = MlpKind::kGeluTanh;
    c.positions = PositionKind::kLearned;
    c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  } else if (t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfSiluBody(hf, 2048, 1e-6, c));
    if (t == "qwen2") {
      c.qkv_bias = true;  // Qwen2Attention: bias on q/k/v, none on o
    } else {
      RETURN_IF_ERROR(ReadHfAttentionBias(hf, c));
      ASSIGN_OR_RETURN(c.mlp_bias, hf.BoolOr("mlp_bias", false));
    }
    c.qk_norm = t == "qwen3";
    RETURN_IF_ERROR(ReadHfRope(hf, c));
    RETURN_IF_ERROR(ReadHfSlidingWindow(hf, t, c));
  } else if (t == "mixtral" || t == "qwen3_moe" || t == "qwen2_moe") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfMixtureOfExperts(hf, c));
  } else if (t == "smollm3") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfSmolLM3(hf, c));
  } else if (t == "olmo2" || t == "olmoe") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfOlmo(hf, c));
  } else if (t == "granite" || t == "granitemoe") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfGranite(hf, c));
  } else if (t == "phi3") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfPhi3(hf, c));
  } else if (t == "gemma" || t == "gemma2" || t == "gemma3_text") {
    c.arch = DecoderArch::kLlama;
    RETURN_IF_ERROR(ReadHfGemma(hf, t == "gemma" ? 1 : t == "gemma2" ? 2 : 3, c));
  } else if (t == "gemma3") {
    return absl::InvalidArgumentError(absl::StrCat(
        hf.path(), ": model_type 'gemma3' is Gemma 3's image-text model (Gemma3ForConditionalGeneration, 4B and "
                   "up); the text-only Gemma 3 decoders (gemma-3-270m, gemma-3-1b: model_type gemma3_text) are "
                   "supported"));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        hf.path(), ": model_type '", t,
        "' is not a supported decoder (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, phi3, smollm3, "
        "olmo2, olmoe, granite, granitemoe, gemma, gemma2, gemma3_text, gpt2)"));
  }
  RETURN_IF_ERROR(ReadHfSpecialIds(hf, c));
  c.name = t;
  RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace attnserve
