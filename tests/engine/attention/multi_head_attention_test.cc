#include "engine/attention/multi_head_attention.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/attention/attention_ref.h"
#include "gtest/gtest.h"
#include "tests/engine/attention/attention_test_util.h"

namespace attnserve {
namespace {

using testing_util::AllClose;
using testing_util::RandomVec;

Tensor FromVec(const std::vector<float>& v, std::vector<int64_t> shape) {
  Tensor t = Tensor::Empty(std::move(shape));
  std::memcpy(t.f32(), v.data(), t.bytes());
  return t;
}

TensorMap RandomStateDict(int64_t D, std::mt19937& rng) {
  TensorMap sd;
  sd.emplace("in_proj_weight", FromVec(RandomVec(3 * D * D, rng, -0.2f, 0.2f), {3 * D, D}));
  sd.emplace("in_proj_bias", FromVec(RandomVec(3 * D, rng), {3 * D}));
  sd.emplace("out_proj.weight", FromVec(RandomVec(D * D, rng, -0.2f, 0.2f), {D, D}));
  sd.emplace("out_proj.bias", FromVec(RandomVec(D, rng), {D}));
  return sd;
}

TEST(MultiHeadAttentionTest, EmbedDimNotDivisibleByHeadsIsAConstructionError) {
  std::mt19937 rng(1);
  TensorMap sd = RandomStateDict(30, rng);
  auto mha = MultiHeadAttention::FromStateDict({30, 4}, sd);
  ASSERT_FALSE(mha.ok());
  EXPECT_NE(mha.status().message().find("not divisible"), std::string::npos) << mha.status();
}

TEST(MultiHeadAttentionTest, MissingOrMisshapedTensorsAreNamed) {
  std::mt19937 rng(2);
  TensorMap sd = RandomStateDict(32, rng);
  sd.erase("out_proj.weight");
  auto st = MultiHeadAttention::FromStateDict({32, 4}, sd, "").status();
  EXPECT_NE(st.message().find("out_proj.weight"), std::string::npos) << st;
  TensorMap sd2 = RandomStateDict(32, rng);
  sd2.erase("in_proj_bias");
  sd2.emplace("in_proj_bias", Tensor::Zeros({5}));
  st = MultiHeadAttention::FromStateDict({32, 4}, sd2).status();
  EXPECT_NE(st.message().find("in_proj_bias"), std::string::npos) << st;
}

// Identity projections: the module's output must be exactly the per-head
// attention of x, heads concatenated in order (not summed, not shuffled),
// then W_O applied.
TEST(MultiHeadAttentionTest, HeadsConcatenatedInOrderThenOutputProjection) {
  const int D = 64, H = 4, d = D / H, B = 2, N = 7;
  std::mt19937 rng(3);
  std::vector<float> wo = RandomVec(D * D, rng, -0.3f, 0.3f);
  TensorMap sd;
  Tensor in_w = Tensor::Zeros({3 * D, D});
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < D; ++i) in_w.f32()[(p * D + i) * D + i] = 1.0f;
  sd.emplace("in_proj_weight", std::move(in_w));
  sd.emplace("out_proj.weight", FromVec(wo, {D, D}));
  auto mha = MultiHeadAttention::FromStateDict({D, H}, sd);
  ASSERT_TRUE(mha.ok()) << mha.status();
  std::vector<float> x = RandomVec(B * N * D, rng, -2, 2);

  // Expected: reference attention on x viewed as [B, N, H, d], then · W_Oᵀ.
  std::vector<float> attn(B * N * D);
  SdpaArgs a;
  a.shape = {B, H, H, N, N, d};
  a.q = a.k = a.v = ConstAttnView::Interleaved(x.data(), H, N, d);
  a.out = AttnView::Interleaved(attn.data(), H, N, d);
  ASSERT_TRUE(ScaledDotProductAttentionRef(a).ok());
  std::vector<float> want(B * N * D);
  for (int r = 0; r < B * N; ++r)
    for (int o = 0; o < D; ++o) {
      double acc = 0;
      for (int i = 0; i < D; ++i) acc += double(attn[r * D + i]) * wo[o * D + i];
      want[r * D + o] = static_cast<float>(acc);
    }
  MultiHeadAttention::Inputs in;
  in.query = in.key = in.value = x.data();
  in.batch_size = B;
  in.q_len = in.kv_len = N;
  std::vector<float> out(B * N * D);
  ASSERT_TRUE(mha->Forward(in, out.data()).ok());
  EXPECT_TRUE(AllClose(out, want, 1e-5, 1e-4));
}

TEST(MultiHeadAttentionTest, FusedSelfAndSeparateCrossPathsAgree) {
  const int D = 96, H = 6, B = 2, N = 9;
  std::mt19937 rng(4);
  TensorMap sd = RandomStateDict(D, rng);
  auto mha = MultiHeadAttention::FromStateDict({D, H}, sd);
  ASSERT_TRUE(mha.ok());
  std::vector<float> x = RandomVec(B * N * D, rng), x2 = x, x3 = x;
  MultiHeadAttention::Inputs in;
  in.query = in.key = in.value = x.data();
  in.batch_size = B;
  in.q_len = in.kv_len = N;
  std::vector<float> fused(B * N * D), separate(B * N * D), again(B * N * D);
  ASSERT_TRUE(mha->Forward(in, fused.data()).ok());
  in.key = x2.data();
  in.value = x3.data();
  ASSERT_TRUE(mha->Forward(in, separate.data()).ok());
  EXPECT_TRUE(AllClose(separate, fused, 1e-5, 1e-5));
  // Inference is deterministic (no dropout): the same call twice is bit-identical.
  ASSERT_TRUE(mha->Forward(in, again.data()).ok());
  EXPECT_EQ(std::memcmp(again.data(), separate.data(), again.size() * 4), 0);
}

TEST(MultiHeadAttentionTest, PaddedPositionsDoNotLeakIntoRealRows) {
  const int D = 32, H = 4, B = 2, N = 6;
  std::mt19937 rng(5);
  TensorMap sd = RandomStateDict(D, rng);
  auto mha = MultiHeadAttention::FromStateDict({D, H}, sd);
  ASSERT_TRUE(mha.ok());
  std::vector<float> x = RandomVec(B * N * D, rng);
  std::vector<uint8_t> key_allow = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};  // batch 1: 4 real
  MultiHeadAttention::Inputs in;
  in.query = in.key = in.value = x.data();
  in.batch_size = B;
  in.q_len = in.kv_len = N;
  in.masks.key_allow.data = key_allow.data();
  std::vector<float> out1(B * N * D), out2(B * N * D);
  ASSERT_TRUE(mha->Forward(in, out1.data()).ok());
  // Garbage at the padded positions (as queries and as keys).
  for (int t = 4; t < 6; ++t)
    for (int c = 0; c < D; ++c) x[(N + t) * D + c] = 1000.0f * (c % 3 - 1);
  ASSERT_TRUE(mha->Forward(in, out2.data()).ok());
  for (int t = 0; t < 4; ++t)
    EXPECT_TRUE(AllClose(out2.data() + (N + t) * D, out1.data() + (N + t) * D, D, 1e-6, 1e-6)) << t;
  EXPECT_TRUE(AllClose(out2.data(), out1.data(), N * D, 1e-6, 1e-6));  // batch 0 untouched
}

}  // namespace
}  // namespace attnserve
