// Attention benchmarks (Google Benchmark). Counters: GFLOP/s (4·B·Hq·Nq·Nk·d
// per call, the full square even for causal, so "causal" speed-ups show as
// higher GFLOP/s), GB/s (decode: K and V bytes read per call).
// Peers in the same binary: oneDNN Graph SDPA, an f32 oneDNN matmul (through
// ops/Linear) and a STREAM-like read, so ratios compare like with like.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "bench/attention/onednn_graph_sdpa.h"
#include "bench/attention/onednn_matmul_sdpa.h"
#include "engine/attention/decode_kernel.h"
#include "engine/attention/flash_kernel.h"
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

// A paged KV pool laid out the way engine/kv writes it: Nk positions per
// sequence in blocks of `block` tokens, block ids shuffled over the pool.
struct PagedPool {
  KvLayout layout;
  int pool_blocks = 0;
  std::vector<std::byte> bytes;
  std::vector<int32_t> ids;
  std::vector<PagedKvSequence> seqs;
  std::vector<int32_t> starts;

  PagedPool(const Shape& s, DType dtype, int block) : layout{s.hkv, s.d, block, dtype} {
    const int blocks_per_seq = s.nk / block;
    pool_blocks = s.b * blocks_per_seq;
    bytes.resize(int64_t{pool_blocks} * layout.BlockBytes());
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
void BM_OursDecodePaged(benchmark::State& state, DType dtype, int block, bool generic) {
  const Shape s = kDecode;
  PagedPool pool(s, dtype, block);
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
  for (auto _ : state) {
    if (!PagedAttention(a).ok()) state.SkipWithError("paged attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  attention_internal::DisableDecodeKernel(false);
  double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * DTypeSize(dtype);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(Flops(s) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
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

__attribute__((target("avx2"))) float SumAvx2(const float* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}

void BM_StreamRead(benchmark::State& state) {
  const int64_t n = int64_t{64} << 20;  // 256 MiB of floats, far beyond the caches
  Tensor buf = Tensor::Empty({n});
  float* p = buf.f32();
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

// The read ceiling of the paged layout itself: the same pool and block
// tables as the paged decode benchmark, every K and V byte summed once in
// the same (sequence, KV head, block) order, 2 threads, no attention math.
void BM_PagedRead(benchmark::State& state, DType dtype, int block) {
  const Shape s = kDecode;
  PagedPool pool(s, dtype, block);
  const KvLayout& L = pool.layout;
  const int64_t es = static_cast<int64_t>(DTypeSize(dtype));
  const int64_t part_floats = int64_t{block} * s.d * es / 4;  // one head's K (or V) rows, as floats
  const int blocks_per_seq = s.nk / block;
  for (auto _ : state) {
    float total = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : total)
    for (int job = 0; job < s.b * s.hkv; ++job) {
      const PagedKvSequence& seq = pool.seqs[job / s.hkv];
      const int h = job % s.hkv;
      for (int blk = 0; blk < blocks_per_seq; ++blk) {
        const std::byte* base = pool.bytes.data() + int64_t{seq.block_table[blk]} * L.BlockBytes();
        total += SumAvx2(reinterpret_cast<const float*>(base + L.KOffset(h, 0) * es), part_floats);
        total += SumAvx2(reinterpret_cast<const float*>(base + L.VOffset(h, 0) * es), part_floats);
      }
    }
    benchmark::DoNotOptimize(total);
  }
  double bytes = 2.0 * s.b * s.hkv * s.nk * s.d * es;
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_StreamRead)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatmulF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnMatmulInner, minilm_b32_h12_n128_d32, kMiniLm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursScalar, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnMatmulInner, bert_b8_h12_n512_d64, kBert512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, causal_b1_hq32_hkv8_n2048_d128, kCausal)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, full_b1_hq32_hkv8_n2048_d128, kCausalFull)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OnednnGraph, causal_b1_hq32_hkv8_n2048_d128, kCausal)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Ours, decode_dense_b32_hq32_hkv8_nk1024_d128, kDecode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_f32_blk64, DType::kF32, 64, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, decode_b32_hq32_hkv8_nk1024_d128_bf16_blk64, DType::kBF16, 64, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, generic_decode_b32_hq32_hkv8_nk1024_d128_f32, DType::kF32, 16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OursDecodePaged, generic_decode_b32_hq32_hkv8_nk1024_d128_bf16, DType::kBF16, 16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, f32_blk16, DType::kF32, 16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PagedRead, bf16_blk16, DType::kBF16, 16)->Unit(benchmark::kMillisecond)->UseRealTime();
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
