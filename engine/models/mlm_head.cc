#include "engine/models/mlm_head.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
  MlmHead head(std::move(t));
  head.hidden_ = static_cast<int>(d);
  head.vocab_ = static_cast<int>(v);
  head.eps_ = config.layer_norm_eps;  // DistilBERT's is 1e-12 like its other norms
  ASSIGN_OR_RETURN(head.norm_g_, w.LoadWithShape(norm + ".weight", {d}, DType::kF32));
  ASSIGN_OR_RETURN(head.norm_b_, w.LoadWithShape(norm + ".bias", {d}, DType::kF32));

  // Saved checkpoints tie the decoder to the word embeddings and keep one copy.
  const std::string decoder_name =
      w.Find(decoder) != nullptr ? decoder : absl::StrCat(prefix, "embeddings.word_embeddings.weight");
  ASSIGN_OR_RETURN(Tensor dw, w.LoadWithShape(decoder_name, {v, d}, DType::kF32));
  ASSIGN_OR_RETURN(Tensor db, w.LoadWithShape(decoder_bias, {v}, DType::kF32));
  // A block: about a third of a layer's multiply-adds per token (4 D^2 for
  // attention's projections, 2 D I for the feed-forward), in rows of 64.
  const int64_t third_of_layer = (4 * d * d + 2 * d * config.intermediate_size) / 3;
  head.block_rows_ = static_cast<int>(std::clamp<int64_t>((third_of_layer / d + 63) / 64 * 64, 256, v));
  for (int64_t start = 0; start < v; start += head.block_rows_) {
    const int64_t rows = std::min<int64_t>(head.block_rows_, v - start);
    Tensor bw = Tensor::Empty({rows, d});
    Tensor bb = Tensor::Empty({rows});
    std::memcpy(bw.f32(), dw.f32() + start * d, sizeof(float) * rows * d);
    std::memcpy(bb.f32(), db.f32() + start, sizeof(float) * rows);
    ASSIGN_OR_RETURN(Linear block, Linear::Create(bw, &bb, DType::kF32, Activation::kNone, Linear::Kernel::kAuto,
                                                  precision));
    head.blocks_.push_back(std::move(block));
  }
  return head;
}

absl::Status MlmHead::Transform(const float* hidden, int64_t n, float* x) const {
  RETURN_IF_ERROR(transform_.Forward(hidden, n, x));
  bert_internal::AddLayerNorm(x, nullptr, norm_g_.f32(), norm_b_.f32(), n, hidden_, eps_);
  return absl::OkStatus();
}

absl::Status MlmHead::AccumulateBlock(const SpladePoolingConfig& pooling, int block, const float* x, int64_t n,
                                      float* const* row_out) const {
  const Linear& decoder = blocks_[block];
  const int64_t first = int64_t{block} * block_rows_;
  const int width = static_cast<int>(decoder.out_features());
  Tensor logits = Tensor::Empty({std::min<int64_t>(n, kRowsPerChunk), width});
  for (int64_t start = 0; start < n; start += kRowsPerChunk) {
    const int64_t rows = std::min<int64_t>(kRowsPerChunk, n - start);
    RETURN_IF_ERROR(decoder.Forward(x + start * hidden_, rows, logits.f32()));
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = logits.f32() + r * width;
      float* out = row_out[start + r] + first;
      for (int k = 0; k < width; ++k) {
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
  int64_t bytes = transform_.weight_bytes() + static_cast<int64_t>(norm_g_.bytes() + norm_b_.bytes());
  for (const Linear& b : blocks_) bytes += b.weight_bytes();
  return bytes;
}

int64_t MlmHead::ScratchBytes() const {
  return static_cast<int64_t>(sizeof(float)) * kRowsPerChunk * block_rows_;
}

}  // namespace attnserve
