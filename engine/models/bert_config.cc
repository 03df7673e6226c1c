#include "engine/models/bert_config.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"

namespace attnserve {

absl::StatusOr<BertConfig> ParseBertConfig(const HfConfig& config) {
  const std::string& path = config.path();
  if (config.model_type() != "bert") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": model_type \"", config.model_type(), "\" is not supported by the encoder (bert)"));
  }
  BertConfig c;
  ASSIGN_OR_RETURN(int64_t hidden, config.Int("hidden_size", 1, 1 << 16));
  ASSIGN_OR_RETURN(int64_t layers, config.Int("num_hidden_layers", 1, 1024));
  ASSIGN_OR_RETURN(int64_t heads, config.Int("num_attention_heads", 1, 1024));
  ASSIGN_OR_RETURN(int64_t inter, config.Int("intermediate_size", 1, 1 << 18));
  ASSIGN_OR_RETURN(int64_t vocab, config.Int("vocab_size", 1, 1 << 24));
  ASSIGN_OR_RETURN(int64_t positions, config.Int("max_position_embeddings", 1, 1 << 20));
  ASSIGN_OR_RETURN(int64_t types, config.IntOr("type_vocab_size", 2, 1, 1 << 16));
  ASSIGN_OR_RETURN(double eps, config.DoubleOr("layer_norm_eps", 1e-12));
  ASSIGN_OR_RETURN(std::string act, config.StringOr("hidden_act", "gelu"));
  ASSIGN_OR_RETURN(std::string pos_type, config.StringOr("position_embedding_type", "absolute"));
  if (hidden % heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_size ", hidden,
                                                   " is not a multiple of num_attention_heads ", heads));
  }
  if (act != "gelu") {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_act \"", act, "\" is not supported (gelu)"));
  }
  if (pos_type != "absolute") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": position_embedding_type \"", pos_type, "\" is not supported (absolute)"));
  }
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": layer_norm_eps ", eps, " is outside (0, 1)"));
  }
  c.hidden_size = static_cast<int>(hidden);
  c.num_layers = static_cast<int>(layers);
  c.num_heads = static_cast<int>(heads);
  c.intermediate_size = static_cast<int>(inter);
  c.vocab_size = static_cast<int>(vocab);
  c.max_positions = static_cast<int>(positions);
  c.type_vocab_size = static_cast<int>(types);
  c.layer_norm_eps = static_cast<float>(eps);
  return c;
}

}  // namespace attnserve
