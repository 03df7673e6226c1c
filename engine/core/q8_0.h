// llama.cpp's Q8_0 blocks (ggml-common.h's block_q8_0): 32 values as an f16
// scale d then 32 int8 codes q, value = d · q, 34 bytes. The engine holds
// them two ways: as a Tensor's rows (dtype kQ8_0, a GGUF's own bytes: what
// the loaders hand over, so a Q8_0 file is never expanded) and as packed
// panels (engine/ops/packed_gemm.h, what the kernels read). Both quantise
// through QuantizeQ8_0Block, so f32 weights give the same codes either way.
#ifndef ATTNSERVE_ENGINE_CORE_Q8_0_H_
#define ATTNSERVE_ENGINE_CORE_Q8_0_H_

#include <cstddef>
#include <cstdint>

namespace attnserve {

inline constexpr int kQ8_0BlockValues = 32;
inline constexpr int kQ8_0BlockBytes = 34;

// Quantises v[0, n) (n ≤ 32) as ggml's quantize_row_q8_0_ref: d = max|v| /
// 127 (its f16 bits returned), codes[t] = round(v[t] / d); codes[n, 32) = 0.
uint16_t QuantizeQ8_0Block(const float* v, int n, int8_t codes[kQ8_0BlockValues]);

// n values (a multiple of 32) at src as Q8_0 blocks at dst, and back.
void QuantizeRowQ8_0(const float* src, int64_t n, std::byte* dst);
void DequantizeRowQ8_0(const std::byte* src, int64_t n, float* dst);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_Q8_0_H_
