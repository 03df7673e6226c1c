// Internal to engine/attention: where a decode job's K/V rows are, dense
// (strided) or paged (through one sequence's block table), as runs of rows
// contiguous in memory. Shared by the decode kernels (decode_kernel.cc,
// head8_decode_kernel.cc); inline because they call it on their hot path.
#ifndef ATTNSERVE_ENGINE_ATTENTION_KV_ROWS_H_
#define ATTNSERVE_ENGINE_ATTENTION_KV_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/attention/flash_kernel.h"
#include "engine/attention/kv_layout.h"

namespace attnserve::attention_internal {

// Up to a block's worth of K/V rows, contiguous in memory.
struct KvRun {
  const std::byte* k;
  const std::byte* v;
  int count;
};

struct KvRowAddress {
  const KvSource* src;
  int64_t k_step;  // bytes between consecutive rows of a run
  int64_t v_step;

  // Dense rows `k_row_stride` (`v_row_stride`) elements apart; paged rows
  // one head (the layout's head_dim) apart.
  static KvRowAddress For(const KvSource& src) {
    const int64_t es = static_cast<int64_t>(DTypeSize(src.dtype));
    if (src.layout == nullptr) return {&src, src.k_row_stride * es, src.v_row_stride * es};
    const int64_t step = int64_t{src.layout->head_dim} * es;
    return {&src, step, step};
  }

  // Rows [pos, pos + n) contiguous in memory, 1 <= n <= end - pos.
  KvRun At(int pos, int end) const {
    const KvSource& s = *src;
    if (s.layout == nullptr) return {s.k + pos * k_step, s.v + pos * v_step, end - pos};
    const KvLayout& L = *s.layout;
    const int block = pos / L.block_size, row = pos % L.block_size;
    const std::byte* base = s.layer_base + int64_t{s.block_table[block]} * L.BlockBytes();
    const int64_t es = static_cast<int64_t>(DTypeSize(s.dtype));
    return {base + L.KOffset(s.kv_head, row) * es, base + L.VOffset(s.kv_head, row) * es,
            std::min(L.block_size - row, end - pos)};
  }

  // The runs that cover [begin, end) in order, into `runs` (room for
  // end - begin); returns how many. Walks the block table: one integer
  // division for the whole range instead of one per run (At), which matters
  // when a job is only ~100 short rows (heads of 8).
  int Collect(int begin, int end, KvRun* runs) const {
    const KvSource& s = *src;
    if (s.layout == nullptr) {
      runs[0] = {s.k + begin * k_step, s.v + begin * v_step, end - begin};
      return 1;
    }
    const KvLayout& L = *s.layout;
    const int64_t es = static_cast<int64_t>(DTypeSize(s.dtype));
    const int64_t block_bytes = L.BlockBytes();
    const int64_t k_off = L.KOffset(s.kv_head, 0) * es, v_off = L.VOffset(s.kv_head, 0) * es;
    int block = begin / L.block_size, row = begin % L.block_size, n = 0;
    for (int pos = begin; pos < end; ++block, row = 0) {
      const std::byte* base = s.layer_base + int64_t{s.block_table[block]} * block_bytes;
      const int count = std::min(L.block_size - row, end - pos);
      runs[n++] = {base + k_off + row * k_step, base + v_off + row * v_step, count};
      pos += count;
    }
    return n;
  }
};

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_KV_ROWS_H_
