#include "engine/models/deberta.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

// pos_att_type as DebertaV2Config reads it: a list, or one string of
// entries joined by "|", lower-cased.
absl::StatusOr<std::vector<std::string>> PositionAttentionTypes(const HfConfig& config) {
  const nlohmann::json& root = config.json();
  auto it = root.find("pos_att_type");
  std::vector<std::string> types;
  if (it == root.end() || it->is_null()) return types;
  if (it->is_string()) {
    for (absl::string_view part : absl::StrSplit(it->get<std::string>(), '|', absl::SkipWhitespace())) {
      types.push_back(absl::AsciiStrToLower(absl::StripAsciiWhitespace(part)));
    }
    return types;
  }
  if (it->is_array()) {
    for (const nlohmann::json& entry : *it) {
      if (!entry.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(config.path(), ": pos_att_type entry ", entry.dump(), " is not a string"));
      }
      types.push_back(entry.get<std::string>());
    }
    return types;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(config.path(), ": pos_att_type must be a list or a \"|\"-joined string, got ", it->dump()));
}

// An optional integer that must equal `expected` when present.
absl::Status RequireEqualIfSet(const HfConfig& config, const std::string& key, int64_t expected,
                               const std::string& why) {
  ASSIGN_OR_RETURN(int64_t value, config.IntOr(key, expected, INT32_MIN, INT32_MAX));
  if (value == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(config.path(), ": ", key, " ", value, " is not supported (", expected, ": ", why, ")"));
}

}  // namespace

bool IsDebertaV2ModelType(const std::string& model_type) { return model_type == "deberta-v2"; }

absl::StatusOr<BertConfig> ParseDebertaV2Config(const HfConfig& config) {
  const std::string& path = config.path();
  BertConfig c;
  c.family = EncoderFamily::kDebertaV2;
  RETURN_IF_ERROR(ReadBertSizes(config, /*distil=*/false, c));
  if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_size ", c.hidden_size,
                                                   " is not a multiple of num_attention_heads ", c.num_heads));
  }
  RETURN_IF_ERROR(RequireGelu(config, "hidden_act"));
  RETURN_IF_ERROR(RequireEqualIfSet(config, "embedding_size", c.hidden_size, "the hidden size"));
  RETURN_IF_ERROR(RequireEqualIfSet(config, "attention_head_size", c.head_dim(),
                                    "hidden_size / num_attention_heads"));
  RETURN_IF_ERROR(RequireEqualIfSet(config, "conv_kernel_size", 0,
                                    "no convolution layer; deberta-v2-xlarge's and -xxlarge's are not read"));
  ASSIGN_OR_RETURN(int64_t types, config.IntOr("type_vocab_size", 0, 0, 1 << 16));
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("layer_norm_eps", 1e-7));
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": layer_norm_eps ", eps, " is outside (0, 1)"));
  }
  c.type_vocab_size = static_cast<int>(types);
  c.layer_norm_eps = static_cast<float>(eps);

  DebertaConfig& d = c.deberta;
  ASSIGN_OR_RETURN(d.relative_attention, config.BoolOr("relative_attention", false));
  ASSIGN_OR_RETURN(d.position_biased_input, config.BoolOr("position_biased_input", true));
  ASSIGN_OR_RETURN(d.share_att_key, config.BoolOr("share_att_key", false));
  ASSIGN_OR_RETURN(std::vector<std::string> att_types, PositionAttentionTypes(config));
  for (const std::string& type : att_types) {
    if (type == "c2p") {
      d.c2p = true;
    } else if (type == "p2c") {
      d.p2c = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": pos_att_type entry \"", type, "\" is not supported (c2p, p2c)"));
    }
  }
  ASSIGN_OR_RETURN(int64_t buckets, config.IntOr("position_buckets", -1, INT32_MIN, 1 << 16));
  ASSIGN_OR_RETURN(int64_t max_relative, config.IntOr("max_relative_positions", -1, INT32_MIN, 1 << 20));
  d.position_buckets = buckets > 0 ? static_cast<int>(buckets) : 0;
  d.max_relative_positions = max_relative < 1 ? c.max_positions : static_cast<int>(max_relative);
  if (d.position_buckets > 0 && (d.position_buckets < 4 || d.max_relative_positions <= d.position_buckets / 2 + 1)) {
    // make_log_bucket_position divides by log((max_position - 1) / mid).
    return absl::InvalidArgumentError(absl::StrCat(path, ": position_buckets ", d.position_buckets,
                                                   " needs max_relative_positions (", d.max_relative_positions,
                                                   ") above position_buckets / 2 + 1 and at least 4 buckets"));
  }
  ASSIGN_OR_RETURN(std::string norm_rel, config.StringOr("norm_rel_ebd", "none"));
  for (absl::string_view part : absl::StrSplit(absl::AsciiStrToLower(norm_rel), '|', absl::SkipWhitespace())) {
    const absl::string_view name = absl::StripAsciiWhitespace(part);
    if (name == "layer_norm") {
      d.norm_rel_embeddings = true;
    } else if (name != "none") {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": norm_rel_ebd entry \"", name, "\" is not supported (layer_norm, none)"));
    }
  }
  if (!d.position_biased_input && !d.disentangled()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": position_biased_input is false and relative_attention with a pos_att_type is not set: "
                           "the model would have no positions"));
  }
  // Without a position table (position_biased_input false) a sequence could
  // run longer; the checkpoints' tokenizers stop at max_position_embeddings
  // (model_max_length), and so does the encoder.
  for (const std::string& architecture : config.architectures()) {
    if (architecture == "DebertaV2ForSequenceClassification") {
      ASSIGN_OR_RETURN(c.labels, SequenceClassificationLabels(config));
      RETURN_IF_ERROR(RequireGelu(config, "pooler_hidden_act"));
      RETURN_IF_ERROR(RequireEqualIfSet(config, "pooler_hidden_size", c.hidden_size,
                                        "ContextPooler's output is the hidden size"));
    }
  }
  if (c.labels.empty()) {
    RETURN_IF_ERROR(RefuseClassificationHeads(config, "DeBERTa-v2: sequence classifiers and embedders are read"));
  }
  return c;
}

int DebertaLogBucketPosition(int relative_position, int bucket_size, int max_position) {
  const int mid = bucket_size / 2;
  const int magnitude = std::abs(relative_position);
  if (magnitude <= mid) return relative_position;
  // float32 throughout, as torch evaluates it on a long tensor.
  const float ratio = static_cast<float>(magnitude) / static_cast<float>(mid);
  const float denominator = std::log(static_cast<float>(static_cast<double>(max_position - 1) / mid));
  const float scaled = std::log(ratio) / denominator * static_cast<float>(mid - 1);
  const int log_position = static_cast<int>(std::ceil(scaled)) + mid;
  return relative_position < 0 ? -log_position : log_position;
}

}  // namespace attnserve
