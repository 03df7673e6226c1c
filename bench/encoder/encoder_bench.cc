// encoder_bench MODEL_DIR_OR_GGUF [--dtype f32|bf16|q8_0] [--matmul-precision f32|bf16] [--min-seconds S] [--shapes 1x16,8x128,...]
// Prints one JSON line per measurement:
//   {"engine":"attnserve","batch":B,"seq_len":N,"sentences_per_s":..,"tokens_per_s":..,"latency_ms":..}
// Inputs are token ids ([CLS] + random word pieces + [SEP], exactly N per
// sequence) so every engine runs the same shapes; tokenization is excluded
// (peers get the same ids). Each shape runs one warm-up, then repeats until
// min-seconds have passed (at least 3 runs); the median run is reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/models/encoder_model.h"
#include "engine/ops/linear.h"

namespace {

using attnserve::EncoderInput;
using attnserve::EncoderModel;

std::vector<EncoderInput> MakeBatch(int batch, int seq_len, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> word(1996, 29611);  // ordinary word pieces
  std::vector<EncoderInput> inputs(batch);
  for (EncoderInput& in : inputs) {
    in.is_text = false;
    in.token_ids.push_back(101);
    for (int i = 0; i < seq_len - 2; ++i) in.token_ids.push_back(word(rng));
    in.token_ids.push_back(102);
  }
  return inputs;
}

// The machine's practical f32 GEMM rate on the forward's largest shape (the
// feed-forward up-projection of 4096 tokens: [4096, 384] x [384, 1536]),
// through the same oneDNN Linear the model uses: the roofline the encoder's
// achieved FLOP rate is compared with.
double GemmGflops(double min_seconds) {
  const int64_t m = 4096, k = 384, n = 1536;
  attnserve::Tensor w = attnserve::Tensor::Zeros({n, k});
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] = 0.001f * static_cast<float>(i % 97);
  auto linear = attnserve::Linear::Create(w, nullptr);
  if (!linear.ok()) return 0;
  attnserve::Tensor x = attnserve::Tensor::Zeros({m, k});
  attnserve::Tensor y = attnserve::Tensor::Empty({m, n});
  (void)linear->Forward(x.f32(), m, y.f32());
  std::vector<double> times;
  double spent = 0;
  while (times.size() < 3 || spent < min_seconds) {
    auto t0 = std::chrono::steady_clock::now();
    (void)linear->Forward(x.f32(), m, y.f32());
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    spent += times.back();
  }
  std::sort(times.begin(), times.end());
  return 2.0 * m * k * n / times[0] / 1e9;  // best run: the roofline is an upper bound
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR_OR_GGUF [--dtype f32|bf16|q8_0] [--matmul-precision f32|bf16] [--min-seconds S] [--shapes BxN,...]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::string dtype = "f32";
  std::string precision = "f32";
  double min_seconds = 2.0;
  std::string shapes = "1x16,8x16,32x16,128x16,1x128,8x128,32x128,128x128,1x256,8x256,32x256,128x256";
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--dtype") dtype = argv[i + 1];
    if (flag == "--matmul-precision") precision = argv[i + 1];
    if (flag == "--min-seconds") min_seconds = std::atof(argv[i + 1]);
    if (flag == "--shapes") shapes = argv[i + 1];
  }
  attnserve::EncoderLoadOptions options;
  options.weight_dtype = dtype == "bf16"   ? attnserve::DType::kBF16
                         : dtype == "q8_0" ? attnserve::DType::kQ8_0
                                           : attnserve::DType::kF32;
  const std::optional<attnserve::MatmulPrecision> parsed = attnserve::ParseMatmulPrecision(precision);
  if (!parsed.has_value()) {
    std::fprintf(stderr, "--matmul-precision %s: must be f32 or bf16\n", precision.c_str());
    return 2;
  }
  options.matmul_precision = *parsed;
  // The engine name says what was measured: "attnserve-f32", or
  // "attnserve-f32-bf16mm" for f32 weights with bf16 matmuls.
  const std::string engine = precision == "f32" ? dtype : dtype + "-bf16mm";
  auto model = EncoderModel::Load(dir, options);
  if (!model.ok()) {
    std::fprintf(stderr, "load failed: %s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  if (dtype == "f32" && precision == "f32") {
    std::printf("{\"engine\":\"gemm-roofline\",\"gflops\":%.2f}\n", GemmGflops(min_seconds));
    std::fflush(stdout);
  }
  std::mt19937 rng(1);
  for (absl::string_view shape : absl::StrSplit(shapes, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(shape, 'x');
    int batch = 0, seq_len = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &batch) || !absl::SimpleAtoi(parts[1], &seq_len)) {
      std::fprintf(stderr, "bad shape %s\n", std::string(shape).c_str());
      return 2;
    }
    std::vector<EncoderInput> inputs = MakeBatch(batch, seq_len, rng);
    auto run = [&]() {
      auto t0 = std::chrono::steady_clock::now();
      auto r = (*model)->Encode(inputs, {});
      auto t1 = std::chrono::steady_clock::now();
      if (!r.ok()) {
        std::fprintf(stderr, "encode failed: %s\n", std::string(r.status().message()).c_str());
        std::exit(1);
      }
      return std::chrono::duration<double>(t1 - t0).count();
    };
    run();  // warm-up
    std::vector<double> times;
    double spent = 0;
    while (times.size() < 3 || spent < min_seconds) {
      times.push_back(run());
      spent += times.back();
    }
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    std::printf(
        "{\"engine\":\"attnserve-%s\",\"batch\":%d,\"seq_len\":%d,\"sentences_per_s\":%.2f,\"tokens_per_s\":%.1f,"
        "\"latency_ms\":%.3f,\"runs\":%zu}\n",
        engine.c_str(), batch, seq_len, batch / t, batch * seq_len / t, t * 1e3, times.size());
    std::fflush(stdout);
  }
  return 0;
}
