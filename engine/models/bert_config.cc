#include "engine/models/bert_config.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/models/deberta.h"
#include "engine/models/gte.h"
#include "engine/models/jina_bert.h"
#include "engine/models/nomic_bert.h"

namespace attnserve {

absl::Status RequireGelu(const HfConfig& config, const std::string& key) {
  ASSIGN_OR_RETURN(std::string act, config.StringOr(key, "gelu"));
  if (act == "gelu") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", key, " \"", act, "\" is not supported (gelu)"));
}

namespace {

// A rope_parameters entry's theta (rope_type "default" only), else the
// older key's value.
absl::StatusOr<float> ModernRopeTheta(const HfConfig& config, const char* layer_type, const char* legacy_key,
                                      double legacy_default) {
  const nlohmann::json& root = config.json();
  auto params = root.find("rope_parameters");
  if (params != root.end() && params->is_object() && params->contains(layer_type)) {
    const nlohmann::json& p = (*params)[layer_type];
    const std::string type = p.is_object() && p.contains("rope_type") && p["rope_type"].is_string()
                                 ? p["rope_type"].get<std::string>()
                                 : "default";
    if (type != "default") {
      return absl::InvalidArgumentError(absl::StrCat(config.path(), ": rope_parameters.", layer_type,
                                                     ".rope_type \"", type, "\" is not supported (default)"));
    }
    if (!p.is_object() || !p.contains("rope_theta") || !p["rope_theta"].is_number() ||
        !(p["rope_theta"].get<double>() > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.path(), ": rope_parameters.", layer_type, ".rope_theta must be a positive number"));
    }
    return static_cast<float>(p["rope_theta"].get<double>());
  }
  ASSIGN_OR_RETURN(double theta, config.DoubleOr(legacy_key, legacy_default));
  if (!(theta > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", legacy_key, " ", theta, " must be positive"));
  }
  return static_cast<float>(theta);
}

// ModernBERT's keys, in transformers 5's layout (layer_types,
// rope_parameters) or the older one checkpoints on the hub have
// (global_attn_every_n_layers, global_rope_theta, local_rope_theta).
absl::StatusOr<BertConfig> ParseModernBertConfig(const HfConfig& config) {
  const std::string& path = config.path();
  BertConfig c;
  c.family = EncoderFamily::kModernBert;
  RETURN_IF_ERROR(ReadBertSizes(config, /*distil=*/false, c));
  const int64_t layers = c.num_layers;
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("norm_eps", 1e-5));
  ASSIGN_OR_RETURN(int64_t local_attention, config.IntOr("local_attention", 128, 2, 1 << 20));
  if (c.hidden_size % c.num_heads != 0 || (c.hidden_size / c.num_heads) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_size ", c.hidden_size, " / num_attention_heads ",
                                                   c.num_heads, " must be an even head size (rotary positions)"));
  }
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": norm_eps ", eps, " is outside (0, 1)"));
  }
  RETURN_IF_ERROR(RequireGelu(config, "hidden_activation"));
  RETURN_IF_ERROR(RequireGelu(config, "classifier_activation"));
  ModernBertConfig& m = c.modern;
  const nlohmann::json& root = config.json();
  if (auto types = root.find("layer_types"); types != root.end() && !types->is_null()) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != layers) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": layer_types must list one type per layer (", layers, ")"));
    }
    for (const nlohmann::json& t : *types) {
      const std::string type = t.is_string() ? t.get<std::string>() : "";
      if (type != "full_attention" && type != "sliding_attention") {
        return absl::InvalidArgumentError(absl::StrCat(path, ": layer_types entry ", t.dump(),
                                                       " is not supported (full_attention, sliding_attention)"));
      }
      m.global_layers.push_back(type == "full_attention");
    }
  } else {
    ASSIGN_OR_RETURN(int64_t every, config.IntOr("global_attn_every_n_layers", 3, 1, 1024));
    for (int64_t i = 0; i < layers; ++i) m.global_layers.push_back(i % every == 0);
  }
  ASSIGN_OR_RETURN(m.global_rope_theta, ModernRopeTheta(config, "full_attention", "global_rope_theta", 160000.0));
  ASSIGN_OR_RETURN(m.local_rope_theta, ModernRopeTheta(config, "sliding_attention", "local_rope_theta", 10000.0));
  m.window = static_cast<int>(local_attention / 2);
  ASSIGN_OR_RETURN(m.attention_bias, config.BoolOr("attention_bias", false));
  ASSIGN_OR_RETURN(m.mlp_bias, config.BoolOr("mlp_bias", false));
  ASSIGN_OR_RETURN(m.norm_bias, config.BoolOr("norm_bias", false));
  ASSIGN_OR_RETURN(m.classifier_bias, config.BoolOr("classifier_bias", false));
  ASSIGN_OR_RETURN(std::string pooling, config.StringOr("classifier_pooling", "cls"));
  if (pooling != "cls" && pooling != "mean") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": classifier_pooling \"", pooling, "\" is not supported (cls, mean)"));
  }
  m.classifier_mean = pooling == "mean";
  c.type_vocab_size = 0;
  c.layer_norm_eps = static_cast<float>(eps);
  for (const std::string& architecture : config.architectures()) {
    if (architecture == "ModernBertForSequenceClassification") {
      ASSIGN_OR_RETURN(c.labels, SequenceClassificationLabels(config));
    }
  }
  return c;
}

}  // namespace

absl::Status ReadBertSizes(const HfConfig& config, bool distil, BertConfig& c) {
  ASSIGN_OR_RETURN(int64_t hidden, config.Int(distil ? "dim" : "hidden_size", 1, 1 << 16));
  ASSIGN_OR_RETURN(int64_t layers, config.Int(distil ? "n_layers" : "num_hidden_layers", 1, 1024));
  ASSIGN_OR_RETURN(int64_t heads, config.Int(distil ? "n_heads" : "num_attention_heads", 1, 1024));
  ASSIGN_OR_RETURN(int64_t inter, config.Int(distil ? "hidden_dim" : "intermediate_size", 1, 1 << 18));
  ASSIGN_OR_RETURN(int64_t vocab, config.Int("vocab_size", 1, 1 << 24));
  ASSIGN_OR_RETURN(int64_t positions, config.Int("max_position_embeddings", 1, 1 << 20));
  c.hidden_size = static_cast<int>(hidden);
  c.num_layers = static_cast<int>(layers);
  c.num_heads = static_cast<int>(heads);
  c.intermediate_size = static_cast<int>(inter);
  c.vocab_size = static_cast<int>(vocab);
  c.max_positions = static_cast<int>(positions);
  return absl::OkStatus();
}

absl::StatusOr<double> DefaultRopeTheta(const HfConfig& config, double default_theta) {
  const std::string& path = config.path();
  ASSIGN_OR_RETURN(double theta, config.DoubleOr("rope_theta", default_theta));
  const nlohmann::json& root = config.json();
  auto params = root.find("rope_parameters");
  if (params == root.end() || params->is_null()) return theta;
  const std::string type = params->is_object() && params->contains("rope_type") && (*params)["rope_type"].is_string()
                               ? (*params)["rope_type"].get<std::string>()
                               : "default";
  if (type != "default") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": rope_parameters.rope_type \"", type, "\" is not supported (default)"));
  }
  if (!params->is_object() || !params->contains("rope_theta") || !(*params)["rope_theta"].is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": rope_parameters.rope_theta must be a number"));
  }
  return (*params)["rope_theta"].get<double>();
}

absl::Status RefuseClassificationHeads(const HfConfig& config, const std::string& what) {
  for (const std::string& architecture : config.architectures()) {
    if (absl::EndsWith(architecture, "ForSequenceClassification") ||
        absl::EndsWith(architecture, "ForTokenClassification")) {
      return absl::InvalidArgumentError(absl::StrCat(config.path(), ": architecture ", architecture,
                                                     " is not supported (", what, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> SequenceClassificationLabels(const HfConfig& config) {
  const std::string& path = config.path();
  const nlohmann::json& root = config.json();
  auto id2label = root.find("id2label");
  if (id2label != root.end() && !id2label->is_null()) {
    if (!id2label->is_object() || id2label->empty() || id2label->size() > 4096) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": id2label must be an object of 1 to 4096 labels {\"0\": name, ...}"));
    }
    std::vector<std::string> labels(id2label->size());
    std::vector<bool> seen(labels.size(), false);
    for (const auto& [key, value] : id2label->items()) {
      size_t end = 0;
      int id = -1;
      try {
        id = std::stoi(key, &end);
      } catch (const std::exception&) {
        end = 0;
      }
      if (end != key.size() || id < 0 || id >= static_cast<int>(labels.size()) || seen[id]) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": id2label key \"", key, "\" is not one of 0..",
                                                       labels.size() - 1, " (each once)"));
      }
      if (!value.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": id2label[\"", key, "\"] must be a string"));
      }
      seen[id] = true;
      labels[id] = value.get<std::string>();
    }
    return labels;
  }
  ASSIGN_OR_RETURN(int64_t n, config.IntOr("num_labels", 2, 1, 4096));
  std::vector<std::string> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(absl::StrCat("LABEL_", i));
  return labels;
}

absl::StatusOr<BertConfig> ParseBertConfig(const HfConfig& config) {
  const std::string& path = config.path();
  BertConfig c;
  const std::string& type = config.model_type();
  if (type == "bert") {
    c.family = EncoderFamily::kBert;
  } else if (type == "xlm-roberta" || type == "roberta" || type == "camembert") {
    c.family = EncoderFamily::kRoberta;
  } else if (type == "mpnet") {
    c.family = EncoderFamily::kMpnet;
  } else if (type == "distilbert") {
    c.family = EncoderFamily::kDistilBert;
  } else if (type == "electra") {
    c.family = EncoderFamily::kElectra;
  } else if (type == "modernbert") {
    return ParseModernBertConfig(config);
  } else if (type == "nomic_bert") {
    return ParseNomicBertConfig(config);
  } else if (IsGteModelType(type)) {
    return ParseGteConfig(config);
  } else if (IsDebertaV2ModelType(type)) {
    return ParseDebertaV2Config(config);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(path, ": model_type \"", type,
                                                   "\" is not supported by the encoder (bert, xlm-roberta, roberta, "
                                                   "camembert, mpnet, distilbert, electra, modernbert, nomic_bert, new, "
                                                   "gte, deberta-v2)"));
  }
  // DistilBertConfig names the sizes dim / n_layers / n_heads / hidden_dim /
  // activation and fixes every LayerNorm's eps at 1e-12.
  const bool distil = c.family == EncoderFamily::kDistilBert;
  RETURN_IF_ERROR(ReadBertSizes(config, distil, c));
  const int64_t vocab = c.vocab_size;
  const int64_t positions = c.max_positions;
  ASSIGN_OR_RETURN(int64_t types, distil ? absl::StatusOr<int64_t>(0) : config.IntOr("type_vocab_size", 2, 1, 1 << 16));
  ASSIGN_OR_RETURN(double eps, distil ? absl::StatusOr<double>(1e-12) : config.DoubleOr("layer_norm_eps", 1e-12));
  RETURN_IF_ERROR(RequireGelu(config, distil ? "activation" : "hidden_act"));
  // DistilBERT's positions are always learned-table lookups by index; a
  // sinusoidal_pos_embds model stores its table in the checkpoint like any other.
  ASSIGN_OR_RETURN(std::string pos_type, distil ? absl::StatusOr<std::string>("absolute")
                                                : config.StringOr("position_embedding_type", "absolute"));
  if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", distil ? "dim " : "hidden_size ", c.hidden_size,
                                                   " is not a multiple of ",
                                                   distil ? "n_heads " : "num_attention_heads ", c.num_heads));
  }
  if (pos_type == "alibi" && c.family == EncoderFamily::kBert) {
    RETURN_IF_ERROR(ReadJinaBertConfig(config, c));  // jina-embeddings-v2
  } else if (pos_type != "absolute") {
    return absl::InvalidArgumentError(absl::StrCat(path, ": position_embedding_type \"", pos_type,
                                                   "\" is not supported (absolute; alibi for a BERT: JinaBERT)"));
  }
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": layer_norm_eps ", eps, " is outside (0, 1)"));
  }
  c.type_vocab_size = static_cast<int>(types);
  c.layer_norm_eps = static_cast<float>(eps);
  if (c.family == EncoderFamily::kElectra) {
    // ElectraConfig's default is 128 (electra-small's); base and large set it.
    ASSIGN_OR_RETURN(int64_t embedding, config.IntOr("embedding_size", 128, 1, 1 << 16));
    c.embedding_size = static_cast<int>(embedding);
  }
  if (c.family == EncoderFamily::kMpnet) {
    c.type_vocab_size = 0;  // MPNetEmbeddings has no token-type table
    ASSIGN_OR_RETURN(int64_t buckets, config.IntOr("relative_attention_num_buckets", 32, 1, 1 << 16));
    if (buckets != 32) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": relative_attention_num_buckets ", buckets,
          " is not supported (32: transformers' MPNet computes 32 buckets whatever the table holds)"));
    }
    c.relative_attention_buckets = static_cast<int>(buckets);
  }
  if (c.roberta_positions()) {
    // MPNetEmbeddings fixes its padding index at 1 whatever pad_token_id says.
    ASSIGN_OR_RETURN(int64_t pad, c.family == EncoderFamily::kMpnet
                                      ? absl::StatusOr<int64_t>(1)
                                      : config.IntOr("pad_token_id", 1, 0, vocab - 1));
    c.pad_token_id = static_cast<int>(pad);
    if (c.max_sequence_length() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": max_position_embeddings ", positions,
                                                     " leaves no position after pad_token_id ", pad));
    }
  }
  static constexpr const char* kClassifiers[] = {"BertForSequenceClassification", "XLMRobertaForSequenceClassification",
                                                 "RobertaForSequenceClassification",
                                                 "CamembertForSequenceClassification",
                                                 "MPNetForSequenceClassification",
                                                 "DistilBertForSequenceClassification",
                                                 "ElectraForSequenceClassification"};
  for (const std::string& architecture : config.architectures()) {
    if (std::find(std::begin(kClassifiers), std::end(kClassifiers), architecture) != std::end(kClassifiers)) {
      ASSIGN_OR_RETURN(c.labels, SequenceClassificationLabels(config));
    }
  }
  return c;
}

}  // namespace attnserve
