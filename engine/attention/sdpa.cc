#include "engine/attention/sdpa.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/flash_kernel.h"
#include "engine/core/half.h"

namespace attnserve {
namespace {

using attention_internal::FlashRow;
using attention_internal::FlashScratch;
using attention_internal::KvSource;
using attention_internal::RunFlashJob;

// Query rows per job, across the heads of one GQA group: enough rows to
// amortise packing each K tile, few enough for many parallel jobs.
constexpr int kRowsPerJob = 128;

absl::Status Validate(const SdpaArgs& a) {
  const SdpaShape& s = a.shape;
  if (s.batch_size <= 0 || s.num_heads <= 0 || s.num_kv_heads <= 0 || s.q_len <= 0 ||
      s.kv_len < 0 || s.head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention shape: batch_size, num_heads, num_kv_heads, q_len, head_dim must be > 0 and "
        "kv_len >= 0; got B=", s.batch_size, " Hq=", s.num_heads, " Hkv=", s.num_kv_heads,
        " Nq=", s.q_len, " Nk=", s.kv_len, " d=", s.head_dim));
  }
  if (a.masks.window >= 0 && s.q_len != s.kv_len) {
    return absl::InvalidArgumentError(absl::StrCat("attention: a sliding window needs q_len == kv_len; got Nq=",
                                                   s.q_len, " Nk=", s.kv_len));
  }
  if (s.num_heads % s.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("attention shape: num_heads (", s.num_heads,
                                                   ") must be a multiple of num_kv_heads (",
                                                   s.num_kv_heads, ")"));
  }
  if (a.q.data == nullptr || a.out.data == nullptr || (s.kv_len > 0 && (!a.k.data || !a.v.data))) {
    return absl::InvalidArgumentError("attention: q, k, v and out must not be null");
  }
  if (a.q.dtype != DType::kF32) return absl::InvalidArgumentError("attention: q must be f32");
  if (a.k.dtype != a.v.dtype || (a.k.dtype != DType::kF32 && a.k.dtype != DType::kBF16)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: k and v must both be f32 or both bf16, got ", DTypeName(a.k.dtype),
                     " and ", DTypeName(a.v.dtype)));
  }
  if (a.masks.key_lengths != nullptr) {
    for (int b = 0; b < s.batch_size; ++b) {
      int len = a.masks.key_lengths[b];
      if (len < 0 || len > s.kv_len) {
        return absl::InvalidArgumentError(absl::StrCat("attention: key_lengths[", b, "] = ", len,
                                                       " outside [0, ", s.kv_len, "]"));
      }
    }
  }
  if (a.row_offsets != nullptr && (a.masks.key_lengths == nullptr || s.q_len != s.kv_len)) {
    return absl::InvalidArgumentError(
        "attention: row_offsets (ragged self-attention) needs key_lengths and q_len == kv_len");
  }
  if (a.options.weights != AttentionWeightsMode::kNone && a.weights == nullptr) {
    return absl::InvalidArgumentError("attention: weights requested but no weights buffer given");
  }
  if (a.options.scale < 0 || !std::isfinite(a.options.scale)) {
    return absl::InvalidArgumentError(absl::StrCat("attention: scale ", a.options.scale));
  }
  return absl::OkStatus();
}

// Keys a query row may see by the range rules (lengths, causal, window):
// [KeyBegin, KeyLimit).
int KeyLimit(const SdpaArgs& a, int b, int i) {
  int limit = a.shape.kv_len;
  if (a.masks.key_lengths != nullptr) limit = std::min(limit, a.masks.key_lengths[b]);
  if (a.masks.causal) limit = std::min(limit, i + a.shape.kv_len - a.shape.q_len + 1);
  if (a.masks.window >= 0) limit = std::min(limit, i + a.masks.window + 1);
  return std::max(limit, 0);
}

int KeyBegin(const SdpaArgs& a, int i) { return a.masks.window >= 0 ? std::max(0, i - a.masks.window) : 0; }

// Element offset of sequence b's first row in a view: b batch strides, or
// its row offset in a ragged batch.
template <typename View>
int64_t BatchStart(const SdpaArgs& a, const View& v, int b) {
  return a.row_offsets != nullptr ? a.row_offsets[b] * v.row_stride : b * v.batch_stride;
}

// Query rows of sequence b that exist: all Nq, or its length when ragged.
int QueryRows(const SdpaArgs& a, int b) {
  return a.row_offsets != nullptr ? a.masks.key_lengths[b] : a.shape.q_len;
}

FlashRow MakeRow(const SdpaArgs& a, int b, int h, int i) {
  const int64_t nq = a.shape.q_len, nk = a.shape.kv_len;
  const AttentionMasks& mk = a.masks;
  FlashRow row;
  row.q = static_cast<const float*>(a.q.data) + BatchStart(a, a.q, b) + h * a.q.head_stride +
          i * a.q.row_stride;
  row.out = a.out.data + BatchStart(a, a.out, b) + h * a.out.head_stride + i * a.out.row_stride;
  row.key_limit = KeyLimit(a, b, i);
  row.key_begin = KeyBegin(a, i);
  if (mk.allow.data) row.allow_row = mk.allow.data + (mk.allow.per_batch ? b * nq * nk : 0) + i * nk;
  if (mk.key_allow.data) row.key_allow = mk.key_allow.data + b * nk;
  if (mk.additive.data) {
    row.add_row = mk.additive.data + AdditiveMaskOffset(mk.additive, a.shape, b, h, i);
  }
  return row;
}

void RunFlash(const SdpaArgs& a, float scale) {
  const SdpaShape& s = a.shape;
  const int group = s.num_heads / s.num_kv_heads;
  const int q_tile = std::clamp(kRowsPerJob / group, 1, s.q_len);
  const int q_tiles = (s.q_len + q_tile - 1) / q_tile;
  const int64_t jobs = int64_t{s.batch_size} * s.num_kv_heads * q_tiles;
  const size_t es = DTypeSize(a.k.dtype);
  int64_t scratch_bytes = 0;
#pragma omp parallel reduction(+ : scratch_bytes)
  {
    FlashScratch scratch;
    scratch.Reserve(group * q_tile, s.head_dim);
    std::vector<FlashRow> rows(group * q_tile);
#pragma omp for schedule(dynamic)
    for (int64_t job = 0; job < jobs; ++job) {
      const int t = static_cast<int>(job % q_tiles);
      const int hk = static_cast<int>((job / q_tiles) % s.num_kv_heads);
      const int b = static_cast<int>(job / q_tiles / s.num_kv_heads);
      const int i0 = t * q_tile, i1 = std::min(QueryRows(a, b), i0 + q_tile);
      if (i0 >= i1) continue;  // past this sequence's rows (ragged batch)
      int n = 0;
      for (int g = 0; g < group; ++g)
        for (int i = i0; i < i1; ++i) rows[n++] = MakeRow(a, b, hk * group + g, i);
      KvSource src;
      src.dtype = a.k.dtype;
      src.k = static_cast<const std::byte*>(a.k.data) + (BatchStart(a, a.k, b) + hk * a.k.head_stride) * es;
      src.v = static_cast<const std::byte*>(a.v.data) + (BatchStart(a, a.v, b) + hk * a.v.head_stride) * es;
      src.k_row_stride = a.k.row_stride;
      src.v_row_stride = a.v.row_stride;
      RunFlashJob(rows.data(), n, src, s.head_dim, scale, scratch);
    }
    scratch_bytes += scratch.bytes() + static_cast<int64_t>(rows.capacity() * sizeof(FlashRow));
  }
  if (a.options.stats != nullptr) a.options.stats->scratch_bytes = scratch_bytes;
}

float LoadKv(const ConstAttnView& view, int64_t off) {
  if (view.dtype == DType::kBF16) return Bf16ToFloat(static_cast<const uint16_t*>(view.data)[off]);
  return static_cast<const float*>(view.data)[off];
}

// The materialising path, used only when weights are requested.
void RunWithWeights(const SdpaArgs& a, float scale) {
  const SdpaShape& s = a.shape;
  const int group = s.num_heads / s.num_kv_heads;
  const int64_t nq = s.q_len, nk = s.kv_len;
  const int d = s.head_dim;
  const bool averaged = a.options.weights == AttentionWeightsMode::kAveraged;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> p(nk), acc(d);
#pragma omp for schedule(dynamic)
    for (int64_t job = 0; job < s.batch_size * nq; ++job) {
      const int b = static_cast<int>(job / nq), i = static_cast<int>(job % nq);
      float* avg = averaged ? a.weights + (b * nq + i) * nk : nullptr;
      if (avg) std::fill(avg, avg + nk, 0.0f);
      if (i >= QueryRows(a, b)) {  // no such row (ragged batch): zero weights, no output
        if (!averaged) {
          for (int h = 0; h < s.num_heads; ++h) {
            float* w = a.weights + ((b * s.num_heads + h) * nq + i) * nk;
            std::fill(w, w + nk, 0.0f);
          }
        }
        continue;
      }
      for (int h = 0; h < s.num_heads; ++h) {
        const int hk = h / group;
        FlashRow row = MakeRow(a, b, h, i);
        const int64_t kbase = BatchStart(a, a.k, b) + hk * a.k.head_stride;
        const int64_t vbase = BatchStart(a, a.v, b) + hk * a.v.head_stride;
        float mx = kNegInf;
        for (int j = 0; j < nk; ++j) {
          bool vis = j >= row.key_begin && j < row.key_limit && (!row.allow_row || row.allow_row[j]) &&
                     (!row.key_allow || row.key_allow[j]);
          if (!vis) {
            p[j] = kNegInf;
            continue;
          }
          float sc = 0;
          for (int c = 0; c < d; ++c) sc += row.q[c] * LoadKv(a.k, kbase + j * a.k.row_stride + c);
          sc *= scale;
          if (row.add_row) sc += row.add_row[j];
          p[j] = sc;
          mx = std::max(mx, sc);
        }
        float sum = 0;
        for (int j = 0; j < nk; ++j) {
          p[j] = (mx == kNegInf || p[j] == kNegInf) ? 0.0f : std::exp(p[j] - mx);
          sum += p[j];
        }
        const float inv = sum > 0 ? 1.0f / sum : 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int j = 0; j < nk; ++j) {
          p[j] *= inv;
          if (p[j] == 0.0f) continue;
          for (int c = 0; c < d; ++c) acc[c] += p[j] * LoadKv(a.v, vbase + j * a.v.row_stride + c);
        }
        std::copy(acc.begin(), acc.end(), row.out);
        if (averaged) {
          for (int j = 0; j < nk; ++j) avg[j] += p[j] / s.num_heads;
        } else {
          std::copy(p.begin(), p.end(), a.weights + ((b * s.num_heads + h) * nq + i) * nk);
        }
      }
    }
  }
  if (a.options.stats != nullptr) {
    a.options.stats->scratch_bytes =
        static_cast<int64_t>(omp_get_max_threads()) * (nk + d) * static_cast<int64_t>(sizeof(float));
  }
}

}  // namespace

float DefaultAttentionScale(int head_dim) {
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

absl::Status ScaledDotProductAttention(const SdpaArgs& args) {
  if (absl::Status st = Validate(args); !st.ok()) return st;
  const float scale =
      args.options.scale != 0.0f ? args.options.scale : DefaultAttentionScale(args.shape.head_dim);
  if (args.options.weights == AttentionWeightsMode::kNone) {
    RunFlash(args, scale);
  } else {
    RunWithWeights(args, scale);
  }
  return absl::OkStatus();
}

}  // namespace attnserve
