#include "engine/models/classifier_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/status_macros.h"
#include "engine/models/bert_kernels.h"
#include "engine/ops/activation.h"

namespace attnserve {

absl::StatusOr<ClassifierHead> ClassifierHead::Load(const SafetensorsArchive& w, const std::string& prefix,
                                                    const BertConfig& config, Kind kind) {
  ClassifierHead head;
  head.hidden_ = config.hidden_size;
  head.num_labels_ = static_cast<int>(config.labels.size());
  head.relu_ = kind == Kind::kDistilBert;
  head.modern_ = kind == Kind::kModernBert;
  head.gelu_ = kind == Kind::kDeberta || kind == Kind::kElectra;
  const int64_t d = config.hidden_size;
  const int64_t labels = head.num_labels_;
  std::string dense = prefix + "pooler.dense";
  std::string out = "classifier";
  if (kind == Kind::kRoberta || kind == Kind::kElectra) {
    dense = "classifier.dense";
    out = "classifier.out_proj";
  } else if (kind == Kind::kDistilBert) {
    dense = "pre_classifier";
  } else if (kind == Kind::kModernBert) {
    dense = "head.dense";
  } else if (kind == Kind::kDeberta) {
    dense = "pooler.dense";
  }
  ASSIGN_OR_RETURN(head.pooler_w_, w.LoadWithShape(dense + ".weight", {d, d}, DType::kF32));
  if (head.modern_ && !config.modern.classifier_bias) {
    head.pooler_b_ = Tensor::Zeros({d});
  } else {
    ASSIGN_OR_RETURN(head.pooler_b_, w.LoadWithShape(dense + ".bias", {d}, DType::kF32));
  }
  if (head.modern_) {
    head.mean_ = config.modern.classifier_mean;
    head.eps_ = config.layer_norm_eps;
    ASSIGN_OR_RETURN(head.norm_g_, w.LoadWithShape("head.norm.weight", {d}, DType::kF32));
    if (config.modern.norm_bias) {
      ASSIGN_OR_RETURN(head.norm_b_, w.LoadWithShape("head.norm.bias", {d}, DType::kF32));
    } else {
      head.norm_b_ = Tensor::Zeros({d});
    }
  }
  ASSIGN_OR_RETURN(head.classifier_w_, w.LoadWithShape(out + ".weight", {labels, d}, DType::kF32));
  ASSIGN_OR_RETURN(head.classifier_b_, w.LoadWithShape(out + ".bias", {labels}, DType::kF32));
  return head;
}

void ClassifierHead::Logits(const float* rows, int n, float* out) const {
  const int d = hidden_;
  std::vector<float> first(rows, rows + d);
  if (mean_) {
    // ModernBERT's classifier_pooling "mean": the float sum over the tokens / n.
    std::fill(first.begin(), first.end(), 0.0f);
    for (int t = 0; t < n; ++t) {
      for (int j = 0; j < d; ++j) first[j] += rows[int64_t{t} * d + j];
    }
    for (int j = 0; j < d; ++j) first[j] /= static_cast<float>(n);
  }
  std::vector<float> pooled(d);
  const float* pw = pooler_w_.f32();
  for (int i = 0; i < d; ++i) {
    float acc = pooler_b_.f32()[i];
    for (int j = 0; j < d; ++j) acc += pw[int64_t{i} * d + j] * first[j];
    pooled[i] = acc;
  }
  if (gelu_) {
    ApplyActivationScalar(Activation::kGeluErf, pooled.data(), d);
  } else if (modern_) {
    ApplyActivationScalar(Activation::kGeluErf, pooled.data(), d);
    bert_internal::AddLayerNorm(pooled.data(), nullptr, norm_g_.f32(), norm_b_.f32(), 1, d, eps_);
  } else {
    for (float& v : pooled) v = relu_ ? std::max(v, 0.0f) : std::tanh(v);
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
                              classifier_b_.bytes() + norm_g_.bytes() + norm_b_.bytes());
}

}  // namespace attnserve
