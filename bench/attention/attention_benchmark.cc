// Attention benchmarks (Google Benchmark). Counters: GFLOP/s (4·B·Hq·Nq·Nk·d
// per call, the full square even for causal, so "causal" speed-ups show as
// higher GFLOP/s), GB/s (decode: K and V bytes read per call).
// Peers in the same binary: oneDNN Graph SDPA, an f32 oneDNN matmul (through
// ops/Linear) and a STREAM-like read, so ratios compare like with like.
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "bench/attention/onednn_graph_sdpa.h"
#include "bench/attention/onednn_matmul_sdpa.h"
#include "engine/attention/decode_kernel.h"
#include "engine/attention/flash_kernel.h"
#include "engine/attention/head8_decode_kernel.h"
#include "engine/attention/paged_attention.h"
#include "engine/attention/sdpa.h"
#include "engine/core/half.h"
#include "engine/ops/linear.h"

namespace attnserve {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

struct Shape {
  int b, hq, hkv, nq, nk, d;
  bool causal;
};

double Flops(const Shape& s) { return 4.0 * s.b * s.hq * double(s.nq) * s.nk * s.d; }

// Prefill shapes of the issue.
const Shape kMiniLm{32, 12, 12, 128, 128, 32, false};
const Shape kBert512{8, 12, 12, 512, 512, 64, false};
const Shape kCausal{1, 32, 8, 2048, 2048, 128, true};
const Shape kCausalFull{1, 32, 8, 2048, 2048, 128, false};  // the same, full square
const Shape kDecode{32, 32, 8, 1, 1024, 128, false};
// stories260K's decode step at 16 sequences: head_dim 8, 8 query heads over
// 4 KV heads, ~96 keys (a 32-token prompt plus 64 generated), where the
// per-job fixed cost, not K/V bytes, sets the time.
const Shape kTinyDecode{16, 8, 4, 1, 96, 8, false};

void BM_Ours(benchmark::State& state, Shape s) {
  auto q = Random(int64_t{s.b} * s.hq * s.nq * s.d, 1);
  auto k = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 2);
  auto v = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 3);
  std::vector<float> out(q.size());
  SdpaArgs a;
  a.shape = {s.b, s.hq, s.hkv, s.nq, s.nk, s.d};
  a.q = ConstAttnView::Contiguous(q.data(), s.hq, s.nq, s.d);
  a.k = ConstAttnView::Contiguous(k.data(), s.hkv, s.nk, s.d);
  a.v = ConstAttnView::Contiguous(v.data(), s.hkv, s.nk, s.d);
  a.out = AttnView::Contiguous(out.data(), s.hq, s.nq, s.d);
  a.masks.causal = s.causal;
  for (auto _ : state) {
    if (!ScaledDotProductAttention(a).ok()) state.SkipWithError("attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(Flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (s.nq == 1) {
    double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * 4;
    state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// The losing variant, kept measured: the same tiled kernel with the scalar
// (compiler-vectorised, SSE) micro-kernels instead of the AVX2+FMA ones.
void BM_OursScalar(benchmark::State& state, Shape s) {
  attention_internal::ForceScalarFlashKernel(true);
  BM_Ours(state, s);
  attention_internal::ForceScalarFlashKernel(false);
}

// On an AVX-512 CPU: the tiled kernel with the AVX2 products (the variant it
// replaced there), kept measured. Elsewhere the same as BM_Ours.
void BM_OursAvx2(benchmark::State& state, Shape s) {
  attention_internal::DisableAvx512FlashKernel(true);
  BM_Ours(state, s);
  attention_internal::DisableAvx512FlashKernel(false);
}

void BM_OnednnGraph(benchmark::State& state, Shape s) {
  std::string why;
  auto g = bench::GraphSdpa::Create(s.b, s.hq, s.hkv, s.nq, s.nk, s.d, s.causal, &why);
  if (!g) {
    state.SkipWithError(("oneDNN Graph SDPA unavailable: " + why).c_str());
    return;
  }
  auto q = Random(int64_t{s.b} * s.hq * s.nq * s.d, 1);
  auto k = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 2);
  auto v = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 3);
  std::vector<float> out(q.size());
  for (auto _ : state) {
    g->Run(q.data(), k.data(), v.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(Flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (s.nq == 1) {
    double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * 4;
    state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// The oneDNN-matmul inner-loop variant (bench/attention/onednn_matmul_sdpa.h),
// checked once against our kernel before it is timed.
void BM_OnednnMatmulInner(benchmark::State& state, Shape s) {
  std::string why;
  auto mm = bench::MatmulSdpa::Create(s.b, s.hq, s.hkv, s.nq, s.nk, s.d, &why);
  if (!mm) {
    state.SkipWithError(("oneDNN matmul variant unavailable: " + why).c_str());
    return;
  }
  auto q = Random(int64_t{s.b} * s.hq * s.nq * s.d, 1);
  auto k = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 2);
  auto v = Random(int64_t{s.b} * s.hkv * s.nk * s.d, 3);
  std::vector<float> out(q.size()), ours(q.size());
  SdpaArgs a;
  a.shape = {s.b, s.hq, s.hkv, s.nq, s.nk, s.d};
  a.q = ConstAttnView::Contiguous(q.data(), s.hq, s.nq, s.d);
  a.k = ConstAttnView::Contiguous(k.data(), s.hkv, s.nk, s.d);
  a.v = ConstAttnView::Contiguous(v.data(), s.hkv, s.nk, s.d);
  a.out = AttnView::Contiguous(ours.data(), s.hq, s.nq, s.d);
  mm->Run(q.data(), k.data(), v.data(), out.data());
  if (!ScaledDotProductAttention(a).ok()) {
    state.SkipWithError("attention failed");
    return;
  }
  float worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - ours[i]));
  if (!(worst < 1e-4f)) {
    state.SkipWithError(("oneDNN matmul variant disagrees with ours by " + std::to_string(worst)).c_str());
    return;
  }
  for (auto _ : state) {
    mm->Run(q.data(), k.data(), v.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(Flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Benchmark memory, 2 MiB aligned; `huge` asks for transparent huge pages
// (madvise) before the first touch, so the TLB question can be measured.
struct BenchBuffer {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> mem;
  size_t n = 0;
  BenchBuffer(size_t bytes, bool huge) : n(bytes) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    mem.reset(static_cast<std::byte*>(std::aligned_alloc(kHuge, rounded)));
    madvise(mem.get(), rounded, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  std::byte* data() const { return mem.get(); }
  size_t size() const { return n; }
};

// A paged KV pool laid out the way engine/kv writes it: Nk positions per
// sequence in blocks of `block` tokens, block ids shuffled over the pool.
struct PagedPool {
  KvLayout layout;
  int pool_blocks = 0;
  BenchBuffer bytes;
  std::vector<int32_t> ids;
  std::vector<PagedKvSequence> seqs;
  std::vector<int32_t> starts;

  PagedPool(const Shape& s, DType dtype, int block, bool huge = false)
      : layout{s.hkv, s.d, block, dtype},
        pool_blocks(s.b * (s.nk / block)),
        bytes(static_cast<size_t>(pool_blocks) * layout.BlockBytes(), huge) {
    const int blocks_per_seq = s.nk / block;
    auto vals = Random(static_cast<int64_t>(bytes.size() / DTypeSize(dtype)), 4);
    if (dtype == DType::kF32) {
      std::copy_n(reinterpret_cast<const std::byte*>(vals.data()), bytes.size(), bytes.data());
    } else {
      ConvertF32ToBf16(vals.data(), reinterpret_cast<uint16_t*>(bytes.data()), vals.size());
    }
    ids.resize(pool_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(5));
    for (int i = 0; i <= s.b; ++i) starts.push_back(i);
    for (int i = 0; i < s.b; ++i) seqs.push_back({ids.data() + i * blocks_per_seq, blocks_per_seq, s.nk});
  }
};

// Decode through the paged path (shuffled block ids), the way the decoder
// runs it. `generic` turns the decode kernel off (the tiled prefill kernel
// with a 4-row direct Q·K, the kernel before the decode path existed).
// Software prefetch of the decode kernel, for the in-run comparison.
enum class Prefetch { kDefault, kOld16KiBIntoL1, kNone };

void SetPrefetch(Prefetch p) {
  if (p == Prefetch::kOld16KiBIntoL1) attention_internal::SetDecodePrefetch(16 << 10, true);
  if (p == Prefetch::kNone) attention_internal::SetDecodePrefetch(0, false);
}

using attention_internal::DecodeVariant;

void BM_OursDecodePaged(benchmark::State& state, DType dtype, int block, bool generic,
                        bool huge = false, Prefetch prefetch = Prefetch::kDefault,
                        DecodeVariant variant = DecodeVariant::kChunk64WideQk,
                        Shape s = kDecode, bool general_head8 = false) {
  PagedPool pool(s, dtype, block, huge);
  auto q = Random(int64_t{s.b} * s.hq * s.d, 6);
  std::vector<float> out(q.size());
  PagedAttentionArgs a;
  a.num_heads = s.hq;
  a.q = q.data();
  a.out = out.data();
  a.kv = {&pool.layout, pool.bytes.data(), pool.pool_blocks};
  a.seqs = pool.seqs.data();
  a.query_start = pool.starts.data();
  a.num_seqs = s.b;
  attention_internal::DisableDecodeKernel(generic);
  SetPrefetch(prefetch);
  attention_internal::SetDecodeVariant(variant);
  attention_internal::DisableHead8Decode(general_head8);
  for (auto _ : state) {
    if (!PagedAttention(a).ok()) state.SkipWithError("paged attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  attention_internal::DisableHead8Decode(false);
  attention_internal::SetDecodeVariant(DecodeVariant::kChunk64WideQk);
  attention_internal::ResetDecodePrefetch();
  attention_internal::DisableDecodeKernel(false);
  double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * DTypeSize(dtype);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(Flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One thread, no OpenMP: the decode job of every (sequence, KV head) of the
// paged pool run in turn on the main thread (`nk` keys each, 4 query rows =
// one GQA group), so its CPU time is not blurred by the other thread or by
// descheduling. `jobs` = 1 repeats one job: with nk = 128 its K/V (128 KiB
// f32) stay in L2 and the time is the kernel's math alone.
void BM_DecodeJobsOneThread(benchmark::State& state, DType dtype, int nk, int jobs,
                            Prefetch prefetch = Prefetch::kDefault,
                            DecodeVariant variant = DecodeVariant::kChunk64WideQk) {
  const Shape s = kDecode;
  PagedPool pool(s, dtype, 16);
  const int group = s.hq / s.hkv;
  auto q = Random(int64_t{group} * s.d, 6);
  std::vector<float> out(q.size());
  std::vector<attention_internal::FlashRow> rows(group);
  for (int r = 0; r < group; ++r) {
    rows[r].q = q.data() + r * s.d;
    rows[r].out = out.data() + r * s.d;
    rows[r].key_limit = nk;
  }
  attention_internal::FlashScratch scratch;
  scratch.Reserve(group, s.d);
  const float scale = 1.0f / std::sqrt(float(s.d));
  int64_t done = 0;
  SetPrefetch(prefetch);
  attention_internal::SetDecodeVariant(variant);
  for (auto _ : state) {
    const int job = static_cast<int>(done++ % jobs);
    attention_internal::KvSource src;
    src.dtype = dtype;
    src.layout = &pool.layout;
    src.layer_base = pool.bytes.data();
    src.block_table = pool.seqs[job / s.hkv % s.b].block_table;
    src.kv_head = job % s.hkv;
    attention_internal::RunFlashJob(rows.data(), group, src, s.d, scale, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  attention_internal::SetDecodeVariant(DecodeVariant::kChunk64WideQk);
  attention_internal::ResetDecodePrefetch();
  const double bytes = 2.0 * nk * s.d * DTypeSize(dtype);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns/key"] = benchmark::Counter(1e9 / nk, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Roofline peers measured in the same run.
void BM_MatmulF32(benchmark::State& state) {
  const int64_t m = 1024, k = 1024, n = 1024;
  auto wv = Random(n * k, 7);
  Tensor w = Tensor::Empty({n, k});
  std::copy(wv.begin(), wv.end(), w.f32());
  auto lin = Linear::Create(w, nullptr);
  if (!lin.ok()) {
    state.SkipWithError("Linear::Create failed");
    return;
  }
  auto x = Random(m * k, 8);
  std::vector<float> y(m * n);
  for (auto _ : state) {
    if (!lin->Forward(x.data(), m, y.data()).ok()) state.SkipWithError("matmul failed");
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Sums n floats (a multiple of 32, 32-byte aligned) with AVX2 loads; when
// `ahead` is set it also prefetches that run (the same number of bytes,
// further on), two lines per 128 bytes summed, interleaved with the loads.
__attribute__((target("avx2"))) float SumAvx2Prefetch(const float* p, int64_t n, const float* ahead) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    if (ahead != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + i), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ahead + i + 16), _MM_HINT_T0);
    }
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}

inline float SumAvx2(const float* p, int64_t n) { return SumAvx2Prefetch(p, n, nullptr); }

void BM_StreamRead(benchmark::State& state, bool huge) {
  const int64_t n = int64_t{64} << 20;  // 256 MiB of floats, far beyond the caches
  BenchBuffer buf(n * sizeof(float), huge);
  float* p = reinterpret_cast<float*>(buf.data());
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
  for (auto _ : state) {
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t chunk = (n / nt) / 32 * 32;
      total += SumAvx2(p + t * chunk, chunk);
    }
    benchmark::DoNotOptimize(total);
  }
  state.counters["GB/s"] = benchmark::Counter(n * 4.0 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One thread reading 256 MiB linearly (the single-thread STREAM peer).
void BM_StreamReadOneThread(benchmark::State& state) {
  const int64_t n = int64_t{64} << 20;
  BenchBuffer buf(n * sizeof(float), false);
  float* p = reinterpret_cast<float*>(buf.data());
  for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
  const int64_t piece = int64_t{1} << 20;  // 4 MiB per iteration, cycling through the buffer
  int64_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(SumAvx2(p + at, piece));
    at = (at + piece) % n;
  }
  state.counters["GB/s"] = benchmark::Counter(piece * 4.0 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// How BM_PagedRead walks the pool.
enum PagedReadMode : int {
  kPlain = 0,
  kPrefetch = 1,    // software prefetch of the runs two blocks ahead
  kHugePages = 2,   // pool on transparent huge pages
  kKvAdjacent = 4,  // K and V rows of one (block, head) stored as one run
};

// The read ceiling of the paged layout itself: the same pool and block
// tables as the paged decode benchmark, every K and V byte summed once in
// the same (sequence, KV head, block) order, 2 threads, no attention math.
// kKvAdjacent reads the block as [Hkv][K rows, V rows] instead of
// KvLayout's [K: Hkv rows][V: Hkv rows] (same bytes, other offsets).
void BM_PagedRead(benchmark::State& state, DType dtype, int block, int mode) {
  const Shape s = kDecode;
  PagedPool pool(s, dtype, block, (mode & kHugePages) != 0);
  const KvLayout& L = pool.layout;
  const int64_t es = static_cast<int64_t>(DTypeSize(dtype));
  const int64_t part_floats = int64_t{block} * s.d * es / 4;  // one head's K (or V) rows, as floats
  const int blocks_per_seq = s.nk / block;
  const bool adjacent = (mode & kKvAdjacent) != 0, prefetch = (mode & kPrefetch) != 0;
  auto run = [&](const PagedKvSequence& seq, int h, int blk, bool v) -> const float* {
    if (blk >= blocks_per_seq) return nullptr;
    const std::byte* base = pool.bytes.data() + int64_t{seq.block_table[blk]} * L.BlockBytes();
    const int64_t off = adjacent ? (int64_t{2 * h + (v ? 1 : 0)} * block * s.d)
                                 : (v ? L.VOffset(h, 0) : L.KOffset(h, 0));
    return reinterpret_cast<const float*>(base + off * es);
  };
  for (auto _ : state) {
    float total = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : total)
    for (int job = 0; job < s.b * s.hkv; ++job) {
      const PagedKvSequence& seq = pool.seqs[job / s.hkv];
      const int h = job % s.hkv;
      for (int blk = 0; blk < blocks_per_seq; ++blk) {
        // Two blocks ahead = 16 KiB per stream for f32 d=128, the decode kernel's distance.
        const int ahead = blk + std::max(1, static_cast<int>(16384 / (part_floats * 4)));
        total += SumAvx2Prefetch(run(seq, h, blk, false), part_floats,
                                 prefetch ? run(seq, h, ahead, false) : nullptr);
        total += SumAvx2Prefetch(run(seq, h, blk, true), part_floats,
                                 prefetch ? run(seq, h, ahead, true) : nullptr);
      }
    }
    benchmark::DoNotOptimize(total);
  }
  double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * es;
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_StreamRead, 4k_pages, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_StreamRead, huge_pages, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatmulF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursAvx2, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnMatmulInner, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursAvx2, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursScalar, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnMatmulInner, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, causal_b1_hq32_hkv8_n2048_d128, kCausal)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, full_b1_hq32_hkv8_n2048_d128, kCausalFull)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursAvx2, causal_b1_hq32_hkv8_n2048_d128, kCausal)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, causal_b1_hq32_hkv8_n2048_d128, kCausal)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, decode_dense_b32_hq32_hkv8_nk1024_d128, kDecode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, chunk64_decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, false, false, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, chunk64_decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, false, false, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, tiled_decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, false, false, Prefetch::kDefault, DecodeVariant::kBlockTiled)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, tiled_decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, false, false, Prefetch::kDefault, DecodeVariant::kBlockTiled)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_f32_huge, DType::kF32, 16, false, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_bf16_huge, DType::kBF16, 16, false, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, old_prefetch_decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, false, false, Prefetch::kOld16KiBIntoL1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, old_prefetch_decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, false, false, Prefetch::kOld16KiBIntoL1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_f32_blk64, DType::kF32, 64, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_bf16_blk64, DType::kBF16, 64, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, generic_decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, generic_decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, tiny_decode_b16_hq8_hkv4_nk96_d8_f32, DType::kF32, 16, false, false, Prefetch::kDefault, DecodeVariant::kChunk64WideQk, kTinyDecode)->Unit(benchmark::kMicrosecond)->UseRealTime();
// The same through the general decode kernel (the head-of-8 path off): the peer of the line above.
BENCHMARK_CAPTURE(BM_OursDecodePaged, general_tiny_decode_b16_hq8_hkv4_nk96_d8_f32, DType::kF32, 16, false, false, Prefetch::kDefault, DecodeVariant::kChunk64WideQk, kTinyDecode, true)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16, DType::kF32, 16, kPlain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, bf16_blk16, DType::kBF16, 16, kPlain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_prefetch, DType::kF32, 16, kPrefetch)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_huge, DType::kF32, 16, kHugePages)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_huge_prefetch, DType::kF32, 16, kHugePages | kPrefetch)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_adjacent, DType::kF32, 16, kKvAdjacent)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_adjacent_prefetch, DType::kF32, 16, kKvAdjacent | kPrefetch)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16_huge_adjacent_prefetch, DType::kF32, 16, kHugePages | kKvAdjacent | kPrefetch)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StreamReadOneThread)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_l2_resident, DType::kF32, 128, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_l2_resident, DType::kBF16, 128, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_l2_resident_chunk64, DType::kF32, 128, 1, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_l2_resident_chunk64, DType::kBF16, 128, 1, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_dram, DType::kF32, 1024, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_dram_chunk64, DType::kF32, 1024, 256, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_dram_chunk64, DType::kBF16, 1024, 256, Prefetch::kDefault, DecodeVariant::kChunk64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_dram_tiled, DType::kF32, 1024, 256, Prefetch::kDefault, DecodeVariant::kBlockTiled)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_dram_tiled, DType::kBF16, 1024, 256, Prefetch::kDefault, DecodeVariant::kBlockTiled)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_dram, DType::kBF16, 1024, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_dram_old_prefetch, DType::kF32, 1024, 256, Prefetch::kOld16KiBIntoL1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_dram_old_prefetch, DType::kBF16, 1024, 256, Prefetch::kOld16KiBIntoL1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, f32_dram_no_prefetch, DType::kF32, 1024, 256, Prefetch::kNone)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeJobsOneThread, bf16_dram_no_prefetch, DType::kBF16, 1024, 256, Prefetch::kNone)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OnednnGraph, decode_b32_hq32_hkv8_nk1024_d128, kDecode)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) {
  std::printf("attention kernel micro-kernels: %s, OpenMP threads: %d\n",
              attnserve::attention_internal::FlashKernelIsa(), omp_get_max_threads());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
