#include "engine/models/nomic_bert.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/renamed_tensors.h"
#include "engine/models/bert_views.h"

namespace attnserve {
namespace {

// A boolean key whose other value selects a variant this encoder does not
// run; INVALID_ARGUMENT naming it. `default_value` is Nomic's config
// class's default, which holds when the key is absent.
absl::Status RequireFlag(const HfConfig& config, const std::string& key, bool default_value, bool want,
                         const char* what) {
  ASSIGN_OR_RETURN(bool v, config.BoolOr(key, default_value));
  if (v == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", key, " ", v ? "true" : "false", " (", what,
                                                 ") is not supported (", want ? "true" : "false",
                                                 ", as nomic-embed-text)"));
}

// The hub's layout (Nomic's NomicBertConfig, a GPT2Config): sizes under
// GPT-2's names, the rotary and bias switches as separate keys, whose
// defaults there (no rotary, biases on, GELU) are not nomic-embed-text's,
// so a file relying on them is refused rather than read otherwise.
absl::Status ReadHubLayout(const HfConfig& config, BertConfig& c) {
  const std::string& path = config.path();
  ASSIGN_OR_RETURN(int64_t hidden, config.Int("n_embd", 1, 1 << 16));
  ASSIGN_OR_RETURN(int64_t layers, config.Int("n_layer", 1, 1024));
  ASSIGN_OR_RETURN(int64_t heads, config.Int("n_head", 1, 1024));
  ASSIGN_OR_RETURN(int64_t inner, config.IntOr("n_inner", 4 * hidden, 1, 1 << 18));
  ASSIGN_OR_RETURN(int64_t vocab, config.Int("vocab_size", 1, 1 << 24));
  ASSIGN_OR_RETURN(int64_t positions, config.Int("n_positions", 1, 1 << 20));
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("layer_norm_epsilon", 1e-5));
  ASSIGN_OR_RETURN(double theta, config.DoubleOr("rotary_emb_base", 10000.0));
  ASSIGN_OR_RETURN(double fraction, config.DoubleOr("rotary_emb_fraction", 0.0));
  ASSIGN_OR_RETURN(std::string act, config.StringOr("activation_function", "gelu"));
  ASSIGN_OR_RETURN(int64_t moe_every, config.IntOr("moe_every_n_layers", 0, 0, 1024));
  if (fraction != 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": rotary_emb_fraction ", fraction, " is not supported (1.0: rotary positions over the whole head)"));
  }
  if (act != "swiglu") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": activation_function \"", act, "\" is not supported (swiglu)"));
  }
  if (moe_every != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": moe_every_n_layers ", moe_every, " (a mixture of experts: nomic-embed-text-v2-moe) is not supported"));
  }
  if (config.json().contains("rotary_scaling_factor") && !config.json()["rotary_scaling_factor"].is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": rotary_scaling_factor ", config.json()["rotary_scaling_factor"].dump(),
        " (dynamic NTK rotary scaling past max_trained_positions) is not supported (null)"));
  }
  RETURN_IF_ERROR(RequireFlag(config, "prenorm", false, false, "pre-norm layers"));
  RETURN_IF_ERROR(RequireFlag(config, "rotary_emb_interleaved", false, false, "GPT-J rotary pairs"));
  RETURN_IF_ERROR(RequireFlag(config, "parallel_block", false, false, "parallel attention and MLP"));
  RETURN_IF_ERROR(RequireFlag(config, "use_rms_norm", false, false, "RMSNorm"));
  RETURN_IF_ERROR(RequireFlag(config, "causal", false, false, "causal attention"));
  RETURN_IF_ERROR(RequireFlag(config, "qkv_proj_bias", true, false, "attention projection biases"));
  RETURN_IF_ERROR(RequireFlag(config, "mlp_fc1_bias", true, false, "feed-forward biases"));
  RETURN_IF_ERROR(RequireFlag(config, "mlp_fc2_bias", true, false, "feed-forward biases"));
  c.hidden_size = static_cast<int>(hidden);
  c.num_layers = static_cast<int>(layers);
  c.num_heads = static_cast<int>(heads);
  c.intermediate_size = static_cast<int>(inner);
  c.vocab_size = static_cast<int>(vocab);
  c.max_positions = static_cast<int>(positions);
  c.layer_norm_eps = static_cast<float>(eps);
  c.rotary_theta = static_cast<float>(theta);
  return absl::OkStatus();
}

// transformers 5's layout (its NomicBertConfig): BERT's size keys,
// hidden_act gating the MLP, rope_parameters (or a top-level rope_theta).
absl::Status ReadTransformersLayout(const HfConfig& config, BertConfig& c) {
  const std::string& path = config.path();
  RETURN_IF_ERROR(ReadBertSizes(config, /*distil=*/false, c));
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("layer_norm_eps", 1e-12));
  ASSIGN_OR_RETURN(std::string act, config.StringOr("hidden_act", "silu"));
  ASSIGN_OR_RETURN(int64_t head_dim, config.IntOr("head_dim", c.hidden_size / c.num_heads, 1, 1 << 16));
  if (act != "silu") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": hidden_act \"", act, "\" is not supported (silu: SwiGLU)"));
  }
  if (c.hidden_size % c.num_heads != 0 || head_dim != c.hidden_size / c.num_heads) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": head_dim ", head_dim, " is not hidden_size ",
                                                   c.hidden_size, " / num_attention_heads ", c.num_heads));
  }
  ASSIGN_OR_RETURN(double theta, DefaultRopeTheta(config, 1000.0));  // NomicBertConfig's default
  c.layer_norm_eps = static_cast<float>(eps);
  c.rotary_theta = static_cast<float>(theta);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BertConfig> ParseNomicBertConfig(const HfConfig& config) {
  const std::string& path = config.path();
  RETURN_IF_ERROR(RefuseClassificationHeads(
      config, "a Nomic BERT embedding model, NomicBertModel, is; its classification heads are not"));
  BertConfig c;
  c.family = EncoderFamily::kBert;
  c.gate_activation = Activation::kSilu;  // SwiGLU
  c.projection_bias = false;
  if (config.json().contains("n_embd")) {
    RETURN_IF_ERROR(ReadHubLayout(config, c));
  } else {
    RETURN_IF_ERROR(ReadTransformersLayout(config, c));
  }
  ASSIGN_OR_RETURN(int64_t types, config.IntOr("type_vocab_size", 2, 0, 1 << 16));
  c.type_vocab_size = static_cast<int>(types);
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": width ", c.hidden_size, " / heads ", c.num_heads,
                                                   " must be an even head size (rotary positions)"));
  }
  if (!(c.layer_norm_eps > 0 && c.layer_norm_eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": layer norm epsilon ", c.layer_norm_eps,
                                                   " is outside (0, 1)"));
  }
  if (!(c.rotary_theta > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": rotary base ", c.rotary_theta, " must be positive"));
  }
  return c;
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> NomicBertWeightsAsBert(const SafetensorsArchive& weights,
                                                                           const BertConfig& config) {
  // A task model's checkpoint (NomicBertForPreTraining) nests the encoder
  // under a prefix; its embedding norm says which.
  const std::string prefix = PrefixBefore(weights, "emb_ln.weight");
  RenamedTensors views(weights);
  const int64_t d = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  RETURN_IF_ERROR(AddBertEmbeddingTables(views, prefix, config));
  for (const char* p : {"weight", "bias"}) {
    RETURN_IF_ERROR(views.Add(absl::StrCat(prefix, "emb_ln.", p), {d}, absl::StrCat("embeddings.LayerNorm.", p)));
  }
  static constexpr const char* kQkv[] = {"query", "key", "value"};
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string from = absl::StrCat(prefix, "encoder.layers.", i, ".");
    const std::string to = absl::StrCat("encoder.layer.", i, ".");
    for (int part = 0; part < 3; ++part) {
      RETURN_IF_ERROR(views.Add(from + "attn.Wqkv.weight", {3 * d, d},
                                absl::StrCat(to, "attention.self.", kQkv[part], ".weight"), part, 3));
    }
    RETURN_IF_ERROR(views.Add(from + "attn.out_proj.weight", {d, d}, to + "attention.output.dense.weight"));
    RETURN_IF_ERROR(views.Add(from + "mlp.fc11.weight", {inner, d}, to + "intermediate.dense.weight"));  // up
    RETURN_IF_ERROR(views.Add(from + "mlp.fc12.weight", {inner, d}, to + "intermediate.gate.weight"));   // gate
    RETURN_IF_ERROR(views.Add(from + "mlp.fc2.weight", {d, inner}, to + "output.dense.weight"));
    for (const char* p : {"weight", "bias"}) {
      RETURN_IF_ERROR(
          views.Add(absl::StrCat(from, "norm1.", p), {d}, absl::StrCat(to, "attention.output.LayerNorm.", p)));
      RETURN_IF_ERROR(views.Add(absl::StrCat(from, "norm2.", p), {d}, absl::StrCat(to, "output.LayerNorm.", p)));
    }
  }
  return std::move(views).Finish();
}

}  // namespace attnserve
