#include "engine/models/gte.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/renamed_tensors.h"
#include "engine/models/bert_views.h"

namespace attnserve {
namespace {

// A string key that must hold `want` (`default_value` when absent).
absl::Status RequireString(const HfConfig& config, const std::string& key, const std::string& default_value,
                           const std::string& want, const char* what) {
  ASSIGN_OR_RETURN(std::string v, config.StringOr(key, default_value));
  if (v == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(config.path(), ": ", key, " \"", v, "\" is not supported (", want, ": ", what, ")"));
}

absl::Status RequireFalse(const HfConfig& config, const std::string& key, const char* what) {
  ASSIGN_OR_RETURN(bool v, config.BoolOr(key, false));
  if (!v) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", key, " true (", what, ") is not supported"));
}

// The remote code's rotary keys: rope_theta (its default 10000) and
// rope_scaling, null or {"type": "ntk", "factor": f} (gte-*-en-v1.5's):
// its NTKScalingRotaryEmbedding builds, at load, the frequencies of base
// theta * f divided by f^(2 / head_dim) and uses them at every length.
absl::Status ReadRemoteRotary(const HfConfig& config, BertConfig& c) {
  const std::string& path = config.path();
  ASSIGN_OR_RETURN(double theta, config.DoubleOr("rope_theta", 10000.0));
  c.rotary_theta = static_cast<float>(theta);
  const nlohmann::json& root = config.json();
  auto scaling = root.find("rope_scaling");
  if (scaling == root.end() || scaling->is_null()) return absl::OkStatus();
  const std::string type = scaling->is_object() && scaling->contains("type") && (*scaling)["type"].is_string()
                               ? (*scaling)["type"].get<std::string>()
                               : "";
  if (type != "ntk") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": rope_scaling ", scaling->dump(), " is not supported (null, or type \"ntk\")"));
  }
  if (scaling->contains("mixed_b") && !(*scaling)["mixed_b"].is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": rope_scaling.mixed_b (mixed NTK scaling) is not supported"));
  }
  if (!scaling->contains("factor") || !(*scaling)["factor"].is_number() || !((*scaling)["factor"].get<double>() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": rope_scaling.factor must be a positive number"));
  }
  const double factor = (*scaling)["factor"].get<double>();
  c.rotary_theta = static_cast<float>(theta * factor);
  c.rotary_scale = static_cast<float>(std::pow(factor, 2.0 / c.head_dim()));
  return absl::OkStatus();
}

}  // namespace

bool IsGteModelType(const std::string& model_type) { return model_type == "new" || model_type == "gte"; }

absl::StatusOr<BertConfig> ParseGteConfig(const HfConfig& config) {
  const std::string& path = config.path();
  const bool remote = config.model_type() == "new";
  BertConfig c;
  c.family = EncoderFamily::kBert;
  c.gate_activation = Activation::kGeluErf;  // GeGLU: ACT2FN["gelu"] on the gate
  c.projection_bias = true;                  // up and gate have none (gated), the rest have theirs
  RETURN_IF_ERROR(ReadBertSizes(config, /*distil=*/false, c));
  ASSIGN_OR_RETURN(int64_t types, config.IntOr("type_vocab_size", remote ? 0 : 1, 0, 1 << 16));
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("layer_norm_eps", 1e-12));
  c.type_vocab_size = static_cast<int>(types);
  c.layer_norm_eps = static_cast<float>(eps);
  RETURN_IF_ERROR(RequireString(config, "hidden_act", "gelu", "gelu", "GeGLU"));
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_size ", c.hidden_size, " / num_attention_heads ",
                                                   c.num_heads, " must be an even head size (rotary positions)"));
  }
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": layer_norm_eps ", eps, " is outside (0, 1)"));
  }
  if (remote) {
    RETURN_IF_ERROR(RequireString(config, "position_embedding_type", "rope", "rope", "rotary positions"));
    RETURN_IF_ERROR(RequireString(config, "layer_norm_type", "layer_norm", "layer_norm", "LayerNorm"));
    RETURN_IF_ERROR(RequireFalse(config, "logn_attention_scale", "log-n attention scaling"));
    RETURN_IF_ERROR(RequireFalse(config, "logn_attention_clip1", "log-n attention scaling"));
    RETURN_IF_ERROR(ReadRemoteRotary(config, c));
  } else {
    ASSIGN_OR_RETURN(double theta, DefaultRopeTheta(config, 160000.0));  // GteConfig's default
    c.rotary_theta = static_cast<float>(theta);
  }
  if (!(c.rotary_theta > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": rope_theta ", c.rotary_theta, " must be positive"));
  }
  for (const std::string& architecture : config.architectures()) {
    if (absl::EndsWith(architecture, "ForSequenceClassification")) {
      ASSIGN_OR_RETURN(c.labels, SequenceClassificationLabels(config));
    } else if (absl::EndsWith(architecture, "ForTokenClassification")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": architecture ", architecture,
                                                     " is not supported (GTE embedding and sequence "
                                                     "classification models are)"));
    }
  }
  return c;
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> GteWeightsAsBert(const SafetensorsArchive& weights,
                                                                     const BertConfig& config) {
  // The remote code's task models nest the encoder under "new.",
  // transformers 5's under "gte.".
  const std::string prefix = PrefixBefore(weights, "embeddings.word_embeddings.weight");
  RenamedTensors views(weights);
  const int64_t d = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  RETURN_IF_ERROR(AddBertEmbeddingTables(views, prefix, config));
  static constexpr const char* kQkv[] = {"query", "key", "value"};
  static constexpr const char* kUnpacked[] = {"q_proj", "k_proj", "v_proj"};
  for (const char* p : {"weight", "bias"}) {
    RETURN_IF_ERROR(
        views.Add(absl::StrCat(prefix, "embeddings.LayerNorm.", p), {d}, absl::StrCat("embeddings.LayerNorm.", p)));
  }
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string from = absl::StrCat(prefix, "encoder.layer.", i, ".");
    const std::string to = absl::StrCat("encoder.layer.", i, ".");
    // pack_qkv false (the remote code's option) keeps three projections.
    const bool packed = views.Has(from + "attention.qkv_proj.weight");
    for (int part = 0; part < 3; ++part) {
      for (const char* p : {"weight", "bias"}) {
        const std::vector<int64_t> shape = std::string(p) == "weight" ? std::vector<int64_t>{packed ? 3 * d : d, d}
                                                                      : std::vector<int64_t>{packed ? 3 * d : d};
        const std::string name = packed ? absl::StrCat(from, "attention.qkv_proj.", p)
                                        : absl::StrCat(from, "attention.", kUnpacked[part], ".", p);
        RETURN_IF_ERROR(views.Add(name, shape, absl::StrCat(to, "attention.self.", kQkv[part], ".", p),
                                  packed ? part : 0, packed ? 3 : 1));
      }
    }
    for (const char* p : {"weight", "bias"}) {
      const std::vector<int64_t> dd = std::string(p) == "weight" ? std::vector<int64_t>{d, d} : std::vector<int64_t>{d};
      RETURN_IF_ERROR(views.Add(absl::StrCat(from, "attention.o_proj.", p), dd,
                                absl::StrCat(to, "attention.output.dense.", p)));
      RETURN_IF_ERROR(
          views.Add(absl::StrCat(from, "attn_ln.", p), {d}, absl::StrCat(to, "attention.output.LayerNorm.", p)));
      RETURN_IF_ERROR(views.Add(absl::StrCat(from, "mlp_ln.", p), {d}, absl::StrCat(to, "output.LayerNorm.", p)));
    }
    // up_gate_proj [2I, D]: up's rows, then gate's.
    for (int part = 0; part < 2; ++part) {
      RETURN_IF_ERROR(views.Add(from + "mlp.up_gate_proj.weight", {2 * inner, d},
                                to + (part == 0 ? "intermediate.dense.weight" : "intermediate.gate.weight"), part, 2));
    }
    RETURN_IF_ERROR(views.Add(from + "mlp.down_proj.weight", {d, inner}, to + "output.dense.weight"));
    RETURN_IF_ERROR(views.Add(from + "mlp.down_proj.bias", {d}, to + "output.dense.bias"));
  }
  if (!config.labels.empty()) {
    // BERT's head: pooler.dense under the encoder's prefix, the classifier
    // at the top level.
    const int64_t labels = static_cast<int64_t>(config.labels.size());
    RETURN_IF_ERROR(views.Add(prefix + "pooler.dense.weight", {d, d}, "pooler.dense.weight"));
    RETURN_IF_ERROR(views.Add(prefix + "pooler.dense.bias", {d}, "pooler.dense.bias"));
    RETURN_IF_ERROR(views.Add("classifier.weight", {labels, d}, "classifier.weight"));
    RETURN_IF_ERROR(views.Add("classifier.bias", {labels}, "classifier.bias"));
  }
  return std::move(views).Finish();
}

}  // namespace attnserve
