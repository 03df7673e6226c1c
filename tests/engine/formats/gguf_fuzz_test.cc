// Drives tests/fuzz/gguf_fuzzer.cc without libFuzzer: a fixed-seed mutation
// loop over seed files (bit flips, interesting values in the header and
// tensor-info region, truncations, splices). Deterministic and bounded.
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/gguf_fuzzer.cc"  // NOLINT: the fuzz target itself
#include "tests/fuzz/gguf_test_writer.h"

namespace attnserve {
namespace {

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return {s.begin(), s.end()};
}

std::vector<uint8_t> SmallSeed() {
  testing::GgufTestWriter w;
  w.KvStr("general.architecture", "llama");
  w.KvU32("llama.block_count", 1);
  w.KvStrArray("tokenizer.ggml.tokens", {"a", "b"});
  w.KvF32Array("tokenizer.ggml.scores", {0.f, 1.f});
  std::vector<float> v(64, 0.5f);
  w.TensorF32("token_embd.weight", {32, 2}, v);
  std::vector<std::byte> q(34);
  w.Tensor("q", {32}, 8, q);
  std::vector<std::byte> b = w.Build();
  std::vector<uint8_t> out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

void Mutate(std::vector<uint8_t>& d, std::mt19937_64& rng) {
  if (d.empty()) return;
  // Most structure lives in the first few KB (header, metadata, tensor infos).
  size_t hot = 0;
  auto pos = [&](size_t limit) { return static_cast<size_t>(rng() % limit); };
  static const uint64_t kInteresting[] = {0, 1, 2, 3, 31, 32, 33, 0x7f, 0x80, 0xff, 0x7fffffff, 0xffffffff,
                                          1ull << 32, 1ull << 62, ~0ull, 0x8000000000000000ull};
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < n; ++k) {
    hot = std::min<size_t>(d.size(), 8192);  // recomputed: a truncation may shrink d
    switch (rng() % 6) {
      case 0: d[pos(hot)] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 1: d[pos(hot)] = static_cast<uint8_t>(kInteresting[rng() % 16]); break;
      case 2: {
        size_t p = pos(hot);
        uint64_t v = kInteresting[rng() % 16];
        size_t w = (rng() % 2) ? 4 : 8;
        if (p + w <= d.size()) std::memcpy(d.data() + p, &v, w);
        break;
      }
      case 3: d.resize(pos(d.size()) + 1); break;
      case 4: {
        size_t a = pos(hot), b = pos(hot), len = std::min<size_t>(rng() % 64, d.size() - std::max(a, b));
        std::memmove(d.data() + a, d.data() + b, len);
        break;
      }
      case 5: d[pos(d.size())] = static_cast<uint8_t>(rng()); break;
    }
  }
}

TEST(GgufFuzzTest, FixedSeedMutationLoop) {
  std::vector<std::vector<uint8_t>> seeds = {
      SmallSeed(),
      ReadBytes(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/llama_tiny/model-q8_0.gguf"),
      ReadBytes(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/qwen2_tiny/model.gguf"),
      ReadBytes(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/gpt2_tiny/model.gguf"),
      // Every block type llama.cpp quantises weights to, one tensor each.
      ReadBytes(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/llama_quant_mix/model.gguf"),
  };
  for (const auto& s : seeds) {
    ASSERT_GT(s.size(), 100u);
    EXPECT_EQ(fuzz::GgufFuzzOne(s.data(), s.size()), 1) << "every seed parses";
  }
  std::mt19937_64 rng(20260412);
  constexpr int kIterations = 3000;
  int parsed = 0;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> d = seeds[it % seeds.size()];
    Mutate(d, rng);
    parsed += fuzz::GgufFuzzOne(d.data(), d.size());
  }
  // The loop exercises both outcomes (a mutator that only ever broke the
  // magic, or never broke anything, would test little).
  EXPECT_GT(parsed, kIterations / 20);
  EXPECT_LT(parsed, kIterations - kIterations / 20);
}

}  // namespace
}  // namespace attnserve
