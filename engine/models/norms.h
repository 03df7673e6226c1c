// Row-wise normalisations of decoder blocks, computed per row (no cross-row
// reduction: a row's result does not depend on the batch around it).
#ifndef ATTNSERVE_ENGINE_MODELS_NORMS_H_
#define ATTNSERVE_ENGINE_MODELS_NORMS_H_

#include <cstdint>

namespace attnserve {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for rows r < rows of `dim`.
// y may alias x.
void RmsNorm(const float* x, const float* weight, int64_t rows, int dim, float eps, float* y);

// y[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias (bias may be null).
// y may alias x.
void LayerNorm(const float* x, const float* weight, const float* bias, int64_t rows, int dim,
               float eps, float* y);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_NORMS_H_
