// Drives the safetensors fuzz body (tests/fuzz/safetensors_fuzz_target.h)
// with a fixed-seed mutation loop over a small seed corpus: byte flips,
// insertions, deletions, truncations and splices of JSON tokens. Bounded, so
// it runs in CI without libFuzzer; any crash, sanitizer report or span outside
// the input fails it.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/formats/safetensors_test_util.h"
#include "tests/fuzz/safetensors_fuzz_target.h"

namespace attnserve {
namespace {

std::vector<std::string> SeedCorpus() {
  using testing_util::SafetensorsImage;
  std::string data(64, '\x3f');
  return {
      SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", data.substr(0, 16)),
      SafetensorsImage(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}})",
                       data.substr(0, 12)),
      SafetensorsImage(R"({"p":{"dtype":"I64","shape":[1,4],"data_offsets":[0,32]},"z":{"dtype":"F32","shape":[0],"data_offsets":[32,32]}})",
                       data.substr(0, 32)),
  };
}

std::string Mutate(const std::string& in, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  static const char* kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "-1", "0", "18446744073709551615",
                                  "1e308", "null", "true", "\"F32\"", "\"BF16\"", "\"X\"", "\\u0000", "99999999"};
  std::string s = in;
  int steps = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < steps; ++k) {
    size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 7) {
      case 0:
        if (!s.empty() && pos < s.size()) s[pos] = static_cast<char>(rng());
        break;
      case 1:
        if (!s.empty() && pos < s.size()) s[pos] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 2:
        s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 3:
        if (pos < s.size()) s.erase(pos, 1 + rng() % 8);
        break;
      case 4:
        s.resize(pos);
        break;
      case 5: {  // rewrite the header length
        if (s.size() >= 8) {
          uint64_t n = rng() % (s.size() + 16);
          for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        }
        break;
      }
      default: {  // splice with another seed
        const std::string& other = corpus[rng() % corpus.size()];
        size_t cut = other.empty() ? 0 : rng() % other.size();
        s = s.substr(0, pos) + other.substr(cut);
        break;
      }
    }
  }
  return s;
}

TEST(SafetensorsFuzzTest, FixedSeedMutationLoop) {
  std::vector<std::string> corpus = SeedCorpus();
  for (const std::string& seed : corpus) {
    ASSERT_TRUE(SafetensorsFuzzOne(reinterpret_cast<const uint8_t*>(seed.data()), seed.size()));
  }
  std::mt19937_64 rng(20240722);
  int parsed = 0;
  constexpr int kIterations = 30000;
  for (int i = 0; i < kIterations; ++i) {
    std::string input = Mutate(corpus[rng() % corpus.size()], corpus, rng);
    if (SafetensorsFuzzOne(reinterpret_cast<const uint8_t*>(input.data()), input.size())) {
      ++parsed;
      if (corpus.size() < 64) corpus.push_back(input);  // keep interesting inputs, like a fuzzer would
    }
  }
  // Both outcomes must be exercised, or the mutator is not reaching the parser.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, kIterations);
}

}  // namespace
}  // namespace attnserve
