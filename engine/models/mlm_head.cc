#include "engine/models/mlm_head.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/models/bert_kernels.h"

namespace attnserve {

absl::StatusOr<MlmHead> MlmHead::Load(const SafetensorsArchive& w, const std::string& prefix,
                                      const BertConfig& config, MatmulPrecision precision) {
  const bool distil = config.family == EncoderFamily::kDistilBert;
  if (config.family != EncoderFamily::kBert && !distil) {
    return absl::InvalidArgumentError("a masked-language-model head is read for BERT and DistilBERT encoders only");
  }
  const int64_t d = config.hidden_size;
  const int64_t v = config.vocab_size;
  const std::string transform = distil ? "vocab_transform" : "cls.predictions.transform.dense";
  const std::string norm = distil ? "vocab_layer_norm" : "cls.predictions.transform.LayerNorm";
  const std::string decoder = distil ? "vocab_projector.weight" : "cls.predictions.decoder.weight";
  const std::string decoder_bias = distil ? "vocab_projector.bias" : "cls.predictions.bias";

  ASSIGN_OR_RETURN(Tensor tw, w.LoadWithShape(transform + ".weight", {d, d}, DType::kF32));
  ASSIGN_OR_RETURN(Tensor tb, w.LoadWithShape(transform + ".bias", {d}, DType::kF32));
  ASSIGN_OR_RETURN(Linear t, Linear::Create(tw, &tb, DType::kF32, Activation::kGeluErf, Linear::Kernel::kAuto,
                                            precision));
  // Saved checkpoints tie the decoder to the word embeddings and keep one copy.
  const std::string decoder_name =
      w.Find(decoder) != nullptr ? decoder : absl::StrCat(prefix, "embeddings.word_embeddings.weight");
  ASSIGN_OR_RETURN(Tensor dw, w.LoadWithShape(decoder_name, {v, d}, DType::kF32));
  ASSIGN_OR_RETURN(Tensor db, w.LoadWithShape(decoder_bias, {v}, DType::kF32));
  ASSIGN_OR_RETURN(Linear dec, Linear::Create(dw, &db, DType::kF32, Activation::kNone, Linear::Kernel::kAuto,
                                              precision));
  MlmHead head(std::move(t), std::move(dec));
  head.hidden_ = static_cast<int>(d);
  head.vocab_ = static_cast<int>(v);
  head.eps_ = config.layer_norm_eps;  // DistilBERT's is 1e-12 like its other norms
  ASSIGN_OR_RETURN(head.norm_g_, w.LoadWithShape(norm + ".weight", {d}, DType::kF32));
  ASSIGN_OR_RETURN(head.norm_b_, w.LoadWithShape(norm + ".bias", {d}, DType::kF32));
  return head;
}

absl::Status MlmHead::Accumulate(const SpladePoolingConfig& pooling, const float* hidden, int n,
                                 float* out) const {
  if (n <= 0) return absl::OkStatus();
  const int d = hidden_;
  const int v = vocab_;
  const int rows_max = std::min(n, kRowsPerChunk);
  Tensor x = Tensor::Empty({rows_max, d});
  Tensor logits = Tensor::Empty({rows_max, v});
  for (int start = 0; start < n; start += kRowsPerChunk) {
    const int rows = std::min(kRowsPerChunk, n - start);
    RETURN_IF_ERROR(transform_.Forward(hidden + int64_t{start} * d, rows, x.f32()));
    bert_internal::AddLayerNorm(x.f32(), nullptr, norm_g_.f32(), norm_b_.f32(), rows, d, eps_);
    RETURN_IF_ERROR(decoder_.Forward(x.f32(), rows, logits.f32()));
    for (int r = 0; r < rows; ++r) {
      const float* row = logits.f32() + int64_t{r} * v;
      for (int k = 0; k < v; ++k) {
        if (row[k] <= 0.0f) continue;  // relu: contributes 0
        float value = std::log1p(row[k]);
        if (pooling.double_log) value = std::log1p(value);
        out[k] = pooling.sum ? out[k] + value : std::max(out[k], value);
      }
    }
  }
  return absl::OkStatus();
}

int64_t MlmHead::weight_bytes() const {
  return transform_.weight_bytes() + decoder_.weight_bytes() + static_cast<int64_t>(norm_g_.bytes() + norm_b_.bytes());
}

int64_t MlmHead::ScratchBytes() const {
  return static_cast<int64_t>(sizeof(float)) * kRowsPerChunk * (hidden_ + vocab_);
}

}  // namespace attnserve
