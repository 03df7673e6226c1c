// JinaBERT from a Hugging Face directory (jina-embeddings-v2-small-en,
// -base-en, -base-de, -base-es, -base-zh: `model_type` "bert" with
// `position_embedding_type` "alibi", Jina's remote code): BERT's post-norm
// layers and names with ALiBi attention biases in place of a position table
// (BertConfig::alibi) and a GeGLU feed-forward (mlp.gated_layers [2I, D]
// without bias: gelu(first half) * second half; mlp.wo; mlp.layernorm).
#ifndef ATTNSERVE_ENGINE_MODELS_JINA_BERT_H_
#define ATTNSERVE_ENGINE_MODELS_JINA_BERT_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

// The JinaBERT settings of a BERT config whose position_embedding_type is
// "alibi": ALiBi, feed_forward_type "geglu" (others refused naming the
// key), no classification head (JinaBertForSequenceClassification, the
// jina-reranker-v1 models, is refused: none is checked here).
absl::Status ReadJinaBertConfig(const HfConfig& config, BertConfig& c);

// The checkpoint's tensors under BERT's names, mlp.gated_layers' halves as
// the gate (first) and up (second). Views into `weights`, which must outlive
// the result; errors name the checkpoint's tensor.
absl::StatusOr<std::unique_ptr<SafetensorsArchive>> JinaBertWeightsAsBert(const SafetensorsArchive& weights,
                                                                          const BertConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_JINA_BERT_H_
