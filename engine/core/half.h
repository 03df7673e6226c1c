// bf16 and IEEE f16 <-> f32 conversions. Scalar, inline, exact: bf16 rounds
// to nearest even and keeps NaN a NaN (plain truncation-with-carry would turn
// some NaN payloads into Inf). Array versions for bulk conversion at load
// time; hot kernels convert per tile with their own SIMD code.
#ifndef ATTNSERVE_ENGINE_CORE_HALF_H_
#define ATTNSERVE_ENGINE_CORE_HALF_H_

#include <cstdint>
#include <cstring>

namespace attnserve {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep the sign, force a quiet-NaN mantissa bit so it stays NaN.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

inline float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

inline float F16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;  // +-0
    } else {
      // Subnormal: normalise.
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // Inf / NaN
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return BitsToFloat(bits);
}

inline uint16_t FloatToF16(float f) {
  uint32_t u = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow (rounds to >= 65520) -> Inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: scale so that rounding happens in f32 hardware.
    // 0.5f * 2^-14 * ... : adding 0.5 aligns the f16 subnormal LSB with f32's LSB.
    float af = BitsToFloat(abs) + 0.5f;
    return sign | static_cast<uint16_t>(FloatBits(af) - 0x3f000000u);
  }
  // Normal: rebias exponent, round mantissa to nearest even.
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
  return sign | static_cast<uint16_t>(abs >> 13);
}

inline void ConvertBf16ToF32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFloat(src[i]);
}
inline void ConvertF32ToBf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToBf16(src[i]);
}
inline void ConvertF16ToF32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = F16ToFloat(src[i]);
}
inline void ConvertF32ToF16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToF16(src[i]);
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_HALF_H_
