#include "engine/models/classifier_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/status_macros.h"

namespace attnserve {

absl::StatusOr<ClassifierHead> ClassifierHead::Load(const SafetensorsArchive& w, const std::string& prefix,
                                                    int hidden_size, int num_labels, Kind kind) {
  ClassifierHead head;
  head.hidden_ = hidden_size;
  head.num_labels_ = num_labels;
  head.relu_ = kind == Kind::kDistilBert;
  const int64_t d = hidden_size;
  std::string dense = prefix + "pooler.dense";
  std::string out = "classifier";
  if (kind == Kind::kRoberta) {
    dense = "classifier.dense";
    out = "classifier.out_proj";
  } else if (kind == Kind::kDistilBert) {
    dense = "pre_classifier";
  }
  ASSIGN_OR_RETURN(head.pooler_w_, w.LoadWithShape(dense + ".weight", {d, d}, DType::kF32));
  ASSIGN_OR_RETURN(head.pooler_b_, w.LoadWithShape(dense + ".bias", {d}, DType::kF32));
  ASSIGN_OR_RETURN(head.classifier_w_, w.LoadWithShape(out + ".weight", {num_labels, d}, DType::kF32));
  ASSIGN_OR_RETURN(head.classifier_b_, w.LoadWithShape(out + ".bias", {num_labels}, DType::kF32));
  return head;
}

void ClassifierHead::Logits(const float* cls, float* out) const {
  const int d = hidden_;
  std::vector<float> pooled(d);
  const float* pw = pooler_w_.f32();
  for (int i = 0; i < d; ++i) {
    float acc = pooler_b_.f32()[i];
    for (int j = 0; j < d; ++j) acc += pw[int64_t{i} * d + j] * cls[j];
    pooled[i] = relu_ ? std::max(acc, 0.0f) : std::tanh(acc);
  }
  const float* cw = classifier_w_.f32();
  for (int k = 0; k < num_labels_; ++k) {
    float acc = classifier_b_.f32()[k];
    for (int j = 0; j < d; ++j) acc += cw[int64_t{k} * d + j] * pooled[j];
    out[k] = acc;
  }
}

int64_t ClassifierHead::weight_bytes() const {
  return static_cast<int64_t>(pooler_w_.bytes() + pooler_b_.bytes() + classifier_w_.bytes() +
                              classifier_b_.bytes());
}

}  // namespace attnserve
