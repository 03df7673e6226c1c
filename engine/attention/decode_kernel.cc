#include "engine/attention/decode_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/attention/avx2_math.h"
#include "engine/attention/head8_decode_kernel.h"
#include "engine/attention/kv_rows.h"

namespace attnserve::attention_internal {
namespace {

#define ATTN_AVX2 __attribute__((target("avx2,fma")))

std::atomic<bool> decode_disabled{false};
std::atomic<DecodeVariant> decode_variant{DecodeVariant::kChunk64WideQk};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Keys per online-softmax step. kChunk64: large enough to amortise the
// separate rescaling pass over o. kBlockTiled: one 16-token KV block, so its
// V rows (8 KiB f32 at d = 128) stay in L1 across the column tiles of the
// register-tiled P·V, which folds the rescale into loading its accumulators.
constexpr int kChunk = 64;
constexpr int kTiledChunk = 16;
// Rows per piece: a piece's V rows (16 x 512 B for f32 d=128) stay in L1
// across the column passes of the P·V kernel.
constexpr int kPieceRows = 16;
// How far ahead K/V rows are prefetched, in bytes per stream (K or V), and
// into which cache. 32 KiB into L2 (T1) rather than the earlier 16 KiB into
// L1 (T0): two streams 16 KiB ahead fill the whole 32 KiB L1, so prefetched
// rows can be evicted before use; L2 (512 KiB) holds them. On the loaded
// 2-core machine the difference stayed within the noise (docs/benchmarks.md,
// 2026-12-02 18:03: 2 threads 63 % vs 59 % of STREAM f32, 51 % vs 46 % bf16;
// one thread by CPU time 56 % vs 65 % f32, 65 % vs 65 % bf16), so both stay
// selectable for the benchmark's in-run comparison (SetDecodePrefetch).
constexpr int64_t kDefaultPrefetchBytes = 32 << 10;
std::atomic<int64_t> prefetch_bytes{kDefaultPrefetchBytes};
std::atomic<bool> prefetch_into_l1{false};

// One cache line, into L1 (T0) or L2 (T1) as chosen for this job.
struct Prefetcher {
  bool l1;
  void operator()(const std::byte* p) const {
    if (l1) {
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
    } else {
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
    }
  }
};

// Up to kPieceRows K/V rows contiguous in memory, filling score columns
// [col, col + count) of the chunk.
struct Piece {
  const std::byte* k;
  const std::byte* v;
  int col;
  int count;
};

// Addressing of one job's K/V rows (kv_rows.h), as pieces, with a prefetch.
struct Rows : KvRowAddress {
  int64_t row_bytes;

  // Rows [pos, pos + n) that are contiguous in memory, n <= end - pos.
  Piece RunAt(int pos, int end) const {
    const KvRun r = At(pos, end);
    return {r.k, r.v, 0, r.count};
  }

  void Prefetch(int begin, int end, Prefetcher pf) const {
    while (begin < end) {
      const Piece r = RunAt(begin, end);
      if (k_step == row_bytes && v_step == row_bytes) {
        const int64_t bytes = r.count * row_bytes;
        for (int64_t off = 0; off < bytes; off += 64) {
          pf(r.k + off);
          pf(r.v + off);
        }
      } else {
        for (int j = 0; j < r.count; ++j)
          for (int64_t off = 0; off < row_bytes; off += 64) {
            pf(r.k + j * k_step + off);
            pf(r.v + j * v_step + off);
          }
      }
      begin += r.count;
    }
  }
};

// The rows a fixed distance ahead of a piece, prefetched a few lines at a
// time as the piece is consumed, so prefetches interleave with the math
// instead of queueing up in one burst.
//
// No default member initializers on purpose: a job declares kChunk of these
// and sets each before use (`Ahead{}` still zeroes one). With initializers
// every job zero-filled all 64 (4 KiB): 6 % of a stories260K decode job
// (head_dim 8, ~60 keys), perf 2026-12-04.
struct Ahead {
  const std::byte* k;
  const std::byte* v;
  int64_t k_step, v_step, row_bytes;
  int count;
  Prefetcher pf;
  // Rows [j, j + n) of `base` (k or v).
  void Fetch(const std::byte* base, int j, int n) const {
    const int64_t step = base == k ? k_step : v_step;
    for (int t = j; t < j + n && t < count; ++t)
      for (int64_t off = 0; off < row_bytes; off += 64)
        pf(base + t * step + off);
  }
};

// Columns are visited in steps of kStep<kBf16> = 8 (f32) or 16 (bf16), as
// kStep / 8 vectors ("halves"). f32 rows load in natural order. bf16 rows
// load 16 values with one 256-bit load and split them into the even
// elements (shift left) and the odd ones (mask), two ops instead of a
// widening convert per 8; the query and output rows are kept in the same
// even/odd order within each 16 (see Permuted), which a dot product and a
// column-wise accumulation do not notice.
template <bool kBf16>
inline constexpr int kStep = kBf16 ? 16 : 8;

template <bool kBf16>
ATTN_AVX2 inline __m256 LoadHalf(const std::byte* row, int p, int half) {
  if constexpr (kBf16) {
    const __m256i x =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + p));
    return half == 0 ? _mm256_castsi256_ps(_mm256_slli_epi32(x, 16))
                     : _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + p + 8 * half);
  }
}

// Where column c of a row is stored in the kernel's Q / O rows.
template <bool kBf16>
inline int Permuted(int c) {
  if constexpr (kBf16) {
    return (c & ~15) + ((c & 1) << 3) + ((c & 15) >> 1);
  } else {
    return c;
  }
}

// Combines the lanes that hold the same row (lane l holds row l % R), so
// every lane ends up with its row's max (kMax) or sum.
template <bool kMax>
ATTN_AVX2 inline __m256 Op(__m256 a, __m256 b) {
  return kMax ? _mm256_max_ps(a, b) : _mm256_add_ps(a, b);
}

template <int R, bool kMax>
ATTN_AVX2 inline __m256 Fold(__m256 x) {
  if constexpr (R < 8) x = Op<kMax>(x, _mm256_permute2f128_ps(x, x, 0x01));
  if constexpr (R < 4) x = Op<kMax>(x, _mm256_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 3, 2)));
  if constexpr (R < 2) x = Op<kMax>(x, _mm256_shuffle_ps(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
  return x;
}

// Lanes 0-3 of the result = sums of the 8 lanes of a[0..3].
ATTN_AVX2 inline __m128 Reduce4(const __m256* a) {
  const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

// Keys per Q·K pass: KJ keys x R rows accumulators. 8 accumulators get one
// FMA each per pass, so a pass waits on the FMA latency (4 cycles for 8
// FMAs: the machine's whole FMA throughput, nothing to spare). With kWide,
// f32 K and 4 rows take 3 keys (12 accumulators, 3 K vectors and a Q
// operand: all 16 ymm). Not bf16: its widening needs 3 more registers and
// the accumulators spill (measured slower).
template <int R, bool kBf16, bool kWide>
inline constexpr int kQkKeys = (kWide && !kBf16 && R == 4) ? 3 : 8 / R;

// What each DecodeVariant compiles to: keys per online-softmax step,
// register-tiled P·V (else PvPiece into o in L1), 12-accumulator Q·K.
struct VariantConfig {
  int chunk;
  bool tiled_pv;
  bool wide_qk;
};
inline constexpr VariantConfig kVariants[] = {
    {kChunk, false, true},      // kChunk64WideQk
    {kChunk, false, false},     // kChunk64
    {kTiledChunk, true, true},  // kBlockTiled
};

// Scores of R query rows against `count` contiguous K rows, key-major:
// s[j * R + r] = qp[r] · k[j]. Keys go KJ at a time so every pass fills
// KJ * R (8 or 12) accumulators; a last partial group repeats the last key
// (its columns are overwritten by the next piece or masked as beyond the
// chunk).
template <int R, bool kBf16, int KJ = 8 / R>
ATTN_AVX2 void QkPiece(const float* qp, const std::byte* k, int64_t k_step, int count, int d,
                       float* s, const Ahead& ahead) {
  constexpr int kAcc = KJ * R;
  static_assert(kAcc == 8 || kAcc == 12);
  for (int j = 0; j < count; j += KJ) {
    ahead.Fetch(ahead.k, j, KJ);
    const std::byte* kr[KJ];
#pragma GCC unroll 8
    for (int t = 0; t < KJ; ++t) kr[t] = k + std::min(j + t, count - 1) * k_step;
    __m256 acc[kAcc];
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_setzero_ps();
    for (int p = 0; p < d; p += kStep<kBf16>) {
#pragma GCC unroll 2
      for (int h = 0; h < kStep<kBf16> / 8; ++h) {
        __m256 kv[KJ];
#pragma GCC unroll 8
        for (int t = 0; t < KJ; ++t) kv[t] = LoadHalf<kBf16>(kr[t], p, h);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256 q = _mm256_load_ps(qp + r * d + p + 8 * h);
#pragma GCC unroll 8
          for (int t = 0; t < KJ; ++t) acc[t * R + r] = _mm256_fmadd_ps(q, kv[t], acc[t * R + r]);
        }
      }
    }
    _mm256_storeu_ps(s + j * R, Reduce8(acc));
    if constexpr (kAcc == 12) _mm_storeu_ps(s + j * R + 8, Reduce4(acc + 8));
  }
}

// o[r] += sum_j p[j * R + r] * v[j] for `count` contiguous V rows. V rows
// are read front to back, 8 / R at a time (the order the hardware
// prefetcher follows); o stays in L1 and each of its vectors is loaded and
// stored once per 8 / R keys.
template <int R, bool kBf16>
ATTN_AVX2 void PvPiece(const float* p, const std::byte* v, int64_t v_step, int count, int d,
                       float* o, const Ahead& ahead) {
  constexpr int KJ = 8 / R;
  int j = 0;
  for (; j + KJ <= count; j += KJ) {
    ahead.Fetch(ahead.v, j, KJ);
    __m256 b[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) b[i] = _mm256_broadcast_ss(p + j * R + i);  // [key t][row r]
    const std::byte* vr = v + j * v_step;
    for (int c0 = 0; c0 < d; c0 += kStep<kBf16>) {
#pragma GCC unroll 2
      for (int h = 0; h < kStep<kBf16> / 8; ++h) {
        const int c = c0 + 8 * h;
        __m256 vv[KJ];
#pragma GCC unroll 8
        for (int t = 0; t < KJ; ++t) vv[t] = LoadHalf<kBf16>(vr + t * v_step, c0, h);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          __m256 acc = _mm256_load_ps(o + r * d + c);
#pragma GCC unroll 8
          for (int t = 0; t < KJ; ++t) acc = _mm256_fmadd_ps(b[t * R + r], vv[t], acc);
          _mm256_store_ps(o + r * d + c, acc);
        }
      }
    }
  }
  for (; j < count; ++j) {  // the last count % KJ keys, one at a time
    ahead.Fetch(ahead.v, j, 1);
    __m256 b[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) b[r] = _mm256_broadcast_ss(p + j * R + r);
    const std::byte* vr = v + j * v_step;
    for (int c0 = 0; c0 < d; c0 += kStep<kBf16>) {
      for (int h = 0; h < kStep<kBf16> / 8; ++h) {
        const int c = c0 + 8 * h;
        const __m256 vv = LoadHalf<kBf16>(vr, c0, h);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
          _mm256_store_ps(o + r * d + c, _mm256_fmadd_ps(b[r], vv, _mm256_load_ps(o + r * d + c)));
      }
    }
  }
}

// Half h (8 columns) of a row in the kernel's column order: f32 columns
// [8h, 8h + 8); bf16 the even (h even) or odd (h odd) elements of the 16
// columns [16 (h / 2), 16 (h / 2) + 16), matching Permuted().
template <bool kBf16>
ATTN_AVX2 inline __m256 LoadHalfIdx(const std::byte* row, int h) {
  if constexpr (kBf16) {
    return LoadHalf<true>(row, 16 * (h >> 1), h & 1);
  } else {
    return LoadHalf<false>(row, 8 * h, 0);
  }
}

// Start of the byte range of a row assigned to the tile that begins at half
// h: consecutive tiles get consecutive ranges that partition the row, so the
// P·V prefetch touches each cache line once per row.
template <bool kBf16>
inline int64_t HalfBytes(int h) {
  return kBf16 ? int64_t{(h + 1) >> 1} * 32 : int64_t{h} * 32;
}

// Register-tiled P·V over one chunk (its pieces), for halves [h0, h0 + TH)
// of the R output rows: the R x TH accumulators start as alpha[r] * o (the
// online-softmax rescale, folded in), take every key of the chunk, and are
// stored once. Per key that is TH V loads and R broadcasts for R * TH FMAs,
// with o touched once per chunk instead of once per 8 / R keys. V lines of
// the rows a prefetch distance ahead are prefetched along, the lines of this
// tile's columns only, so the prefetches spread over the whole chunk.
template <int R, int TH, bool kBf16>
ATTN_AVX2 inline void PvTile(const float* s, const Piece* pieces, const Ahead* ahead,
                             int num_pieces, int64_t v_step, int h0, int d, float* o,
                             const float* alpha) {
  __m256 acc[R][TH];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m256 a = _mm256_broadcast_ss(alpha + r);
#pragma GCC unroll 8
    for (int t = 0; t < TH; ++t) acc[r][t] = _mm256_mul_ps(a, _mm256_load_ps(o + r * d + 8 * (h0 + t)));
  }
  // Whole cache lines of this tile's byte range, for the prefetch.
  const int64_t line0 = (HalfBytes<kBf16>(h0) + 63) & ~int64_t{63};
  const int64_t line1 = HalfBytes<kBf16>(h0 + TH);
  for (int i = 0; i < num_pieces; ++i) {
    const Piece& pc = pieces[i];
    const Ahead& ah = ahead[i];
    const float* p = s + pc.col * R;
    const std::byte* vr = pc.v;
    for (int j = 0; j < pc.count; ++j, vr += v_step) {
      if (j < ah.count)
        for (int64_t off = line0; off < line1; off += 64) ah.pf(ah.v + j * ah.v_step + off);
      __m256 vv[TH];
#pragma GCC unroll 8
      for (int t = 0; t < TH; ++t) vv[t] = LoadHalfIdx<kBf16>(vr, h0 + t);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 b = _mm256_broadcast_ss(p + j * R + r);
#pragma GCC unroll 8
        for (int t = 0; t < TH; ++t) acc[r][t] = _mm256_fmadd_ps(b, vv[t], acc[r][t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < TH; ++t) _mm256_store_ps(o + r * d + 8 * (h0 + t), acc[r][t]);
}

// Accumulators per tile: 8 (R x TH) with R <= 4, leaving registers for the
// TH V vectors and a broadcast; 8 rows take one half at a time.
template <int R>
inline constexpr int kTileHalves = R >= 8 ? 1 : (R == 4 ? 2 : 4);

template <int R, bool kBf16>
ATTN_AVX2 void PvChunkTiled(const float* s, const Piece* pieces, const Ahead* ahead, int num_pieces,
                            int64_t v_step, int d, float* o, const float* alpha) {
  constexpr int TH = kTileHalves<R>;
  const int halves = d / 8;
  int h = 0;
  for (; h + TH <= halves; h += TH)
    PvTile<R, TH, kBf16>(s, pieces, ahead, num_pieces, v_step, h, d, o, alpha);
  for (; h < halves; ++h) PvTile<R, 1, kBf16>(s, pieces, ahead, num_pieces, v_step, h, d, o, alpha);
}

// R = num_rows rounded up to 1, 2, 4 or 8; rows >= num_rows are padding
// (zero queries, no visible keys, never written out).
// kTiled selects the block-at-a-time variant (kTiledChunk keys per softmax
// step, PvChunkTiled); otherwise kChunk keys, PvPiece and a separate rescale.
template <int R, bool kBf16, int kVar>
ATTN_AVX2 void DecodeJob(const FlashRow* rows, int num_rows, const KvSource& src, int d,
                         float scale) {
  constexpr int KJ = 8 / R;
  constexpr bool kTiled = kVariants[kVar].tiled_pv;
  constexpr int kStepKeys = kVariants[kVar].chunk;
  alignas(32) float qp[R * kDecodeMaxHeadDim];
  alignas(32) float o[R * kDecodeMaxHeadDim];
  alignas(32) float s[(kChunk + 8) * 8];
  alignas(32) int32_t lane_limit[8];
  alignas(32) int32_t lane_begin[8];
  alignas(32) int32_t lane_key[8];
  int limit[R], begin[R];
  int max_limit = 0;
  int first = std::numeric_limits<int>::max();  // the earliest key a real row sees
  for (int r = 0; r < R; ++r) {
    limit[r] = r < num_rows ? std::max(rows[r].key_limit, 0) : 0;
    begin[r] = r < num_rows ? std::max(rows[r].key_begin, 0) : 0;
    max_limit = std::max(max_limit, limit[r]);
    if (r < num_rows) first = std::min(first, begin[r]);
    for (int c = 0; c < d; ++c)
      qp[r * d + Permuted<kBf16>(c)] = r < num_rows ? rows[r].q[c] * scale : 0.0f;
  }
  std::memset(o, 0, sizeof(float) * R * d);
  for (int l = 0; l < 8; ++l) lane_key[l] = l / R;

  const int64_t es = kBf16 ? 2 : 4;
  const Rows kv{KvRowAddress::For(src), d * es};

  __m256 m = _mm256_set1_ps(kNegInf);  // lane l: running max of row l % R
  __m256 l_sum = _mm256_setzero_ps();  // lane l: running softmax denominator
  const __m256i key0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_key));
  const __m256i key_step = _mm256_set1_epi32(KJ);
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  Piece pieces[kChunk];
  Ahead ahead[kChunk];

  const Prefetcher pf{prefetch_into_l1.load(std::memory_order_relaxed)};
  const int64_t distance = prefetch_bytes.load(std::memory_order_relaxed);
  // distance 0: no software prefetch at all (the hardware prefetchers alone).
  const int ahead_keys = distance <= 0 ? std::numeric_limits<int>::max() / 2
                                       : static_cast<int>(std::max<int64_t>(1, distance / kv.row_bytes));
  // A sliding window's rows start at their first visible key, not at 0.
  first = std::min(first, max_limit);
  if (distance > 0) kv.Prefetch(first, std::min(first + ahead_keys, max_limit), pf);
  for (int start = first; start < max_limit; start += kStepKeys) {
    const int end = std::min(start + kStepKeys, max_limit), count = end - start;
    int num_pieces = 0;
    for (int pos = start; pos < end;) {
      Piece pc = kv.RunAt(pos, end);
      pc.col = pos - start;
      pc.count = std::min(pc.count, kPieceRows);
      pieces[num_pieces++] = pc;
      pos += pc.count;
    }
    if constexpr (kTiled) {
      // The tiled P·V walks V column tile by column tile, touching one line
      // of every row per tile: a strided pattern the L1 prefetcher does not
      // follow. So pull the chunk's V rows (already in L2, prefetched ahead)
      // into L1 now, front to back, while Q·K runs on the K rows.
      const Prefetcher to_l1{true};
      for (int i = 0; i < num_pieces; ++i)
        for (int j = 0; j < pieces[i].count; ++j)
          for (int64_t off = 0; off < kv.row_bytes; off += 64) to_l1(pieces[i].v + j * kv.v_step + off);
    }
    for (int i = 0; i < num_pieces; ++i) {
      const Piece& pc = pieces[i];
      const int at = start + pc.col + ahead_keys;
      ahead[i] = Ahead{};
      if (at < max_limit) {
        const Piece f = kv.RunAt(at, std::min(at + pc.count, max_limit));
        ahead[i] = {f.k, f.v, kv.k_step, kv.v_step, kv.row_bytes, f.count, pf};
      }
      QkPiece<R, kBf16, kQkKeys<R, kBf16, kVariants[kVar].wide_qk>>(qp, pc.k, kv.k_step, pc.count, d, s + pc.col * R, ahead[i]);
    }

    // Online softmax over the chunk, 8 / R keys per vector.
    for (int l = 0; l < 8; ++l) {
      lane_limit[l] = std::clamp(limit[l % R] - start, 0, count);
      lane_begin[l] = std::clamp(begin[l % R] - start, 0, count);
    }
    const __m256i lim = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_limit));
    const __m256i beg = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_begin));
    const int nv = (count + KJ - 1) / KJ;
    __m256i key = key0;
    __m256 vmax = neg_inf;
    for (int v = 0; v < nv; ++v, key = _mm256_add_epi32(key, key_step)) {
      // begin <= key < limit, i.e. limit > key and not begin > key.
      const __m256 visible = _mm256_castsi256_ps(
          _mm256_andnot_si256(_mm256_cmpgt_epi32(beg, key), _mm256_cmpgt_epi32(lim, key)));
      const __m256 x = _mm256_blendv_ps(neg_inf, _mm256_load_ps(s + 8 * v), visible);
      _mm256_store_ps(s + 8 * v, x);
      vmax = _mm256_max_ps(vmax, x);
    }
    const __m256 m_new = _mm256_max_ps(m, Fold<R, true>(vmax));
    // A row with nothing visible yet keeps m = -inf; subtract 0 instead so
    // exp sees -inf (-> 0), never -inf - -inf (NaN).
    const __m256 m_safe =
        _mm256_blendv_ps(m_new, _mm256_setzero_ps(), _mm256_cmp_ps(m_new, neg_inf, _CMP_EQ_OQ));
    const __m256 alpha = ExpNonPositive8(_mm256_sub_ps(m, m_safe));
    __m256 sum = _mm256_setzero_ps();
    for (int v = 0; v < nv; ++v) {
      const __m256 e = ExpNonPositive8(_mm256_sub_ps(_mm256_load_ps(s + 8 * v), m_safe));
      _mm256_store_ps(s + 8 * v, e);
      sum = _mm256_add_ps(sum, e);
    }
    l_sum = _mm256_fmadd_ps(l_sum, alpha, Fold<R, false>(sum));
    m = m_new;
    if constexpr (kTiled) {
      alignas(32) float a[8];  // lane r < R: row r's rescale factor
      _mm256_store_ps(a, alpha);
      PvChunkTiled<R, kBf16>(s, pieces, ahead, num_pieces, kv.v_step, d, o, a);
    } else {
      const int changed = _mm256_movemask_ps(_mm256_cmp_ps(alpha, _mm256_set1_ps(1.0f), _CMP_NEQ_UQ));
      if ((changed & ((1 << R) - 1)) != 0) {
        alignas(32) float a[8];
        _mm256_store_ps(a, alpha);
        for (int r = 0; r < R; ++r) {
          if (a[r] == 1.0f) continue;
          const __m256 ar = _mm256_set1_ps(a[r]);
          for (int c = 0; c < d; c += 8)
            _mm256_store_ps(o + r * d + c, _mm256_mul_ps(ar, _mm256_load_ps(o + r * d + c)));
        }
      }

      for (int i = 0; i < num_pieces; ++i) {
        const Piece& pc = pieces[i];
        PvPiece<R, kBf16>(s + pc.col * R, pc.v, kv.v_step, pc.count, d, o, ahead[i]);
      }
    }
  }

  alignas(32) float den[8];
  _mm256_store_ps(den, l_sum);
  for (int r = 0; r < num_rows; ++r) {
    float* out = rows[r].out;
    const float inv = den[r] > 0.0f ? 1.0f / den[r] : 0.0f;
    for (int c = 0; c < d; ++c) out[c] = o[r * d + Permuted<kBf16>(c)] * inv;
  }
}

template <bool kBf16, int kVar>
void Dispatch(const FlashRow* rows, int num_rows, const KvSource& src, int d, float scale) {
  if (num_rows <= 1) {
    DecodeJob<1, kBf16, kVar>(rows, num_rows, src, d, scale);
  } else if (num_rows <= 2) {
    DecodeJob<2, kBf16, kVar>(rows, num_rows, src, d, scale);
  } else if (num_rows <= 4) {
    DecodeJob<4, kBf16, kVar>(rows, num_rows, src, d, scale);
  } else {
    DecodeJob<8, kBf16, kVar>(rows, num_rows, src, d, scale);
  }
}

}  // namespace

bool DecodeJobSupported(const FlashRow* rows, int num_rows, int head_dim, DType kv_dtype) {
  if (decode_disabled.load(std::memory_order_relaxed) || !Avx2KernelsEnabled() || num_rows < 1 || num_rows > kDecodeMaxRows || head_dim % 8 != 0 ||
      head_dim > kDecodeMaxHeadDim || (kv_dtype == DType::kBF16 && head_dim % 16 != 0)) {
    return false;
  }
  for (int r = 0; r < num_rows; ++r) {
    if (rows[r].allow_row || rows[r].key_allow || rows[r].add_row) return false;
  }
  return true;
}

void DisableDecodeKernel(bool disable) {
  decode_disabled.store(disable, std::memory_order_relaxed);
}

void SetDecodePrefetch(int64_t distance_bytes, bool into_l1) {
  prefetch_bytes.store(distance_bytes, std::memory_order_relaxed);
  prefetch_into_l1.store(into_l1, std::memory_order_relaxed);
}

void SetDecodeVariant(DecodeVariant variant) {
  decode_variant.store(variant, std::memory_order_relaxed);
}

void ResetDecodePrefetch() { SetDecodePrefetch(kDefaultPrefetchBytes, false); }

void RunDecodeJob(const FlashRow* rows, int num_rows, const KvSource& src, int head_dim,
                  float scale) {
  if (Head8DecodeApplies(head_dim, src.dtype)) return RunHead8DecodeJob(rows, num_rows, src, scale);
  const auto variant = static_cast<int>(decode_variant.load(std::memory_order_relaxed));
  const bool bf16 = src.dtype == DType::kBF16;
  switch (variant) {
    case 0:
      return bf16 ? Dispatch<true, 0>(rows, num_rows, src, head_dim, scale)
                  : Dispatch<false, 0>(rows, num_rows, src, head_dim, scale);
    case 1:
      return bf16 ? Dispatch<true, 1>(rows, num_rows, src, head_dim, scale)
                  : Dispatch<false, 1>(rows, num_rows, src, head_dim, scale);
    default:
      return bf16 ? Dispatch<true, 2>(rows, num_rows, src, head_dim, scale)
                  : Dispatch<false, 2>(rows, num_rows, src, head_dim, scale);
  }
}

}  // namespace attnserve::attention_internal
