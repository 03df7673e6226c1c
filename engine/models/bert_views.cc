#include "engine/models/bert_views.h"

#include "engine/core/status_macros.h"

namespace attnserve {

absl::Status AddBertEmbeddingTables(RenamedTensors& views, const std::string& prefix, const BertConfig& config) {
  const int64_t d = config.hidden_size;
  RETURN_IF_ERROR(views.Add(prefix + "embeddings.word_embeddings.weight", {config.vocab_size, d},
                            "embeddings.word_embeddings.weight"));
  if (config.type_vocab_size > 0) {
    RETURN_IF_ERROR(views.Add(prefix + "embeddings.token_type_embeddings.weight", {config.type_vocab_size, d},
                              "embeddings.token_type_embeddings.weight"));
  }
  return absl::OkStatus();
}

}  // namespace attnserve
