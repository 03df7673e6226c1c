#include "engine/attention/head8_decode_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "engine/attention/avx2_math.h"
#include "engine/attention/kv_rows.h"

namespace attnserve::attention_internal {
namespace {

#define ATTN_AVX2 __attribute__((target("avx2,fma")))

std::atomic<bool> head8_disabled{false};

constexpr int kHeadDim = 8;
// Keys per online-softmax step: the scores of a chunk sit on the stack
// (8 rows x 136 floats = 4.3 KiB), and one rescale of the register-resident
// outputs per chunk is nothing against ~100 keys of work.
constexpr int kChunkKeys = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

ATTN_AVX2 inline float HorizontalMax(__m256 x) {
  __m128 v = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  v = _mm_max_ps(v, _mm_movehl_ps(v, v));
  v = _mm_max_ss(v, _mm_movehdup_ps(v));
  return _mm_cvtss_f32(v);
}

ATTN_AVX2 inline float HorizontalSum(__m256 x) {
  __m128 v = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  v = _mm_add_ss(v, _mm_movehdup_ps(v));
  return _mm_cvtss_f32(v);
}

// R = num_rows rounded up to 1, 2, 4 or 8; rows >= num_rows are padding
// (no visible keys, never written out). kAcc independent accumulators per
// output row: R * kAcc = 8 FMAs in flight per key group, enough to cover
// the FMA latency without spilling.
template <int R>
ATTN_AVX2 void Head8Job(const FlashRow* rows, int num_rows, const KvSource& src, float scale) {
  constexpr int kAcc = R <= 2 ? 4 : (R == 4 ? 2 : 1);
  KvRun runs[kChunkKeys];
  // +8: a run's last group of 8 scores may run past its count (and the
  // chunk's end); the excess is overwritten by the next run or masked.
  alignas(32) float s[R][kChunkKeys + 8];
  __m256 q[R];
  __m256 o[R][kAcc];
  float m[R], l[R];
  int limit[R], begin[R];
  int max_limit = 0;
  int first = std::numeric_limits<int>::max();  // the earliest key a real row sees
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int r = 0; r < R; ++r) {
    const bool real = r < num_rows;
    q[r] = real ? _mm256_mul_ps(_mm256_loadu_ps(rows[r].q), vscale) : _mm256_setzero_ps();
    limit[r] = real ? std::max(rows[r].key_limit, 0) : 0;
    begin[r] = real ? std::max(rows[r].key_begin, 0) : 0;
    max_limit = std::max(max_limit, limit[r]);
    if (real) first = std::min(first, begin[r]);
    m[r] = kNegInf;
    l[r] = 0.0f;
    for (int a = 0; a < kAcc; ++a) o[r][a] = _mm256_setzero_ps();
  }
  const KvRowAddress kv = KvRowAddress::For(src);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);

  // A sliding window's rows start at their first visible key, not at 0.
  for (int start = std::min(first, max_limit); start < max_limit; start += kChunkKeys) {
    const int end = std::min(start + kChunkKeys, max_limit), count = end - start;
    const int num_runs = kv.Collect(start, end, runs);
    // Q·K, 8 keys at a time: s[r][key] = q[r] · k[key].
    for (int i = 0, pos = start; i < num_runs; pos += runs[i].count, ++i) {
      const KvRun& run = runs[i];
      float* col = &s[0][0] + (pos - start);
      for (int j = 0; j < run.count; j += 8) {
        __m256 kr[8];
        const std::byte* k0 = run.k + j * kv.k_step;
        if (j + 8 <= run.count) {
#pragma GCC unroll 8
          for (int t = 0; t < 8; ++t) kr[t] = _mm256_loadu_ps(reinterpret_cast<const float*>(k0 + t * kv.k_step));
        } else {  // a run's last keys: repeat its last row (those scores are overwritten or masked)
#pragma GCC unroll 8
          for (int t = 0; t < 8; ++t)
            kr[t] = _mm256_loadu_ps(reinterpret_cast<const float*>(k0 + std::min(t, run.count - 1 - j) * kv.k_step));
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          __m256 p[8];
#pragma GCC unroll 8
          for (int t = 0; t < 8; ++t) p[t] = _mm256_mul_ps(q[r], kr[t]);
          _mm256_storeu_ps(col + r * (kChunkKeys + 8) + j, Reduce8(p));
        }
      }
    }

    // One online-softmax step per row: mask keys before the row's begin or
    // at or past its limit, exponentiate against the new running max,
    // rescale o and l.
    const int nv = (count + 7) / 8;
    for (int r = 0; r < R; ++r) {
      const __m256i visible_keys = _mm256_set1_epi32(std::clamp(limit[r] - start, 0, count));
      const __m256i hidden_keys = _mm256_set1_epi32(std::clamp(begin[r] - start, 0, count));
      __m256 vmax = neg_inf;
      for (int v = 0; v < nv; ++v) {
        const __m256i key = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * v));
        const __m256 visible = _mm256_castsi256_ps(
            _mm256_andnot_si256(_mm256_cmpgt_epi32(hidden_keys, key), _mm256_cmpgt_epi32(visible_keys, key)));
        const __m256 x = _mm256_blendv_ps(neg_inf, _mm256_load_ps(&s[r][8 * v]), visible);
        _mm256_store_ps(&s[r][8 * v], x);
        vmax = _mm256_max_ps(vmax, x);
      }
      const float m_new = std::max(m[r], HorizontalMax(vmax));
      if (m_new == kNegInf) {  // nothing visible yet: these keys weigh 0
        for (int v = 0; v < nv; ++v) _mm256_store_ps(&s[r][8 * v], _mm256_setzero_ps());
        continue;
      }
      const __m256 mv = _mm256_set1_ps(m_new);
      __m256 sum = _mm256_setzero_ps();
      for (int v = 0; v < nv; ++v) {
        const __m256 e = ExpNonPositive8(_mm256_sub_ps(_mm256_load_ps(&s[r][8 * v]), mv));
        _mm256_store_ps(&s[r][8 * v], e);
        sum = _mm256_add_ps(sum, e);
      }
      const float alpha = std::exp(m[r] - m_new);  // 0 on the first visible chunk (m = -inf)
      l[r] = l[r] * alpha + HorizontalSum(sum);
      m[r] = m_new;
      if (alpha != 1.0f) {
        const __m256 va = _mm256_set1_ps(alpha);
        for (int a = 0; a < kAcc; ++a) o[r][a] = _mm256_mul_ps(o[r][a], va);
      }
    }

    // P·V: o[r] += s[r][key] * v[key], kAcc keys at a time into kAcc
    // independent accumulators per row.
    for (int i = 0, col = 0; i < num_runs; col += runs[i].count, ++i) {
      const KvRun& run = runs[i];
      int j = 0;
      for (; j + kAcc <= run.count; j += kAcc) {
#pragma GCC unroll 4
        for (int a = 0; a < kAcc; ++a) {
          const __m256 vr = _mm256_loadu_ps(reinterpret_cast<const float*>(run.v + (j + a) * kv.v_step));
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r)
            o[r][a] = _mm256_fmadd_ps(_mm256_broadcast_ss(&s[r][col + j + a]), vr, o[r][a]);
        }
      }
      for (; j < run.count; ++j) {
        const __m256 vr = _mm256_loadu_ps(reinterpret_cast<const float*>(run.v + j * kv.v_step));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) o[r][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(&s[r][col + j]), vr, o[r][0]);
      }
    }
  }

  for (int r = 0; r < num_rows; ++r) {
    __m256 acc = o[r][0];
    for (int a = 1; a < kAcc; ++a) acc = _mm256_add_ps(acc, o[r][a]);
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    _mm256_storeu_ps(rows[r].out, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
  }
}

}  // namespace

bool Head8DecodeApplies(int head_dim, DType kv_dtype) {
  return head_dim == kHeadDim && kv_dtype == DType::kF32 && !head8_disabled.load(std::memory_order_relaxed);
}

void DisableHead8Decode(bool disable) { head8_disabled.store(disable, std::memory_order_relaxed); }

void RunHead8DecodeJob(const FlashRow* rows, int num_rows, const KvSource& src, float scale) {
  if (num_rows <= 1) {
    Head8Job<1>(rows, num_rows, src, scale);
  } else if (num_rows <= 2) {
    Head8Job<2>(rows, num_rows, src, scale);
  } else if (num_rows <= 4) {
    Head8Job<4>(rows, num_rows, src, scale);
  } else {
    Head8Job<8>(rows, num_rows, src, scale);
  }
}

}  // namespace attnserve::attention_internal
