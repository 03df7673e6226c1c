// The sequence-classification head of Hugging Face's
// BertForSequenceClassification, what a cross-encoder (reranker) or a text
// classifier answers with:
//
//   logits = classifier(tanh(pooler(hidden[first token])))
//
// pooler: [D, D] + bias ("bert.pooler.dense"), classifier: [labels, D] +
// bias ("classifier"). Dropout is inactive at inference. The head is a few
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

namespace attnserve {

class ClassifierHead {
 public:
  // Reads `<prefix>pooler.dense.{weight,bias}` and `classifier.{weight,bias}`;
  // errors name the file, the tensor and both shapes.
  static absl::StatusOr<ClassifierHead> Load(const SafetensorsArchive& weights, const std::string& prefix,
                                             int hidden_size, int num_labels);

  int num_labels() const { return num_labels_; }
  // out[num_labels] = the logits of one sequence whose first-token hidden
  // state is cls[hidden_size].
  void Logits(const float* cls, float* out) const;
  int64_t weight_bytes() const;

 private:
  int hidden_ = 0;
  int num_labels_ = 0;
  Tensor pooler_w_, pooler_b_;          // [D, D], [D]
  Tensor classifier_w_, classifier_b_;  // [labels, D], [labels]
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_CLASSIFIER_HEAD_H_
