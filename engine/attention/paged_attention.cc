#include "engine/attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/flash_kernel.h"
#include "engine/core/parallel.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

using attention_internal::FlashRow;
using attention_internal::FlashScratch;
using attention_internal::KvSource;
using attention_internal::RunFlashJob;

constexpr int kRowsPerJob = 32;

absl::Status Validate(const PagedAttentionArgs& a) {
  if (a.kv.layout == nullptr || a.kv.layer_base == nullptr) {
    return absl::InvalidArgumentError("paged attention: kv.layout and kv.layer_base are required");
  }
  RETURN_IF_ERROR(a.kv.layout->Validate());
  const KvLayout& L = *a.kv.layout;
  if (a.num_heads <= 0 || a.num_heads % L.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("paged attention: num_heads (", a.num_heads,
                                                   ") must be a positive multiple of num_kv_heads (",
                                                   L.num_kv_heads, ")"));
  }
  if (a.num_seqs < 0 || (a.num_seqs > 0 && (!a.seqs || !a.query_start || !a.q || !a.out))) {
    return absl::InvalidArgumentError("paged attention: seqs, query_start, q and out are required");
  }
  if (a.window < 0) {
    return absl::InvalidArgumentError(absl::StrCat("paged attention: window ", a.window, " must be >= 0"));
  }
  if (!(a.softcap >= 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("paged attention: softcap ", a.softcap, " must be >= 0"));
  }
  if (a.num_seqs > 0 && a.query_start[0] != 0) {
    return absl::InvalidArgumentError("paged attention: query_start[0] must be 0");
  }
  for (int s = 0; s < a.num_seqs; ++s) {
    const PagedKvSequence& seq = a.seqs[s];
    const int n = a.query_start[s + 1] - a.query_start[s];
    if (n < 0 || n > seq.num_tokens) {
      return absl::InvalidArgumentError(
          absl::StrCat("paged attention: sequence ", s, " has ", n, " new queries but num_tokens = ",
                       seq.num_tokens));
    }
    if (int64_t{seq.num_blocks} * L.block_size < seq.num_tokens || (seq.num_blocks > 0 && !seq.block_table)) {
      return absl::InvalidArgumentError(
          absl::StrCat("paged attention: sequence ", s, ": ", seq.num_blocks, " blocks of ",
                       L.block_size, " cannot hold num_tokens = ", seq.num_tokens));
    }
    const int used = (seq.num_tokens + L.block_size - 1) / L.block_size;
    // With a window, blocks wholly before the first new token's window are
    // never read (and may have been given back: kv_cache.h ReleaseBefore).
    const int first_key = a.window > 0 ? std::max(0, seq.num_tokens - n + 1 - a.window) : 0;
    for (int b = first_key / L.block_size; b < used; ++b) {
      int32_t id = seq.block_table[b];
      if (id < 0 || (a.kv.num_pool_blocks > 0 && id >= a.kv.num_pool_blocks)) {
        return absl::InvalidArgumentError(absl::StrCat("paged attention: sequence ", s,
                                                       " block_table[", b, "] = ", id,
                                                       " outside the pool"));
      }
    }
  }
  return absl::OkStatus();
}

struct Job {
  int seq;
  int kv_head;
  int t0, t1;  // new-token range [t0, t1) of the sequence
};

}  // namespace

absl::Status PagedAttention(const PagedAttentionArgs& a) {
  RETURN_IF_ERROR(Validate(a));
  const KvLayout& L = *a.kv.layout;
  const int d = L.head_dim, hq = a.num_heads, hkv = L.num_kv_heads, group = hq / hkv;
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(d));
  const int q_tile = std::max(1, kRowsPerJob / group);
  std::vector<Job> jobs;
  int64_t macs = 0;  // Q·K plus P·V multiply-adds, an upper bound (no causal skip)
  for (int s = 0; s < a.num_seqs; ++s) {
    const int n = a.query_start[s + 1] - a.query_start[s];
    const int keys = a.window > 0 ? std::min(a.seqs[s].num_tokens, a.window + n - 1) : a.seqs[s].num_tokens;
    macs += 2 * int64_t{n} * hq * keys * d;
    for (int h = 0; h < hkv; ++h)
      for (int t0 = 0; t0 < n; t0 += q_tile) jobs.push_back({s, h, t0, std::min(n, t0 + q_tile)});
  }
  const int64_t num_jobs = static_cast<int64_t>(jobs.size());
  // One job at a time per thread, handed out dynamically (jobs differ in
  // length); inline on this thread when the call is too small to split.
  const bool parallel = macs >= kParallelMinMacs && num_jobs > 1;
  ParallelRegion(parallel, [&](int thread, int threads) {
    FlashScratch scratch;
    scratch.Reserve(group * q_tile, d);
    std::vector<FlashRow> rows(group * q_tile);
    auto run = [&](int64_t j) {
      const Job& job = jobs[j];
      const PagedKvSequence& seq = a.seqs[job.seq];
      const int first = a.query_start[job.seq];
      const int n = a.query_start[job.seq + 1] - first;
      int r = 0;
      for (int g = 0; g < group; ++g) {
        const int h = job.kv_head * group + g;
        for (int t = job.t0; t < job.t1; ++t) {
          FlashRow& row = rows[r++];
          row = FlashRow{};
          const int64_t off = (int64_t{first + t} * hq + h) * d;
          row.q = a.q + off;
          row.out = a.out + off;
          row.key_limit = seq.num_tokens - n + t + 1;
          if (a.window > 0) row.key_begin = std::max(0, row.key_limit - a.window);
        }
      }
      KvSource src;
      src.dtype = L.dtype;
      src.layout = &L;
      src.layer_base = a.kv.layer_base;
      src.block_table = seq.block_table;
      src.kv_head = job.kv_head;
      RunFlashJob(rows.data(), r, src, d, scale, scratch, a.softcap);
    };
    if (threads == 1) {
      for (int64_t j = 0; j < num_jobs; ++j) run(j);
      return;
    }
    (void)thread;
#pragma omp for schedule(dynamic)
    for (int64_t j = 0; j < num_jobs; ++j) run(j);
  });
  return absl::OkStatus();
}

}  // namespace attnserve
