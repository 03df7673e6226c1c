// f32 → bf16 rounding of activation rows, for the bf16 oneDNN products of
// MatmulPrecision::kBf16 on bf16-stored weights (oneDNN's AMX kernels take
// bf16 sources only: with an f32 source and bf16 weights it falls back to
// its f32 AVX-512 kernel). Bit-exact with FloatToBf16 (round to nearest
// even, NaN kept NaN); AVX-512F lanes when the CPU has them, split over
// the OpenMP threads when large, else the scalar loop.
#ifndef ATTNSERVE_ENGINE_OPS_BF16_ROWS_H_
#define ATTNSERVE_ENGINE_OPS_BF16_ROWS_H_

#include <cstdint>

namespace attnserve {

// dst[i] = FloatToBf16(src[i]) for i in [0, n).
void RoundRowsToBf16(const float* src, uint16_t* dst, int64_t n);

// The same one value at a time (tests compare the two).
void RoundRowsToBf16Scalar(const float* src, uint16_t* dst, int64_t n);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_BF16_ROWS_H_
