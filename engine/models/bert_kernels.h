// The element-wise pieces of the BERT forward that are not GEMMs: embedding
// gather, residual add + LayerNorm. Row-parallel with OpenMP; AVX2+FMA
// versions chosen at run time where the CPU has them.
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_KERNELS_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_KERNELS_H_

#include <cstdint>

#include "engine/core/tensor.h"

namespace attnserve::bert_internal {

// x[rows, d] = LayerNorm(x + residual) * gamma + beta (residual may be null).
void AddLayerNorm(float* x, const float* residual, const float* gamma, const float* beta, int64_t rows, int d,
                  float eps);

// Converts one row of a f32 / bf16 / f16 / q8_0 table into f32 and adds it to `out`
// (first == true: assigns instead).
void AddRow(const Tensor& table, int64_t row, float* out, bool first);

}  // namespace attnserve::bert_internal

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_KERNELS_H_
