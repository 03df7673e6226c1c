// decoder_bench MODEL [--dtype f32|bf16|q8_0] [--matmul-precision f32|bf16] [--steps N] [--batch N] [--reps N] [--context N] [--no-prefill] [--no-decode] [--prepare-kernels]
// Prints JSON lines: the STREAM-like read bandwidth, then decode tokens/s at
// batch 1, 4, 8, 16 (each sequence: a 16-token prompt, or --context N
// tokens, prefilled, then N decode steps timed, medians over 3 runs) and
// prefill tokens/s of one 512-token
// prompt, all through DecoderEngine::Step, the call the server uses.
// --batch N times only that batch size, --no-decode skips the decode runs
// and --no-prefill the prefill run (for profiling one phase, or models whose
// context is under 512); --reps N sets the runs per median for both;
// --prepare-kernels builds every oneDNN primitive at load, as the server does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/attention/head8_decode_kernel.h"
#include "engine/core/build_info.h"
#include "engine/core/large_alloc.h"
#include "engine/runtime/decoder_engine.h"

namespace attnserve {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Sum of a 1 GiB array, split over the OpenMP threads: read bandwidth GB/s.
// 32 independent float partial sums per thread (a vectorisable elementwise
// loop): one double accumulator would be bound by the add latency (~3 GB/s
// per core), not by memory. huge_pages: the array on 2 MiB pages, as the
// weights are (engine/core/large_alloc.h), which is the bound; otherwise on
// whatever a plain allocation gets (4 KiB pages where transparent huge pages
// are "madvise"), shown beside it: on this VM 23-26 against 31 GB/s.
double StreamReadGbps(bool huge_pages) {
  const size_t n = size_t{1} << 28;  // floats
  std::unique_ptr<float, decltype(&std::free)> buf(
      static_cast<float*>(huge_pages ? AllocateLarge(n * sizeof(float))
                                     : std::aligned_alloc(64, n * sizeof(float))),
      &std::free);
  if (buf == nullptr) return 0.0;
  float* a = buf.get();
  std::fill(a, a + n, 1.0f);
  std::vector<double> gbps;
  for (int rep = 0; rep < 5; ++rep) {
    double sum = 0.0;
    const auto t0 = Clock::now();
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (size_t i = 0; i < n; i += 4096) {
      float acc[32] = {};
      for (size_t j = i; j < i + 4096; j += 32) {
        for (int l = 0; l < 32; ++l) acc[l] += a[j + l];
      }
      float s = 0.0f;
      for (float v : acc) s += v;
      sum += s;
    }
    const auto t1 = Clock::now();
    if (sum != static_cast<double>(n)) std::printf("stream sum mismatch %f\n", sum);
    gbps.push_back(n * sizeof(float) / Seconds(t0, t1) / 1e9);
  }
  return Median(gbps);
}

std::vector<int32_t> Prompt(int n, int vocab, int salt) {
  std::vector<int32_t> p(n);
  // 64-bit: with many --reps, salt * 104729 overflows int (negative ids).
  for (int i = 0; i < n; ++i) {
    p[i] = static_cast<int32_t>(2 + (int64_t{i} * 7919 + int64_t{salt} * 104729) % (vocab - 2));
  }
  return p;
}

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: decoder_bench MODEL [--dtype f32|bf16|q8_0] [--matmul-precision f32|bf16] [--steps N] [--batch N] [--reps N] [--context N] [--no-prefill] [--no-decode] [--prepare-kernels] [--general-head8]\n");
    return 2;
  }
  std::string path = argv[1];
  DType dtype = DType::kF32;
  MatmulPrecision precision = MatmulPrecision::kF32;
  int steps = 16;
  std::vector<int> batches = {1, 4, 8, 16};
  bool prefill = true;
  bool prepare = false;
  bool general_head8 = false;
  int reps = 3;
  int context = 16;  // prompt tokens before the timed decode steps
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-prefill") == 0) prefill = false;
    if (std::strcmp(argv[i], "--no-decode") == 0) batches.clear();
    if (std::strcmp(argv[i], "--prepare-kernels") == 0) prepare = true;
    // Heads of 8 through the general decode kernel: the in-run comparison for
    // the head-of-8 kernel (stories260K).
    if (std::strcmp(argv[i], "--general-head8") == 0) general_head8 = true;
  }
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--batch") == 0) batches = {std::atoi(argv[i + 1])};
    if (std::strcmp(argv[i], "--dtype") == 0) {
      dtype = std::strcmp(argv[i + 1], "bf16") == 0   ? DType::kBF16
              : std::strcmp(argv[i + 1], "q8_0") == 0 ? DType::kQ8_0
                                                      : DType::kF32;
    }
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--context") == 0) context = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--matmul-precision") == 0) {
      const std::optional<MatmulPrecision> p = ParseMatmulPrecision(argv[i + 1]);
      if (!p.has_value()) {
        std::fprintf(stderr, "--matmul-precision %s: must be f32 or bf16\n", argv[i + 1]);
        return 2;
      }
      precision = *p;
    }
  }
  const EngineInfo info = GetEngineInfo();
  const double gbps = StreamReadGbps(/*huge_pages=*/true);
  const double gbps_default_pages = StreamReadGbps(/*huge_pages=*/false);
  std::printf("{\"bench\":\"stream_read\",\"gbps\":%.2f,\"gbps_default_pages\":%.2f,\"threads\":%d,"
              "\"isa\":\"%s\"}\n",
              gbps, gbps_default_pages, info.threads, info.cpu_isa.c_str());
  DecoderLoadOptions opt;
  opt.weight_dtype = dtype;
  opt.matmul_precision = precision;
  // What the JSON lines call this configuration: "f32", "bf16", or
  // "f32-bf16mm" (f32 weights, bf16 matmuls).
  const std::string label = std::string(DTypeName(dtype)) +
                            (precision == MatmulPrecision::kBf16 ? "-bf16mm" : "") +
                            (general_head8 ? "-general-head8" : "");
  attention_internal::DisableHead8Decode(general_head8);
  opt.prepare_kernels = prepare;
  const auto t_load = Clock::now();
  auto model = DecoderModel::Load(path, opt);
  if (!model.ok()) {
    std::fprintf(stderr, "load: %s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  const ModelDescription& d = (*model)->description();
  // Bytes read per decode step: every matrix once; the embedding table counts
  // once (tied: it is the lm head; untied: only a row is read, plus lm_head).
  const double weight_bytes = static_cast<double>(d.weight_bytes);
  std::printf("{\"bench\":\"load\",\"dtype\":\"%s\",\"seconds\":%.2f,\"weight_bytes\":%lld,"
              "\"bound_tok_s\":%.1f}\n",
              label.c_str(), Seconds(t_load, Clock::now()), static_cast<long long>(d.weight_bytes),
              gbps * 1e9 / weight_bytes);
  std::fflush(stdout);
  KvCacheOptions kv;
  kv.kv_cache_bytes = d.kv_bytes_per_token * std::max(16 * 1024, 16 * (context + steps + 2));
  kv.prefix_sharing = false;
  auto engine_or = DecoderEngine::Create(*model, kv);
  if (!engine_or.ok()) return Fail("engine", engine_or.status());
  DecoderEngine& engine = **engine_or;
  GenerationParams greedy;
  greedy.temperature = 0.0f;
  greedy.ignore_eos = true;
  greedy.max_new_tokens = steps + 2;  // within any context: 16 prompt tokens, one prefill, `steps` decodes

  for (int batch : batches) {
    std::vector<double> rates;
    for (int rep = 0; rep < reps; ++rep) {
      std::vector<StepItem> items;
      for (int b = 0; b < batch; ++b) {
        auto id = engine.AddSequence(Prompt(context, d.vocab_size, b + 100 * rep), greedy);
        if (!id.ok()) return Fail("add sequence", id.status());
        items.push_back({*id, 512});
      }
      while (engine.InPrefill(items[0].seq)) {  // chunks of 512 per sequence
        if (auto s = engine.Step(items); !s.ok()) return Fail("prefill", s.status());
      }
      const auto t0 = Clock::now();
      for (int s = 0; s < steps; ++s) {
        if (auto s = engine.Step(items); !s.ok()) return Fail("decode step", s.status());
      }
      rates.push_back(batch * steps / Seconds(t0, Clock::now()));
      for (const StepItem& it : items) engine.Release(it.seq);
    }
    std::printf("{\"bench\":\"decode\",\"dtype\":\"%s\",\"batch\":%d,\"context\":%d,\"tok_s\":%.1f,"
                "\"bound_fraction\":%.3f}\n",
                label.c_str(), batch, context, Median(rates),
                batch == 1 ? Median(rates) / (gbps * 1e9 / weight_bytes) : 0.0);
    std::fflush(stdout);
  }
  if (!prefill) return 0;
  std::vector<double> rates;
  for (int rep = 0; rep < reps; ++rep) {
    auto id = engine.AddSequence(Prompt(512, d.vocab_size, rep), greedy);
    if (!id.ok()) return Fail("add prefill sequence", id.status());
    StepItem item{*id, 512};
    const auto t0 = Clock::now();
    if (auto s = engine.Step({&item, 1}); !s.ok()) return Fail("prefill 512", s.status());
    rates.push_back(512 / Seconds(t0, Clock::now()));
    engine.Release(*id);
  }
  std::printf("{\"bench\":\"prefill\",\"dtype\":\"%s\",\"tokens\":512,\"tok_s\":%.1f}\n",
              label.c_str(), Median(rates));
  return 0;
}

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) { return attnserve::Main(argc, argv); }
