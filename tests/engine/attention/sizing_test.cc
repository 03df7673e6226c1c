#include "engine/attention/sizing.h"

#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "engine/attention/multi_head_attention.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

TEST(SizingTest, ClassicMhaParameters) {
  EXPECT_EQ(MhaParameterCount(768), 2'362'368);  // reference figure
  EXPECT_EQ(MhaParameterCount(768, false), 2'359'296);
}

TEST(SizingTest, MhaParameterCountMatchesTheModule) {
  // The formula counts exactly what nn.MultiheadAttention's state dict holds.
  const int64_t D = 64;
  TensorMap sd;
  sd.emplace("in_proj_weight", Tensor::Zeros({3 * D, D}));
  sd.emplace("in_proj_bias", Tensor::Zeros({3 * D}));
  sd.emplace("out_proj.weight", Tensor::Zeros({D, D}));
  sd.emplace("out_proj.bias", Tensor::Zeros({D}));
  int64_t n = 0;
  for (const auto& [name, t] : sd) n += t.numel();
  EXPECT_EQ(n, MhaParameterCount(D));
  EXPECT_TRUE(MultiHeadAttention::FromStateDict({static_cast<int>(D), 4}, sd).ok());
}

TEST(SizingTest, KvCacheReferenceFigures) {
  // B=1, L=32 layers, N=4096 tokens, d=128, 2 bytes.
  EXPECT_EQ(KvCacheBytes(1, 32, 4096, 32, 128, 2), 2048 * kMiB);  // MHA
  EXPECT_EQ(KvCacheBytes(1, 32, 4096, 8, 128, 2), 512 * kMiB);    // GQA
  EXPECT_EQ(KvCacheBytes(1, 32, 4096, 1, 128, 2), 64 * kMiB);     // MQA
}

TEST(SizingTest, AttentionWeightsBytes) {
  // Reference example 17: B=1, H=16, bf16; quadruples when N doubles.
  std::map<int64_t, int64_t> want = {{512, 8}, {1024, 32}, {2048, 128}, {4096, 512}};
  for (auto [n, mib] : want) EXPECT_EQ(AttentionWeightsBytes(1, 16, n, 2), mib * kMiB) << n;
}

}  // namespace
}  // namespace attnserve
