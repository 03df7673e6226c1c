#include "engine/models/jina_bert.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/renamed_tensors.h"
#include "engine/models/bert_views.h"

namespace attnserve {

absl::Status ReadJinaBertConfig(const HfConfig& config, BertConfig& c) {
  const std::string& path = config.path();
  ASSIGN_OR_RETURN(std::string ff, config.StringOr("feed_forward_type", "original"));
  if (ff != "geglu") {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": feed_forward_type \"", ff, "\" is not supported with ALiBi positions (geglu: jina-embeddings-v2)"));
  }
  RETURN_IF_ERROR(RefuseClassificationHeads(config, "JinaBERT embedding models are"));
  c.alibi = true;
  c.gate_activation = Activation::kGeluErf;  // nn.GELU() on the first half
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> JinaBertWeightsAsBert(const SafetensorsArchive& weights,
                                                                          const BertConfig& config) {
  const std::string prefix = PrefixBefore(weights, "embeddings.word_embeddings.weight");
  RenamedTensors views(weights);
  const int64_t d = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  // BERT's own names, kept.
  auto same = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return views.Add(prefix + name, shape, name);
  };
  RETURN_IF_ERROR(AddBertEmbeddingTables(views, prefix, config));
  RETURN_IF_ERROR(same("embeddings.LayerNorm.weight", {d}));
  RETURN_IF_ERROR(same("embeddings.LayerNorm.bias", {d}));
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string l = absl::StrCat("encoder.layer.", i, ".");
    for (const char* proj : {"attention.self.query", "attention.self.key", "attention.self.value",
                             "attention.output.dense"}) {
      RETURN_IF_ERROR(same(absl::StrCat(l, proj, ".weight"), {d, d}));
      RETURN_IF_ERROR(same(absl::StrCat(l, proj, ".bias"), {d}));
    }
    RETURN_IF_ERROR(same(l + "attention.output.LayerNorm.weight", {d}));
    RETURN_IF_ERROR(same(l + "attention.output.LayerNorm.bias", {d}));
    // gated_layers [2I, D]: the gate's rows (gelu applies to them), then up's.
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.gated_layers.weight", {2 * inner, d}, l + "intermediate.gate.weight",
                              0, 2));
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.gated_layers.weight", {2 * inner, d}, l + "intermediate.dense.weight",
                              1, 2));
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.wo.weight", {d, inner}, l + "output.dense.weight"));
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.wo.bias", {d}, l + "output.dense.bias"));
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.layernorm.weight", {d}, l + "output.LayerNorm.weight"));
    RETURN_IF_ERROR(views.Add(prefix + l + "mlp.layernorm.bias", {d}, l + "output.LayerNorm.bias"));
  }
  return std::move(views).Finish();
}

}  // namespace attnserve
