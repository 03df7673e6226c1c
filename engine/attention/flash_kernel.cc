#include "engine/attention/flash_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/log/check.h"
#include "engine/attention/avx2_math.h"
#include "engine/attention/decode_kernel.h"
#include "engine/core/cpu_features.h"
#include "engine/core/half.h"

namespace attnserve::attention_internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int RoundUp(int x, int m) { return (x + m - 1) / m * m; }

// ---------------------------------------------------------------------------
// Micro-kernels. Shapes: Qp [rows_pad, d] (pre-scaled), Kt [d, kKeyTile]
// (K tile transposed, zero-padded to cols), S/P [rows_pad, kKeyTile],
// V rows at v + j * v_stride, O [rows_pad, d]. rows_pad % 4 == 0.
struct MicroKernels {
  void (*qk)(const float* qp, int rows_pad, const float* kt, int cols, int d, float* s);
  void (*pv)(const float* p, int rows_pad, const float* v, int64_t v_stride, int count, int d,
             float* o);
  // s[j] = exp(s[j] - m) for j < n (exp(-inf) = 0); returns the sum.
  float (*exp_sum)(float* s, int n, float m);
  float (*max)(const float* s, int n);
  bool simd;  // AVX2 or wider: the direct Q·K path and the vector row scaling apply
};

void QkScalar(const float* qp, int rows_pad, const float* kt, int cols, int d, float* s) {
  for (int r = 0; r < rows_pad; ++r) {
    float* srow = s + r * kKeyTile;
    for (int j = 0; j < cols; ++j) srow[j] = 0.0f;
    for (int p = 0; p < d; ++p) {
      float a = qp[r * d + p];
      const float* krow = kt + p * kKeyTile;
      for (int j = 0; j < cols; ++j) srow[j] += a * krow[j];
    }
  }
}

void PvScalar(const float* p, int rows_pad, const float* v, int64_t v_stride, int count, int d,
              float* o) {
  for (int r = 0; r < rows_pad; ++r) {
    float* orow = o + r * d;
    for (int j = 0; j < count; ++j) {
      float a = p[r * kKeyTile + j];
      if (a == 0.0f) continue;
      const float* vrow = v + j * v_stride;
      for (int c = 0; c < d; ++c) orow[c] += a * vrow[c];
    }
  }
}

float ExpSumScalar(float* s, int n, float m) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - m);
    sum += s[j];
  }
  return sum;
}

float MaxScalar(const float* s, int n) {
  float mx = kNegInf;
  for (int j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  return mx;
}

// --- AVX2 + FMA ---------------------------------------------------------------

__attribute__((target("avx2,fma"))) void QkAvx2(const float* qp, int rows_pad, const float* kt,
                                                 int cols, int d, float* s) {
  for (int r = 0; r < rows_pad; r += 4) {
    const float* q0 = qp + (r + 0) * d;
    const float* q1 = qp + (r + 1) * d;
    const float* q2 = qp + (r + 2) * d;
    const float* q3 = qp + (r + 3) * d;
    for (int c = 0; c < cols; c += 16) {
      __m256 a00 = _mm256_setzero_ps(), a01 = _mm256_setzero_ps();
      __m256 a10 = _mm256_setzero_ps(), a11 = _mm256_setzero_ps();
      __m256 a20 = _mm256_setzero_ps(), a21 = _mm256_setzero_ps();
      __m256 a30 = _mm256_setzero_ps(), a31 = _mm256_setzero_ps();
      const float* kp = kt + c;
      for (int p = 0; p < d; ++p, kp += kKeyTile) {
        __m256 b0 = _mm256_load_ps(kp);
        __m256 b1 = _mm256_load_ps(kp + 8);
        __m256 x = _mm256_broadcast_ss(q0 + p);
        a00 = _mm256_fmadd_ps(x, b0, a00);
        a01 = _mm256_fmadd_ps(x, b1, a01);
        x = _mm256_broadcast_ss(q1 + p);
        a10 = _mm256_fmadd_ps(x, b0, a10);
        a11 = _mm256_fmadd_ps(x, b1, a11);
        x = _mm256_broadcast_ss(q2 + p);
        a20 = _mm256_fmadd_ps(x, b0, a20);
        a21 = _mm256_fmadd_ps(x, b1, a21);
        x = _mm256_broadcast_ss(q3 + p);
        a30 = _mm256_fmadd_ps(x, b0, a30);
        a31 = _mm256_fmadd_ps(x, b1, a31);
      }
      float* s0 = s + (r + 0) * kKeyTile + c;
      _mm256_store_ps(s0, a00);
      _mm256_store_ps(s0 + 8, a01);
      _mm256_store_ps(s0 + kKeyTile, a10);
      _mm256_store_ps(s0 + kKeyTile + 8, a11);
      _mm256_store_ps(s0 + 2 * kKeyTile, a20);
      _mm256_store_ps(s0 + 2 * kKeyTile + 8, a21);
      _mm256_store_ps(s0 + 3 * kKeyTile, a30);
      _mm256_store_ps(s0 + 3 * kKeyTile + 8, a31);
    }
  }
}

__attribute__((target("avx2,fma"))) void PvAvx2(const float* p, int rows_pad, const float* v,
                                                 int64_t v_stride, int count, int d, float* o) {
  for (int r = 0; r < rows_pad; r += 4) {
    const float* p0 = p + (r + 0) * kKeyTile;
    const float* p1 = p0 + kKeyTile;
    const float* p2 = p1 + kKeyTile;
    const float* p3 = p2 + kKeyTile;
    float* o0 = o + (r + 0) * d;
    float* o1 = o0 + d;
    float* o2 = o1 + d;
    float* o3 = o2 + d;
    int c = 0;
    for (; c + 16 <= d; c += 16) {
      __m256 a00 = _mm256_loadu_ps(o0 + c), a01 = _mm256_loadu_ps(o0 + c + 8);
      __m256 a10 = _mm256_loadu_ps(o1 + c), a11 = _mm256_loadu_ps(o1 + c + 8);
      __m256 a20 = _mm256_loadu_ps(o2 + c), a21 = _mm256_loadu_ps(o2 + c + 8);
      __m256 a30 = _mm256_loadu_ps(o3 + c), a31 = _mm256_loadu_ps(o3 + c + 8);
      const float* vp = v + c;
      for (int j = 0; j < count; ++j, vp += v_stride) {
        __m256 b0 = _mm256_loadu_ps(vp);
        __m256 b1 = _mm256_loadu_ps(vp + 8);
        __m256 x = _mm256_broadcast_ss(p0 + j);
        a00 = _mm256_fmadd_ps(x, b0, a00);
        a01 = _mm256_fmadd_ps(x, b1, a01);
        x = _mm256_broadcast_ss(p1 + j);
        a10 = _mm256_fmadd_ps(x, b0, a10);
        a11 = _mm256_fmadd_ps(x, b1, a11);
        x = _mm256_broadcast_ss(p2 + j);
        a20 = _mm256_fmadd_ps(x, b0, a20);
        a21 = _mm256_fmadd_ps(x, b1, a21);
        x = _mm256_broadcast_ss(p3 + j);
        a30 = _mm256_fmadd_ps(x, b0, a30);
        a31 = _mm256_fmadd_ps(x, b1, a31);
      }
      _mm256_storeu_ps(o0 + c, a00);
      _mm256_storeu_ps(o0 + c + 8, a01);
      _mm256_storeu_ps(o1 + c, a10);
      _mm256_storeu_ps(o1 + c + 8, a11);
      _mm256_storeu_ps(o2 + c, a20);
      _mm256_storeu_ps(o2 + c + 8, a21);
      _mm256_storeu_ps(o3 + c, a30);
      _mm256_storeu_ps(o3 + c + 8, a31);
    }
    for (; c < d; c += 8) {  // d % 8 == 0 on this path
      __m256 a0 = _mm256_loadu_ps(o0 + c), a1 = _mm256_loadu_ps(o1 + c);
      __m256 a2 = _mm256_loadu_ps(o2 + c), a3 = _mm256_loadu_ps(o3 + c);
      const float* vp = v + c;
      for (int j = 0; j < count; ++j, vp += v_stride) {
        __m256 b = _mm256_loadu_ps(vp);
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p0 + j), b, a0);
        a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p1 + j), b, a1);
        a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(p2 + j), b, a2);
        a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(p3 + j), b, a3);
      }
      _mm256_storeu_ps(o0 + c, a0);
      _mm256_storeu_ps(o1 + c, a1);
      _mm256_storeu_ps(o2 + c, a2);
      _mm256_storeu_ps(o3 + c, a3);
    }
  }
}

__attribute__((target("avx2,fma"))) float ExpSumAvx2(float* s, int n, float m) {
  __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
  if (j < n) {
    alignas(32) float tail[8];
    for (int t = 0; t < 8; ++t) tail[t] = j + t < n ? s[j + t] - m : kNegInf;
    _mm256_store_ps(tail, ExpNonPositive8(_mm256_load_ps(tail)));
    for (int t = 0; j + t < n; ++t) {
      s[j + t] = tail[t];
      sum += tail[t];
    }
  }
  return sum;
}

__attribute__((target("avx2,fma"))) float MaxAvx2(const float* s, int n) {
  __m256 acc = _mm256_set1_ps(kNegInf);
  int j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(s + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float mx = lanes[0];
  for (int t = 1; t < 8; ++t) mx = std::max(mx, lanes[t]);
  for (; j < n; ++j) mx = std::max(mx, s[j]);
  return mx;
}


// Sums of four 8-lane accumulators: {sum(a0), sum(a1), sum(a2), sum(a3)}.
__attribute__((target("avx2,fma"))) inline __m128 Hsum4(__m256 a0, __m256 a1, __m256 a2,
                                                          __m256 a3) {
  __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

template <bool kBf16>
__attribute__((target("avx2,fma"))) inline __m256 LoadK(const std::byte* k, int64_t off) {
  if constexpr (kBf16) {
    return LoadBf16x8(reinterpret_cast<const uint16_t*>(k) + off);
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(k) + off);
  }
}

// Writes 4 row sums into column j of the S tile.
__attribute__((target("avx2,fma"))) inline void StoreCol(float* s, int j, __m128 sums) {
  alignas(16) float r[4];
  _mm_store_ps(r, sums);
  s[j] = r[0];
  s[kKeyTile + j] = r[1];
  s[2 * kKeyTile + j] = r[2];
  s[3 * kKeyTile + j] = r[3];
}

// S for at most 4 query rows, reading K rows in place (no transpose): the
// decode case, where packing K would cost more than the 4-row product itself.
template <bool kBf16>
__attribute__((target("avx2,fma"))) void QkDirectAvx2(const float* qp, const std::byte* k,
                                                       int64_t k_stride, int count, int d,
                                                       float* s) {
  const float* q0 = qp;
  const float* q1 = qp + d;
  const float* q2 = qp + 2 * d;
  const float* q3 = qp + 3 * d;
  int j = 0;
  // Two keys per pass: each Q load feeds two FMAs.
  for (; j + 2 <= count; j += 2) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    __m256 b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    for (int p = 0; p < d; p += 8) {
      const __m256 ka = LoadK<kBf16>(k, j * k_stride + p), kb = LoadK<kBf16>(k, (j + 1) * k_stride + p);
      __m256 x = _mm256_load_ps(q0 + p);
      a0 = _mm256_fmadd_ps(x, ka, a0);
      b0 = _mm256_fmadd_ps(x, kb, b0);
      x = _mm256_load_ps(q1 + p);
      a1 = _mm256_fmadd_ps(x, ka, a1);
      b1 = _mm256_fmadd_ps(x, kb, b1);
      x = _mm256_load_ps(q2 + p);
      a2 = _mm256_fmadd_ps(x, ka, a2);
      b2 = _mm256_fmadd_ps(x, kb, b2);
      x = _mm256_load_ps(q3 + p);
      a3 = _mm256_fmadd_ps(x, ka, a3);
      b3 = _mm256_fmadd_ps(x, kb, b3);
    }
    StoreCol(s, j, Hsum4(a0, a1, a2, a3));
    StoreCol(s, j + 1, Hsum4(b0, b1, b2, b3));
  }
  for (; j < count; ++j) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int p = 0; p < d; p += 8) {
      const __m256 kv = LoadK<kBf16>(k, j * k_stride + p);
      a0 = _mm256_fmadd_ps(_mm256_load_ps(q0 + p), kv, a0);
      a1 = _mm256_fmadd_ps(_mm256_load_ps(q1 + p), kv, a1);
      a2 = _mm256_fmadd_ps(_mm256_load_ps(q2 + p), kv, a2);
      a3 = _mm256_fmadd_ps(_mm256_load_ps(q3 + p), kv, a3);
    }
    StoreCol(s, j, Hsum4(a0, a1, a2, a3));
  }
}

// --- AVX-512F -------------------------------------------------------------
// The same outer products as the AVX2 kernels with 16-wide vectors and the
// register file AVX-512 has (32 vectors): R = 8 rows (4 for the last group
// when rows_pad % 8 == 4) x 32 columns, 2R accumulators; then 16 columns;
// then (P·V only, d % 16 == 8) one 8-wide column group.

// out[r * out_stride + 0..32) = Σ_p x[r * x_stride + p] · b[p * b_stride + 0..32)
// for R rows: x broadcast, b two vectors per p, 2R accumulators. Q·Kᵀ of
// the tiled path (x = Q rows, b = Kᵀ) and of the row-block path (x = K
// rows, b = Qᵀ) are both this.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void Outer32Avx512(
    const float* x, int64_t x_stride, const float* b, int64_t b_stride, int d, float* out,
    int64_t out_stride) {
  __m512 a[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
  for (int p = 0; p < d; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + p * b_stride);
    const __m512 b1 = _mm512_loadu_ps(b + p * b_stride + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * x_stride + p]);
      a[r][0] = _mm512_fmadd_ps(xv, b0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(xv, b1, a[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(out + r * out_stride, a[r][0]);
    _mm512_storeu_ps(out + r * out_stride + 16, a[r][1]);
  }
}

template <int R>
__attribute__((target("avx512f"))) inline void QkRowsAvx512(const float* q, const float* kt, int cols, int d,
                                                             float* s) {
  int c = 0;
  for (; c + 32 <= cols; c += 32) Outer32Avx512<R>(q, d, kt + c, kKeyTile, d, s + c, kKeyTile);
  for (; c < cols; c += 16) {  // cols % 16 == 0
    __m512 a[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a[r] = _mm512_setzero_ps();
    const float* kp = kt + c;
    for (int p = 0; p < d; ++p, kp += kKeyTile) {
      const __m512 b = _mm512_loadu_ps(kp);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) a[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r * d + p]), b, a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(s + r * kKeyTile + c, a[r]);
  }
}

__attribute__((target("avx512f"))) void QkAvx512(const float* qp, int rows_pad, const float* kt, int cols,
                                                  int d, float* s) {
  int r = 0;
  for (; r + 8 <= rows_pad; r += 8) QkRowsAvx512<8>(qp + r * d, kt, cols, d, s + r * kKeyTile);
  if (r < rows_pad) QkRowsAvx512<4>(qp + r * d, kt, cols, d, s + r * kKeyTile);  // rows_pad % 4 == 0
}

// O[r][:] += Σ_j P[r][j] · V[j][:] for R rows, with P[r][j] at
// p[r * kPRow + j * kPKey]: row-major tiles (kKeyTile, 1), or the row-block
// path's transposed ones (1, kRowBlock).
template <int R, int kPRow = kKeyTile, int kPKey = 1>
__attribute__((target("avx512f,avx2,fma"))) inline void PvRowsAvx512(const float* p, const float* v,
                                                                      int64_t v_stride, int count, int d,
                                                                      float* o) {
  int c = 0;
  for (; c + 32 <= d; c += 32) {
    __m512 a[R][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      a[r][0] = _mm512_loadu_ps(o + r * d + c);
      a[r][1] = _mm512_loadu_ps(o + r * d + c + 16);
    }
    const float* vp = v + c;
    for (int j = 0; j < count; ++j, vp += v_stride) {
      const __m512 b0 = _mm512_loadu_ps(vp);
      const __m512 b1 = _mm512_loadu_ps(vp + 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 x = _mm512_set1_ps(p[r * kPRow + j * kPKey]);
        a[r][0] = _mm512_fmadd_ps(x, b0, a[r][0]);
        a[r][1] = _mm512_fmadd_ps(x, b1, a[r][1]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(o + r * d + c, a[r][0]);
      _mm512_storeu_ps(o + r * d + c + 16, a[r][1]);
    }
  }
  for (; c + 16 <= d; c += 16) {
    __m512 a[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a[r] = _mm512_loadu_ps(o + r * d + c);
    const float* vp = v + c;
    for (int j = 0; j < count; ++j, vp += v_stride) {
      const __m512 b = _mm512_loadu_ps(vp);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) a[r] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * kPRow + j * kPKey]), b, a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(o + r * d + c, a[r]);
  }
  for (; c < d; c += 8) {  // d % 8 == 0 on this path
    __m256 a[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a[r] = _mm256_loadu_ps(o + r * d + c);
    const float* vp = v + c;
    for (int j = 0; j < count; ++j, vp += v_stride) {
      const __m256 b = _mm256_loadu_ps(vp);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + r * kPRow + j * kPKey), b, a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(o + r * d + c, a[r]);
  }
}

__attribute__((target("avx512f,avx2,fma"))) void PvAvx512(const float* p, int rows_pad, const float* v,
                                                           int64_t v_stride, int count, int d, float* o) {
  int r = 0;
  for (; r + 8 <= rows_pad; r += 8) PvRowsAvx512<8>(p + r * kKeyTile, v, v_stride, count, d, o + r * d);
  if (r < rows_pad) PvRowsAvx512<4>(p + r * kKeyTile, v, v_stride, count, d, o + r * d);
}

// exp(x) for x <= 0 on 16 lanes: ExpNonPositive8's steps, lane for lane
// (so the same values), in AVX-512, except that 2^n is applied with one
// vscalefps instead of building the exponent bits (three operations fewer;
// exact for the n >= -126 the keep mask lets through, as the multiply was).
__attribute__((target("avx512f"))) inline __m512 ExpNonPositive16(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GE_OQ);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(8.31302348524332e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.189097508788109e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667111217975616e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999922513961792e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(keep, p, n);
}

__attribute__((target("avx512f,avx2,fma"))) float ExpSumAvx512(float* s, int n, float m) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = ExpNonPositive16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
    _mm512_storeu_ps(s + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  float sum = _mm512_reduce_add_ps(acc);
  if (j < n) sum += ExpSumAvx2(s + j, n - j, m);
  return sum;
}

__attribute__((target("avx512f,avx2,fma"))) float MaxAvx512(const float* s, int n) {
  __m512 acc = _mm512_set1_ps(kNegInf);
  int j = 0;
  for (; j + 16 <= n; j += 16) acc = _mm512_max_ps(acc, _mm512_loadu_ps(s + j));
  float mx = _mm512_reduce_max_ps(acc);
  if (j < n) mx = std::max(mx, MaxAvx2(s + j, n - j));
  return mx;
}

constexpr MicroKernels kScalar{QkScalar, PvScalar, ExpSumScalar, MaxScalar, false};
constexpr MicroKernels kAvx2{QkAvx2, PvAvx2, ExpSumAvx2, MaxAvx2, true};
constexpr MicroKernels kAvx512{QkAvx512, PvAvx512, ExpSumAvx512, MaxAvx512, true};

std::atomic<bool> force_scalar{false};
std::atomic<bool> avx512_off{false};

bool Avx512KernelsEnabled() {
  return !avx512_off.load(std::memory_order_relaxed) && Avx2KernelsEnabled() && CpuHasAvx512F();
}

const MicroKernels& Select(int head_dim) {
  if (!Avx2KernelsEnabled() || head_dim % 8 != 0) return kScalar;
  return Avx512KernelsEnabled() ? kAvx512 : kAvx2;
}

__attribute__((target("avx2,fma"))) void ScaleRowAvx2(float* row, int d, float alpha) {
  const __m256 a = _mm256_set1_ps(alpha);
  for (int c = 0; c < d; c += 8) _mm256_storeu_ps(row + c, _mm256_mul_ps(a, _mm256_loadu_ps(row + c)));
}

// row[c] *= alpha for c < d; `avx2` only when d % 8 == 0.
void ScaleRow(float* row, int d, float alpha, bool avx2) {
  if (avx2) {
    ScaleRowAvx2(row, d, alpha);
  } else {
    for (int c = 0; c < d; ++c) row[c] *= alpha;
  }
}

// A tile of K/V rows: `count` rows starting at key position `start`.
// A tile of up to kKeyTile K/V rows starting at key position `start`, as
// segments of rows contiguous in memory (one segment for a dense head; one
// per block touched for a paged sequence, so small blocks still fill a tile).
struct Segment {
  const std::byte* k;
  const std::byte* v;
  int col;    // first column of the tile this segment fills
  int count;  // rows
};

struct Tile {
  Segment seg[kKeyTile];
  int num_segs = 0;
  int64_t k_stride = 0;  // elements between consecutive rows of a segment
  int64_t v_stride = 0;
  int count = 0;
};

void GetTile(const KvSource& src, int start, int limit, Tile& t) {
  const size_t es = DTypeSize(src.dtype);
  t.num_segs = 0;
  if (src.layout == nullptr) {
    t.count = std::min(kKeyTile, limit - start);
    t.k_stride = src.k_row_stride;
    t.v_stride = src.v_row_stride;
    t.seg[t.num_segs++] = {src.k + start * src.k_row_stride * es,
                           src.v + start * src.v_row_stride * es, 0, t.count};
    return;
  }
  const KvLayout& L = *src.layout;
  t.k_stride = t.v_stride = L.head_dim;
  const int end = std::min(limit, start + kKeyTile);
  int pos = start;
  while (pos < end) {
    const int block = pos / L.block_size, row = pos % L.block_size;
    const int n = std::min(L.block_size - row, end - pos);
    const std::byte* base = src.layer_base + int64_t{src.block_table[block]} * L.BlockBytes();
    t.seg[t.num_segs++] = {base + L.KOffset(src.kv_head, row) * es,
                           base + L.VOffset(src.kv_head, row) * es, pos - start, n};
    pos += n;
  }
  t.count = end - start;
}

// Asks the hardware to start loading a tile's K and V rows: paged blocks are
// scattered, so the streaming prefetchers cannot guess the next one.
void PrefetchTile(const Tile& t, DType dtype, int d) {
  const int64_t row_bytes = static_cast<int64_t>(d) * DTypeSize(dtype);
  const int64_t k_step = t.k_stride * DTypeSize(dtype), v_step = t.v_stride * DTypeSize(dtype);
  for (int g = 0; g < t.num_segs; ++g) {
    const Segment& sg = t.seg[g];
    for (int j = 0; j < sg.count; ++j) {
      for (int64_t b = 0; b < row_bytes; b += 64) {
        __builtin_prefetch(sg.k + j * k_step + b);
        __builtin_prefetch(sg.v + j * v_step + b);
      }
    }
  }
}

// o[c * o_stride + i] = r[i][c] for an 8x8 block held in 8 registers.
__attribute__((target("avx2,fma"), always_inline)) inline void Transpose8x8StoreAvx2(const __m256 (&r)[8],
                                                                                  float* o, int o_stride) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(o + 0 * o_stride, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(o + 1 * o_stride, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(o + 2 * o_stride, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(o + 3 * o_stride, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(o + 4 * o_stride, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(o + 5 * o_stride, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(o + 6 * o_stride, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(o + 7 * o_stride, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// dst[p * kKeyTile + j] = k[j * stride + p] for 8 keys j and p < d (d % 8
// == 0): 8x8 in-register transposes, the packing cost of short-head prefill.
__attribute__((target("avx2,fma"))) void Transpose8Avx2(const float* k, int64_t stride, int d,
                                                         float* dst) {
  for (int p = 0; p < d; p += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(k + i * stride + p);
    Transpose8x8StoreAvx2(r, dst + p * kKeyTile, kKeyTile);
  }
}

// Kt[p][j] = K[j][p] for j < count; zero for count <= j < cols.
void PackKt(const Tile& t, DType dtype, int d, int cols, float* kt) {
  for (int g = 0; g < t.num_segs; ++g) {
    const Segment& sg = t.seg[g];
    float* dst = kt + sg.col;
    if (dtype == DType::kF32) {
      const float* k = reinterpret_cast<const float*>(sg.k);
      int j = 0;
      if (d % 8 == 0 && Avx2KernelsEnabled()) {
        for (; j + 8 <= sg.count; j += 8) Transpose8Avx2(k + j * t.k_stride, t.k_stride, d, dst + j);
      }
      for (; j < sg.count; ++j) {
        const float* krow = k + j * t.k_stride;
        for (int p = 0; p < d; ++p) dst[p * kKeyTile + j] = krow[p];
      }
    } else {
      const uint16_t* k = reinterpret_cast<const uint16_t*>(sg.k);
      for (int j = 0; j < sg.count; ++j) {
        const uint16_t* krow = k + j * t.k_stride;
        for (int p = 0; p < d; ++p) dst[p * kKeyTile + j] = Bf16ToFloat(krow[p]);
      }
    }
  }
  for (int p = 0; p < d; ++p)
    for (int j = t.count; j < cols; ++j) kt[p * kKeyTile + j] = 0.0f;
}

// --- AVX-512, rows across the vector ----------------------------------------
// The prefill path for f32 K/V when every row's only mask is its key limit
// (padding lengths, causal): blocks of 32 query rows, and S held transposed
// (S^T[key][row], 16 rows per vector), so the softmax's row max, exp, row sum
// and rescale factors are all plain vector operations across 16 rows, with no
// horizontal reductions and no per-row loop; Q·K reads K rows in place (Q^T
// is packed once per block instead of Kᵀ once per tile); P·V reads P^T.
// Per block the key tiles stop at the block's own last visible key, so
// causal prefill skips the masked half per 32 rows.
constexpr int kRowBlock = 32;

// S^T[j][0..32) = Σ_p K[j][p] · Q^T[p][0..32) for the `count` keys of one segment,
// 8 at a time.
__attribute__((target("avx512f"))) void QkT(const float* qt, const float* k, int64_t k_stride, int count,
                                             int d, float* st) {
  int j = 0;
  for (; j + 8 <= count; j += 8)
    Outer32Avx512<8>(k + j * k_stride, k_stride, qt, kRowBlock, d, st + j * kRowBlock, kRowBlock);
  for (; j < count; ++j)
    Outer32Avx512<1>(k + j * k_stride, k_stride, qt, kRowBlock, d, st + j * kRowBlock, kRowBlock);
}

// qt[p * kRowBlock + i] = rows[i].q[p] * scale for 8 rows i and p < d
// (d % 8 == 0): 8x8 in-register transposes.
__attribute__((target("avx2,fma"))) void TransposeRows8Avx2(const FlashRow* rows, int d, float scale,
                                                             float* qt) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int p = 0; p < d; p += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = _mm256_mul_ps(sc, _mm256_loadu_ps(rows[i].q + p));
    Transpose8x8StoreAvx2(r, qt + p * kRowBlock, kRowBlock);
  }
}

// Rows this path takes: AVX-512, f32 K/V, d % 16 == 0, a block's worth of
// rows, and no mask but the key limits and an additive one on every row or
// none (MPNet's position bias).
bool RowsTSupported(const FlashRow* rows, int num_rows, int d, DType dtype) {
  if (!Avx512KernelsEnabled() || dtype != DType::kF32 || d % 16 != 0 || num_rows < 16) return false;
  for (int r = 0; r < num_rows; ++r) {
    if (rows[r].allow_row != nullptr || rows[r].key_allow != nullptr) return false;
    if ((rows[r].add_row != nullptr) != (rows[0].add_row != nullptr)) return false;
  }
  return true;
}

// The 16 rows (lanes) that see key `key`: begin <= key < limit.
__attribute__((target("avx512f"), always_inline)) inline __mmask16 VisibleRows(__m512i limit, __m512i begin,
                                                                              int key) {
  const __m512i k = _mm512_set1_epi32(key);
  return _mm512_cmpgt_epi32_mask(limit, k) & _mm512_cmple_epi32_mask(begin, k);
}

// `prefetch`: ask for each next tile ahead (the job's first block; later
// blocks find the tiles in cache).
__attribute__((target("avx512f,avx2,fma"))) void RunRowsTBlock(const FlashRow* rows, int n, const KvSource& src,
                                                                int d, float scale, bool prefetch,
                                                                FlashScratch& scratch) {
  float* qt = scratch.qp();  // [d][32]
  float* st = scratch.s();   // [kKeyTile][32]
  float* o = scratch.o();    // [32][d]
  alignas(64) int32_t limit[kRowBlock];
  alignas(64) int32_t begin[kRowBlock];
  int max_limit = 0;
  int min_limit = std::numeric_limits<int>::max();
  int min_begin = std::numeric_limits<int>::max();
  int max_begin = 0;
  for (int r = 0; r < kRowBlock; ++r) {
    // Padding rows (r >= n) see no key: their lanes stay at zero weight.
    limit[r] = r < n ? rows[r].key_limit : 0;
    begin[r] = r < n ? rows[r].key_begin : 0;
    max_limit = std::max(max_limit, limit[r]);
    if (r < n) {
      min_limit = std::min(min_limit, limit[r]);
      min_begin = std::min(min_begin, begin[r]);
      max_begin = std::max(max_begin, begin[r]);
    }
  }
  // The block's first tile starts at its earliest visible key (a window's
  // rows skip the keys before theirs).
  const int first = std::min(min_begin, max_limit);
  int r8 = 0;
  for (; r8 + 8 <= n; r8 += 8) TransposeRows8Avx2(rows + r8, d, scale, qt + r8);
  for (int r = r8; r < kRowBlock; ++r) {
    for (int p = 0; p < d; ++p) qt[p * kRowBlock + r] = r < n ? rows[r].q[p] * scale : 0.0f;
  }
  std::memset(o, 0, sizeof(float) * kRowBlock * d);
  __m512 m[2], l[2];
  __m512i lim[2], beg[2];
  for (int h = 0; h < 2; ++h) {
    m[h] = _mm512_set1_ps(kNegInf);
    l[h] = _mm512_setzero_ps();
    lim[h] = _mm512_load_si512(limit + 16 * h);
    beg[h] = _mm512_load_si512(begin + 16 * h);
  }
  alignas(64) float alpha[kRowBlock];
  Tile tiles[2];
  int cur = 0;
  if (max_limit > first) GetTile(src, first, max_limit, tiles[0]);
  for (int start = first; start < max_limit;) {
    const Tile& t = tiles[cur];
    if (start + t.count < max_limit) {
      GetTile(src, start + t.count, max_limit, tiles[cur ^ 1]);
      if (prefetch) PrefetchTile(tiles[cur ^ 1], src.dtype, d);
    }
    const int count = t.count;
    for (int g = 0; g < t.num_segs; ++g) {
      const Segment& sg = t.seg[g];
      QkT(qt, reinterpret_cast<const float*>(sg.k), t.k_stride, sg.count, d, st + sg.col * kRowBlock);
    }
    if (rows[0].add_row != nullptr) {
      // The additive mask onto the scaled scores (qt holds q * scale); a -inf
      // there gives that key zero weight through the exp below.
      for (int r = 0; r < n; ++r) {
        const float* add = rows[r].add_row + start;
        for (int j = 0; j < count; ++j) st[j * kRowBlock + r] += add[j];
      }
    }
    for (int h = 0; h < 2; ++h) {
      // Keys outside a row's [begin, limit) are masked (left out of the max,
      // zero weight after the exp); keys [open_lo, open_hi), inside every
      // row's range, need no mask. Four running maxima keep the loop off
      // vmaxps's latency chain.
      const int open_lo = std::clamp(max_begin - start, 0, count);
      const int open_hi = std::max(open_lo, std::clamp(min_limit - start, 0, count));
      __m512 mx[4];
      for (auto& v : mx) v = _mm512_set1_ps(kNegInf);
      const float* sh = st + 16 * h;
      int j = 0;
      for (; j < open_lo; ++j) {
        const __mmask16 vis = VisibleRows(lim[h], beg[h], start + j);
        mx[j & 3] = _mm512_mask_max_ps(mx[j & 3], vis, mx[j & 3], _mm512_loadu_ps(sh + j * kRowBlock));
      }
      for (; j + 4 <= open_hi; j += 4) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) mx[u] = _mm512_max_ps(mx[u], _mm512_loadu_ps(sh + (j + u) * kRowBlock));
      }
      for (; j < count; ++j) {
        if (j < open_hi) {
          mx[j & 3] = _mm512_max_ps(mx[j & 3], _mm512_loadu_ps(sh + j * kRowBlock));
        } else {
          const __mmask16 vis = VisibleRows(lim[h], beg[h], start + j);
          mx[j & 3] = _mm512_mask_max_ps(mx[j & 3], vis, mx[j & 3], _mm512_loadu_ps(sh + j * kRowBlock));
        }
      }
      const __m512 tmax = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
      const __m512 m_new = _mm512_max_ps(m[h], tmax);
      // A row with nothing visible yet keeps m = -inf; subtracting 0 there
      // keeps every exp at exp(-inf) = 0 instead of NaN.
      const __m512 m_use = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(m_new, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ),
                                                m_new, _mm512_setzero_ps());
      const __m512 a = ExpNonPositive16(_mm512_sub_ps(m[h], m_use));
      __m512 sums[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
      for (j = 0; j < count; ++j) {
        float* sp = st + j * kRowBlock + 16 * h;
        __m512 e = ExpNonPositive16(_mm512_sub_ps(_mm512_loadu_ps(sp), m_use));
        if (j < open_lo || j >= open_hi) e = _mm512_maskz_mov_ps(VisibleRows(lim[h], beg[h], start + j), e);
        _mm512_storeu_ps(sp, e);
        sums[j & 1] = _mm512_add_ps(sums[j & 1], e);
      }
      const __m512 sum = _mm512_add_ps(sums[0], sums[1]);
      l[h] = _mm512_fmadd_ps(l[h], a, sum);
      m[h] = m_new;
      _mm512_store_ps(alpha + 16 * h, a);
    }
    // O is still zero before the first tile: nothing to rescale.
    if (start > first) {
      for (int r = 0; r < n; ++r) {
        if (alpha[r] != 1.0f) ScaleRow(o + r * d, d, alpha[r], true);
      }
    }
    for (int g = 0; g < t.num_segs; ++g) {
      const Segment& sg = t.seg[g];
      const float* v = reinterpret_cast<const float*>(sg.v);
      const float* pt = st + sg.col * kRowBlock;
      int r = 0;
      for (; r + 8 <= n; r += 8) PvRowsAvx512<8, 1, kRowBlock>(pt + r, v, t.v_stride, sg.count, d, o + r * d);
      for (; r < n; r += 4) PvRowsAvx512<4, 1, kRowBlock>(pt + r, v, t.v_stride, sg.count, d, o + r * d);
    }
    start += count;
    cur ^= 1;
  }
  alignas(64) float lsum[kRowBlock];
  _mm512_store_ps(lsum, l[0]);
  _mm512_store_ps(lsum + 16, l[1]);
  for (int r = 0; r < n; ++r) {
    float* out = rows[r].out;
    if (lsum[r] > 0.0f) {
      const float inv = 1.0f / lsum[r];
      for (int c = 0; c < d; ++c) out[c] = o[r * d + c] * inv;
    } else {
      for (int c = 0; c < d; ++c) out[c] = 0.0f;
    }
  }
}

}  // namespace

void FlashScratch::Reserve(int max_rows, int head_dim) {
  // At least a row block of the rows-across-vector path (its Q^T, S^T and O).
  int rows_pad = RoundUp(std::max(max_rows, kRowBlock), 4);
  q_elems_ = int64_t{rows_pad} * head_dim;
  s_elems_ = int64_t{rows_pad} * kKeyTile;
  kt_elems_ = int64_t{head_dim} * kKeyTile;
  vf_elems_ = int64_t{kKeyTile} * head_dim;
  o_elems_ = int64_t{rows_pad} * head_dim;
  ml_elems_ = rows_pad;
  // Each part starts 32-byte aligned when every count is a multiple of 8.
  auto r8 = [](int64_t x) { return (x + 7) / 8 * 8; };
  q_elems_ = r8(q_elems_);
  o_elems_ = r8(o_elems_);
  ml_elems_ = r8(ml_elems_);
  int64_t total = q_elems_ + s_elems_ + kt_elems_ + vf_elems_ + o_elems_ + 2 * ml_elems_ + 8;
  if (capacity_ < total) {
    size_t bytes = static_cast<size_t>(total) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    CHECK(p != nullptr) << "out of memory for attention scratch (" << bytes << " bytes)";
    buf_.reset(p);
    capacity_ = total;
    bytes_ = static_cast<int64_t>(bytes);
  }
}

void FlashScratch::Free::operator()(float* p) const { std::free(p); }

void RunFlashJob(const FlashRow* rows, int num_rows, const KvSource& src, int d, float scale,
                 FlashScratch& scratch, float softcap) {
  // Few rows (decode): the bandwidth-bound path, K/V read once in place.
  if (softcap <= 0.0f && DecodeJobSupported(rows, num_rows, d, src.dtype)) {
    RunDecodeJob(rows, num_rows, src, d, scale);
    return;
  }
  if (softcap <= 0.0f && RowsTSupported(rows, num_rows, d, src.dtype)) {
    for (int b = 0; b < num_rows; b += kRowBlock) {
      // Dense K/V streams in order (the hardware prefetcher follows it);
      // paged blocks are scattered, so the job's first block asks ahead.
      RunRowsTBlock(rows + b, std::min(kRowBlock, num_rows - b), src, d, scale,
                    b == 0 && src.layout != nullptr, scratch);
    }
    return;
  }
  const MicroKernels& mk = Select(d);
  const int rows_pad = RoundUp(num_rows, 4);
  float* qp = scratch.qp();
  float* s = scratch.s();
  float* kt = scratch.kt();
  float* vf = scratch.vf();
  float* o = scratch.o();
  float* m = scratch.m();
  float* l = scratch.l();
  // S and Kt are 32-byte aligned (64-aligned base, part sizes multiples of 8
  // floats), as QkAvx2's aligned loads and stores need.
  const MicroKernels& k = mk;
  const bool use_direct = rows_pad == 4 && mk.simd;

  int max_limit = 0;
  int first = std::numeric_limits<int>::max();  // the earliest key any row sees
  for (int r = 0; r < num_rows; ++r) {
    const float* q = rows[r].q;
    for (int p = 0; p < d; ++p) qp[r * d + p] = q[p] * scale;
    max_limit = std::max(max_limit, rows[r].key_limit);
    first = std::min(first, rows[r].key_begin);
    m[r] = kNegInf;
    l[r] = 0.0f;
  }
  first = std::min(first, max_limit);
  std::memset(qp + num_rows * d, 0, sizeof(float) * (rows_pad - num_rows) * d);
  std::memset(o, 0, sizeof(float) * rows_pad * d);

  Tile tiles[2];
  int cur = 0;
  if (max_limit > first) GetTile(src, first, max_limit, tiles[0]);
  for (int start = first; start < max_limit;) {
    const Tile& t = tiles[cur];
    if (start + t.count < max_limit) {
      GetTile(src, start + t.count, max_limit, tiles[cur ^ 1]);
      PrefetchTile(tiles[cur ^ 1], src.dtype, d);
    }
    const int count = t.count;
    const int cols = RoundUp(count, 16);
    // Few rows (decode): dot products straight from the K rows. Otherwise
    // pack Kᵀ once per tile and run the 4x16 outer-product kernel.
    const bool direct = use_direct;
    if (!direct) {
      PackKt(t, src.dtype, d, cols, kt);
      k.qk(qp, rows_pad, kt, cols, d, s);
    } else {
      for (int g = 0; g < t.num_segs; ++g) {
        const Segment& sg = t.seg[g];
        if (src.dtype == DType::kF32) {
          QkDirectAvx2<false>(qp, sg.k, t.k_stride, sg.count, d, s + sg.col);
        } else {
          QkDirectAvx2<true>(qp, sg.k, t.k_stride, sg.count, d, s + sg.col);
        }
      }
    }
    if (src.dtype == DType::kBF16) {
      for (int g = 0; g < t.num_segs; ++g) {
        const Segment& sg = t.seg[g];
        const uint16_t* vb = reinterpret_cast<const uint16_t*>(sg.v);
        for (int j = 0; j < sg.count; ++j)
          ConvertBf16ToF32(vb + j * t.v_stride, vf + (sg.col + j) * d, d);
      }
    }
    bool any_live = false;
    for (int r = 0; r < rows_pad; ++r) {
      float* srow = s + r * kKeyTile;
      if (r >= num_rows) {
        std::memset(srow, 0, sizeof(float) * count);
        continue;
      }
      const FlashRow& row = rows[r];
      if (softcap > 0.0f) {
        for (int j = 0; j < count; ++j) srow[j] = softcap * std::tanh(srow[j] / softcap);
      }
      const int lim = std::clamp(row.key_limit - start, 0, count);
      const int beg = std::clamp(row.key_begin - start, 0, lim);
      for (int j = 0; j < beg; ++j) srow[j] = kNegInf;
      for (int j = lim; j < count; ++j) srow[j] = kNegInf;
      if (row.allow_row != nullptr) {
        const uint8_t* a = row.allow_row + start;
        for (int j = 0; j < lim; ++j)
          if (!a[j]) srow[j] = kNegInf;
      }
      if (row.key_allow != nullptr) {
        const uint8_t* a = row.key_allow + start;
        for (int j = 0; j < lim; ++j)
          if (!a[j]) srow[j] = kNegInf;
      }
      if (row.add_row != nullptr) {
        const float* a = row.add_row + start;
        for (int j = 0; j < lim; ++j) srow[j] += a[j];
      }
      const float tile_max = k.max(srow, count);
      if (tile_max == kNegInf) {  // nothing visible in this tile for this row
        std::memset(srow, 0, sizeof(float) * count);
        continue;
      }
      any_live = true;
      const float m_new = std::max(m[r], tile_max);
      const float alpha = m[r] == kNegInf ? 0.0f : std::exp(m[r] - m_new);
      const float sum = k.exp_sum(srow, count, m_new);
      l[r] = l[r] * alpha + sum;
      // A row's first live tile finds O still zero: nothing to rescale.
      if (m[r] != kNegInf && alpha != 1.0f) ScaleRow(o + r * d, d, alpha, mk.simd);
      m[r] = m_new;
    }
    if (any_live) {
      if (src.dtype == DType::kBF16) {
        k.pv(s, rows_pad, vf, d, count, d, o);
      } else {
        for (int g = 0; g < t.num_segs; ++g) {
          const Segment& sg = t.seg[g];
          k.pv(s + sg.col, rows_pad, reinterpret_cast<const float*>(sg.v), t.v_stride, sg.count,
               d, o);
        }
      }
    }
    start += count;
    cur ^= 1;
  }

  for (int r = 0; r < num_rows; ++r) {
    float* out = rows[r].out;
    if (l[r] > 0.0f) {
      const float inv = 1.0f / l[r];
      for (int c = 0; c < d; ++c) out[c] = o[r * d + c] * inv;
    } else {
      for (int c = 0; c < d; ++c) out[c] = 0.0f;
    }
  }
}

bool Avx2KernelsEnabled() { return !force_scalar.load(std::memory_order_relaxed) && CpuHasAvx2Fma(); }

const char* FlashKernelIsa() {
  return Avx512KernelsEnabled() ? "avx512" : Avx2KernelsEnabled() ? "avx2" : "scalar";
}

void ForceScalarFlashKernel(bool force) { force_scalar.store(force, std::memory_order_relaxed); }

void DisableAvx512FlashKernel(bool disable) { avx512_off.store(disable, std::memory_order_relaxed); }

}  // namespace attnserve::attention_internal
