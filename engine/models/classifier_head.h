// The sequence-classification head of Hugging Face's
// BertForSequenceClassification, RobertaClassificationHead (XLM-R, RoBERTa,
// CamemBERT, MPNet), DistilBertForSequenceClassification and
// ModernBertForSequenceClassification, DebertaV2ForSequenceClassification and
// ElectraForSequenceClassification, what a cross-encoder (reranker) or a
// text classifier answers with:
//
//   logits = out(act(dense(hidden[first token])))
//   ModernBERT: out(LayerNorm(gelu(dense(hidden[first token] or the mean))))
//
// BERT: dense [D, D] + bias "bert.pooler.dense", out [labels, D] + bias
// "classifier", act tanh; RoBERTa: "classifier.dense" and
// "classifier.out_proj", tanh; DistilBERT: "pre_classifier" and
// "classifier", ReLU; DeBERTa-v2's ContextPooler: "pooler.dense" (outside
// the "deberta." prefix) and "classifier", GELU (erf);
// ElectraClassificationHead: RoBERTa's names, GELU (erf).
// Dropout is inactive at inference. The head is a few
// thousand multiply-adds per sequence beside the forward's millions, so it
// runs as plain f32 loops on the [CLS] row, with f32 weights whatever the
// encoder's storage dtype.
//
// Immutable after Load; Logits is const and thread-safe.
#ifndef ATTNSERVE_ENGINE_MODELS_CLASSIFIER_HEAD_H_
#define ATTNSERVE_ENGINE_MODELS_CLASSIFIER_HEAD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

class ClassifierHead {
 public:
  enum class Kind { kBertPooler, kRoberta, kDistilBert, kModernBert, kDeberta, kElectra };

  // BERT: reads `<prefix>pooler.dense.{weight,bias}` and
  // `classifier.{weight,bias}`; RoBERTa: `classifier.dense.*` and
  // `classifier.out_proj.*`; DistilBERT: `pre_classifier.*` and
  // `classifier.*`; DeBERTa: `pooler.dense.*` and `classifier.*`; ModernBERT: `head.dense.*` (bias if classifier_bias),
  // `head.norm.*` (bias if norm_bias) and `classifier.*`. The labels are
  // config.labels. Errors name the file, the tensor and both shapes.
  static absl::StatusOr<ClassifierHead> Load(const SafetensorsArchive& weights, const std::string& prefix,
                                             const BertConfig& config, Kind kind);

  int num_labels() const { return num_labels_; }
  // out[num_labels] = the logits of one sequence whose last hidden states
  // are rows[n, hidden_size] (the first row, or ModernBERT's
  // classifier_pooling "mean" of all).
  void Logits(const float* rows, int n, float* out) const;
  int64_t weight_bytes() const;

 private:
  int hidden_ = 0;
  int num_labels_ = 0;
  bool relu_ = false;  // DistilBERT's ReLU where the others have tanh
  bool gelu_ = false;  // DeBERTa's ContextPooler, ELECTRA's head: GELU (erf)
  // ModernBERT: gelu, then LayerNorm (norm_g_, norm_b_, eps_), over the
  // [CLS] row or the mean of the rows.
  bool modern_ = false;
  bool mean_ = false;
  float eps_ = 0;
  Tensor norm_g_, norm_b_;
  Tensor pooler_w_, pooler_b_;          // dense: [D, D], [D]
  Tensor classifier_w_, classifier_b_;  // out: [labels, D], [labels]
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_CLASSIFIER_HEAD_H_
