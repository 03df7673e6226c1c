#include "engine/core/q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/half.h"

namespace attnserve {

uint16_t QuantizeQ8_0Block(const float* v, int n, int8_t codes[kQ8_0BlockValues]) {
  float amax = 0.0f;
  for (int t = 0; t < n; ++t) amax = std::max(amax, std::fabs(v[t]));
  // ggml divides by the f32 d, not by the f16 it stores: so do we, or a
  // file's codes would not come back as written.
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int t = 0; t < n; ++t) codes[t] = static_cast<int8_t>(static_cast<int>(std::roundf(v[t] * id)));
  for (int t = n; t < kQ8_0BlockValues; ++t) codes[t] = 0;
  return FloatToF16(d);
}

void QuantizeRowQ8_0(const float* src, int64_t n, std::byte* dst) {
  for (int64_t i = 0; i < n; i += kQ8_0BlockValues, dst += kQ8_0BlockBytes) {
    int8_t codes[kQ8_0BlockValues];
    const uint16_t d = QuantizeQ8_0Block(src + i, kQ8_0BlockValues, codes);
    std::memcpy(dst, &d, sizeof(d));
    std::memcpy(dst + 2, codes, sizeof(codes));
  }
}

void DequantizeRowQ8_0(const std::byte* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; i += kQ8_0BlockValues, src += kQ8_0BlockBytes) {
    uint16_t h;
    std::memcpy(&h, src, sizeof(h));
    const float d = F16ToFloat(h);
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int t = 0; t < kQ8_0BlockValues; ++t) dst[i + t] = d * static_cast<float>(q[t]);
  }
}

}  // namespace attnserve
