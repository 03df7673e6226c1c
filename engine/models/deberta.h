// DeBERTa-v2 / v3 from a Hugging Face directory (`model_type` "deberta-v2":
// deberta-v3-xsmall ... -large, mdeberta-v3-base, and the cross-encoders and
// rerankers fine-tuned from them, such as the NLI cross-encoders and
// mxbai-rerank-*-v1): BERT's post-norm layers (`query_proj`, `key_proj`,
// `value_proj` for BERT's query / key / value) with disentangled attention
// (He et al.): every layer's scores gain a content-to-position and a
// position-to-content term read from one table of relative position
// embeddings (deberta_attention.h), and the scores are scaled by
// 1 / sqrt(head_dim · (1 + the terms used)). A sequence classifier's head
// is ContextPooler (dense, GELU on the first token) and the classifier.
#ifndef ATTNSERVE_ENGINE_MODELS_DEBERTA_H_
#define ATTNSERVE_ENGINE_MODELS_DEBERTA_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/models/bert_config.h"

namespace attnserve {

// Whether `model_type` is DeBERTa-v2's.
bool IsDebertaV2ModelType(const std::string& model_type);

// config.json as DebertaV2Config reads it (relative_attention, pos_att_type
// as a list or "p2c|c2p", position_buckets, max_relative_positions,
// share_att_key, norm_rel_ebd, position_biased_input; its defaults where a
// key is missing). Refused naming the key: a convolution layer
// (conv_kernel_size > 0: deberta-v2-xlarge / -xxlarge), embedding_size or
// attention_head_size other than the hidden sizes, pos_att_type entries
// other than c2p and p2c, an activation other than gelu, a pooler of
// another width.
absl::StatusOr<BertConfig> ParseDebertaV2Config(const HfConfig& config);

// transformers' make_log_bucket_position for one relative position
// (query index - key index): exact within bucket_size / 2, logarithmic
// beyond up to max_position (float32, as torch computes it).
int DebertaLogBucketPosition(int relative_position, int bucket_size, int max_position);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_DEBERTA_H_
