// What the BERT-family checkpoints read under BERT's names (Nomic BERT,
// GTE, JinaBERT) share: their word and token-type tables, which they all
// keep under BERT's own names.
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_VIEWS_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_VIEWS_H_

#include <string>

#include "absl/status/status.h"
#include "engine/formats/renamed_tensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

// `prefix`embeddings.word_embeddings.weight [vocab, D] and, where the
// config has a token-type table, `prefix`embeddings.token_type_embeddings
// .weight [types, D], under their names without the prefix.
absl::Status AddBertEmbeddingTables(RenamedTensors& views, const std::string& prefix, const BertConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_VIEWS_H_
