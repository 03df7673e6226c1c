#include "engine/formats/ggml_dequantize.h"

#include <algorithm>
#include <cstring>

#include "engine/core/half.h"
#include "engine/core/parallel.h"
#include "engine/core/q8_0.h"

namespace attnserve {
namespace {

// Elements per "super-block" of the K-quants and IQ4_XS.
constexpr int kQK = 256;

float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToFloat(h);
}

uint32_t U32At(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The non-linear 4-bit grid of IQ4_NL and IQ4_XS (ggml-common.h kvalues_iq4nl).
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Q4_0: f16 d, 16 bytes of nibbles; element j is the low nibble of byte j,
// element j + 16 its high nibble; x = d * (q - 8).
void Q4_0(const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_1: f16 d, f16 m, nibbles as Q4_0; x = d * q + m.
void Q4_1(const uint8_t* b, float* y) {
  const float d = HalfAt(b), m = HalfAt(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// Q5_0: f16 d, 32 high bits (bit i for element i), nibbles as Q4_0;
// x = d * (q - 16).
void Q5_0(const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  const uint32_t qh = U32At(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + 16] = d * static_cast<float>(hi - 16);
  }
}

// Q5_1: f16 d, f16 m, high bits and nibbles as Q5_0; x = d * q + m.
void Q5_1(const uint8_t* b, float* y) {
  const float d = HalfAt(b), m = HalfAt(b + 2);
  const uint32_t qh = U32At(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + 16] = d * static_cast<float>(hi) + m;
  }
}

// Q8_0: f16 d, 32 int8; x = d * q.
void Q8_0(const uint8_t* b, float* y) { DequantizeRowQ8_0(reinterpret_cast<const std::byte*>(b), 32, y); }

// IQ4_NL: f16 d, nibbles as Q4_0 indexing the non-linear grid.
void Iq4Nl(const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4Values[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4Values[qs[j] >> 4]);
  }
}

// Q2_K: 16 scale bytes (low nibble the scale, high the min of a 16-element
// sub-block), 64 bytes of 2-bit quants, f16 d, f16 dmin. Element
// h*128 + s*32 + l (h < 2, s < 4, l < 32) is bits 2s of byte h*32 + l;
// x = d * scale * q - dmin * min.
void Q2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = HalfAt(b + 80), dmin = HalfAt(b + 82);
  // Loops in element order: h, s, then two 16-element sub-blocks t.
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      for (int t = 0; t < 2; ++t) {
        const uint8_t sc = scales[h * 8 + s * 2 + t];
        const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
        const uint8_t* q = qs + h * 32 + t * 16;
        float* out = y + h * 128 + s * 32 + t * 16;
        for (int l = 0; l < 16; ++l) out[l] = dl * static_cast<float>((q[l] >> (2 * s)) & 3) - ml;
      }
    }
  }
}

// Q3_K: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes packing
// sixteen 6-bit scales (offset 32), f16 d. Element h*128 + s*32 + l takes
// bits 2s of byte h*32 + l and bit h*4 + s of hmask[l]; a clear high bit
// subtracts 4; x = d * scale * q.
void Q3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = HalfAt(b + 108);
  float scale[16];
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (sc[j] & 0x0F) : (sc[j - 8] >> 4);
    const int high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
    scale[j] = static_cast<float>((low | (high << 4)) - 32);
  }
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      const int bit = h * 4 + s;
      for (int t = 0; t < 2; ++t) {
        const float dl = d * scale[h * 8 + s * 2 + t];
        float* out = y + h * 128 + s * 32 + t * 16;
        for (int l = t * 16; l < t * 16 + 16; ++l) {
          int q = (qs[h * 32 + l] >> (2 * s)) & 3;
          if (((hmask[l] >> bit) & 1) == 0) q -= 4;
          out[l - t * 16] = dl * static_cast<float>(q);
        }
      }
    }
  }
}

// The eight 6-bit scales and mins of Q4_K and Q5_K, packed in 12 bytes
// (ggml-quants.c get_scale_min_k4).
void ScaleMinK4(const uint8_t* p, int j, float* scale, float* min) {
  if (j < 4) {
    *scale = static_cast<float>(p[j] & 0x3F);
    *min = static_cast<float>(p[j + 4] & 0x3F);
  } else {
    *scale = static_cast<float>((p[j + 4] & 0x0F) | ((p[j - 4] >> 6) << 4));
    *min = static_cast<float>((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
  }
}

// Q4_K and Q5_K: f16 d, f16 dmin, 12 scale bytes, then (Q5_K only) 32
// bytes of fifth bits, then 128 bytes of nibbles. Element c*64 + h*32 + l
// (c < 4, h < 2) is nibble h of byte c*32 + l, in sub-block j = 2c + h, and
// takes bit j of qh[l] as its fifth bit; x = d * scale * q - dmin * min.
void ScaleMinK(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = HalfAt(b), dmin = HalfAt(b + 2);
  const uint8_t* scales = b + 4;
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    ScaleMinK4(scales, j, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    const int c = j / 2, h = j % 2;
    for (int l = 0; l < 32; ++l) {
      int q = (qs[c * 32 + l] >> (4 * h)) & 0x0F;
      if (qh != nullptr) q |= ((qh[l] >> j) & 1) << 4;
      y[j * 32 + l] = dl * static_cast<float>(q) - ml;
    }
  }
}

void Q4_K(const uint8_t* b, float* y) { ScaleMinK(b, nullptr, b + 16, y); }
void Q5_K(const uint8_t* b, float* y) { ScaleMinK(b, b + 16, b + 48, y); }

// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8
// scales, f16 d. Element h*128 + k*64 + l (l < 64) has nibble k of byte
// h*64 + l; element h*128 + s*32 + l (l < 32) bits 2s of byte 128 + h*32
// + l; x = d * scale * (q - 32).
void Q6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = HalfAt(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* lo = ql + h * 64;
    const uint8_t* hi = qh + h * 32;
    const int8_t* sc = scales + h * 8;
    float* out = y + h * 128;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((lo[l] & 0x0F) | (((hi[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((lo[l + 32] & 0x0F) | (((hi[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((lo[l] >> 4) | (((hi[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((lo[l + 32] >> 4) | (((hi[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      out[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      out[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      out[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// IQ4_XS: f16 d, 16 bits of scale highs (2 per 32-element sub-block), 4
// bytes of scale lows (a nibble each), 128 bytes of grid indices; element
// j*32 + h*16 + l is nibble h of byte j*16 + l; x = d * (scale - 32) *
// grid[q].
void Iq4Xs(const uint8_t* b, float* y) {
  const float d = HalfAt(b);
  uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, 2);
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 8; ++j) {
    const int low = (scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
    const int high = (scales_h >> (2 * j)) & 3;
    const float dl = d * static_cast<float>((low | (high << 4)) - 32);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 16; ++l) {
        y[j * 32 + h * 16 + l] = dl * static_cast<float>(kIq4Values[(qs[j * 16 + l] >> (4 * h)) & 0x0F]);
      }
    }
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

struct BlockDecoder {
  BlockFn fn = nullptr;
  int block_size = 0;
  int block_bytes = 0;
};

BlockDecoder DecoderFor(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: return {Q4_0, 32, 18};
    case GgmlType::kQ4_1: return {Q4_1, 32, 20};
    case GgmlType::kQ5_0: return {Q5_0, 32, 22};
    case GgmlType::kQ5_1: return {Q5_1, 32, 24};
    case GgmlType::kQ8_0: return {Q8_0, 32, 34};
    case GgmlType::kIQ4_NL: return {Iq4Nl, 32, 18};
    case GgmlType::kQ2_K: return {Q2_K, kQK, 84};
    case GgmlType::kQ3_K: return {Q3_K, kQK, 110};
    case GgmlType::kQ4_K: return {Q4_K, kQK, 144};
    case GgmlType::kQ5_K: return {Q5_K, kQK, 176};
    case GgmlType::kQ6_K: return {Q6_K, kQK, 210};
    case GgmlType::kIQ4_XS: return {Iq4Xs, kQK, 136};
    default: return {};
  }
}

}  // namespace

bool CanDequantizeGgml(GgmlType type) { return DecoderFor(type).fn != nullptr; }

void DequantizeGgml(GgmlType type, const std::byte* src, float* dst, int64_t n) {
  const BlockDecoder dec = DecoderFor(type);
  const auto* p = reinterpret_cast<const uint8_t*>(src);
  // A 7B model's weights are billions of values: split over the engine's
  // threads (load happens before any request runs).
  constexpr int64_t kChunkBlocks = 256;
  const int64_t blocks = n / dec.block_size;
  const int64_t chunks = (blocks + kChunkBlocks - 1) / kChunkBlocks;
  ParallelFor(chunks, n >= kParallelMinMacs, [&](int64_t c) {
    const int64_t end = std::min(blocks, (c + 1) * kChunkBlocks);
    for (int64_t b = c * kChunkBlocks; b < end; ++b) dec.fn(p + b * dec.block_bytes, dst + b * dec.block_size);
  });
}

}  // namespace attnserve
