#include "engine/models/norms.h"

#include <cmath>

#include "engine/core/parallel.h"

namespace attnserve {

// Below this many elements a parallel region costs more than it saves (and
// on a busy machine a descheduled OpenMP thread stalls every barrier).
constexpr int64_t kParallelMinElems = 1 << 15;

// Sums in double: the reference implementations (PyTorch) reduce in a
// different order, and double keeps our result within float rounding of theirs.
void RmsNorm(const float* x, const float* weight, int64_t rows, int dim, float eps, float* y) {
  ParallelFor(rows, rows * dim >= kParallelMinElems, [&](int64_t r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double ss = 0.0;
    for (int i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
    for (int i = 0; i < dim; ++i) yr[i] = xr[i] * inv * weight[i];
  });
}

void LayerNorm(const float* x, const float* weight, const float* bias, int64_t rows, int dim,
               float eps, float* y) {
  ParallelFor(rows, rows * dim >= kParallelMinElems, [&](int64_t r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0.0;
    for (int i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / dim;
    double var = 0.0;
    for (int i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / dim + eps));
    const float m = static_cast<float>(mean);
    for (int i = 0; i < dim; ++i) {
      yr[i] = (xr[i] - m) * inv * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
    }
  });
}

}  // namespace attnserve
