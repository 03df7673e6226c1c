#include "engine/models/bert_kernels.h"

#include <immintrin.h>

#include <cmath>

#include "engine/core/cpu_features.h"
#include "engine/core/half.h"
#include "engine/core/q8_0.h"

namespace attnserve::bert_internal {
namespace {

// Two-pass mean / variance in float, as PyTorch's CPU LayerNorm computes.
void LayerNormRowScalar(float* x, const float* r, const float* g, const float* b, int d, float eps) {
  if (r != nullptr) {
    for (int i = 0; i < d; ++i) x[i] += r[i];
  }
  float mean = 0;
  for (int i = 0; i < d; ++i) mean += x[i];
  mean /= d;
  float var = 0;
  for (int i = 0; i < d; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= d;
  const float inv = 1.0f / std::sqrt(var + eps);
  for (int i = 0; i < d; ++i) x[i] = (x[i] - mean) * inv * g[i] + b[i];
}

float HorizontalSum(__m256 v) __attribute__((target("avx2,fma")));
float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) void LayerNormRowAvx2(float* x, const float* r, const float* g,
                                                          const float* b, int d, float eps) {
  const int d8 = d & ~7;
  __m256 sum = _mm256_setzero_ps();
  for (int i = 0; i < d8; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (r != nullptr) {
      v = _mm256_add_ps(v, _mm256_loadu_ps(r + i));
      _mm256_storeu_ps(x + i, v);
    }
    sum = _mm256_add_ps(sum, v);
  }
  float mean = HorizontalSum(sum);
  for (int i = d8; i < d; ++i) {
    if (r != nullptr) x[i] += r[i];
    mean += x[i];
  }
  mean /= d;
  const __m256 vmean = _mm256_set1_ps(mean);
  __m256 sq = _mm256_setzero_ps();
  for (int i = 0; i < d8; i += 8) {
    __m256 c = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    sq = _mm256_fmadd_ps(c, c, sq);
  }
  float var = HorizontalSum(sq);
  for (int i = d8; i < d; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= d;
  const float inv = 1.0f / std::sqrt(var + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int i = 0; i < d8; i += 8) {
    __m256 c = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmean), vinv);
    _mm256_storeu_ps(x + i, _mm256_fmadd_ps(c, _mm256_loadu_ps(g + i), _mm256_loadu_ps(b + i)));
  }
  for (int i = d8; i < d; ++i) x[i] = (x[i] - mean) * inv * g[i] + b[i];
}

}  // namespace

void AddLayerNorm(float* x, const float* residual, const float* gamma, const float* beta, int64_t rows, int d,
                  float eps) {
#pragma omp parallel for schedule(static) if (rows > 16)
  for (int64_t row = 0; row < rows; ++row) {
    float* xr = x + row * d;
    const float* rr = residual == nullptr ? nullptr : residual + row * d;
    if (CpuHasAvx2Fma()) {
      LayerNormRowAvx2(xr, rr, gamma, beta, d, eps);
    } else {
      LayerNormRowScalar(xr, rr, gamma, beta, d, eps);
    }
  }
}

void AddRow(const Tensor& table, int64_t row, float* out, bool first) {
  const int64_t d = table.dim(-1);
  if (table.dtype() == DType::kQ8_0) {
    // One row's Q8_0 blocks, dequantised (d is a multiple of 32).
    float values[kQ8_0BlockValues];
    const auto* src = static_cast<const std::byte*>(table.raw()) + DTypeBytes(DType::kQ8_0, row * d);
    for (int64_t i = 0; i < d; i += kQ8_0BlockValues) {
      DequantizeRowQ8_0(src + DTypeBytes(DType::kQ8_0, i), kQ8_0BlockValues, values);
      for (int j = 0; j < kQ8_0BlockValues; ++j) out[i + j] = first ? values[j] : out[i + j] + values[j];
    }
    return;
  }
  if (table.dtype() == DType::kF32) {
    const float* src = table.f32() + row * d;
    if (first) {
      for (int64_t i = 0; i < d; ++i) out[i] = src[i];
    } else {
      for (int64_t i = 0; i < d; ++i) out[i] += src[i];
    }
  } else {
    const uint16_t* src = table.u16() + row * d;
    const bool bf16 = table.dtype() == DType::kBF16;
    for (int64_t i = 0; i < d; ++i) {
      const float v = bf16 ? Bf16ToFloat(src[i]) : F16ToFloat(src[i]);
      out[i] = first ? v : out[i] + v;
    }
  }
}

}  // namespace attnserve::bert_internal
