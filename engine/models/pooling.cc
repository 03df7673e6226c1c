#include "engine/models/pooling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace attnserve {

absl::StatusOr<PoolingMode> PoolingModeFromName(const std::string& name) {
  if (name == "mean") return PoolingMode::kMean;
  if (name == "cls") return PoolingMode::kCls;
  if (name == "lasttoken") return PoolingMode::kLast;
  if (name == "max") return PoolingMode::kMax;
  if (name == "splade") return PoolingMode::kSplade;
  return absl::InvalidArgumentError(
      absl::StrCat("pooling \"", name, "\" is not supported (mean, cls, lasttoken, max, splade)"));
}

const char* PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kModelDefault: return "model_default";
    case PoolingMode::kMean: return "mean";
    case PoolingMode::kCls: return "cls";
    case PoolingMode::kLast: return "lasttoken";
    case PoolingMode::kMax: return "max";
    case PoolingMode::kNone: return "none";
    case PoolingMode::kSplade: return "splade";
  }
  return "unknown";
}

void PoolTokens(PoolingMode mode, const float* hidden, int n, int d, float* out) {
  switch (mode) {
    case PoolingMode::kCls:
      std::copy(hidden, hidden + d, out);
      return;
    case PoolingMode::kLast:
      std::copy(hidden + int64_t{n - 1} * d, hidden + int64_t{n} * d, out);
      return;
    case PoolingMode::kMax:
      std::copy(hidden, hidden + d, out);
      for (int t = 1; t < n; ++t) {
        for (int i = 0; i < d; ++i) out[i] = std::max(out[i], hidden[int64_t{t} * d + i]);
      }
      return;
    default: {
      // Mean over valid tokens, accumulated in double.
      std::vector<double> sum(d, 0.0);
      for (int t = 0; t < n; ++t) {
        for (int i = 0; i < d; ++i) sum[i] += hidden[int64_t{t} * d + i];
      }
      for (int i = 0; i < d; ++i) out[i] = static_cast<float>(sum[i] / n);
      return;
    }
  }
}

void L2Normalize(float* x, int d) {
  double sq = 0;
  for (int i = 0; i < d; ++i) sq += double{x[i]} * x[i];
  const double norm = std::max(std::sqrt(sq), 1e-12);
  for (int i = 0; i < d; ++i) x[i] = static_cast<float>(x[i] / norm);
}

}  // namespace attnserve
