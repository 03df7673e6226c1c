#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Empirical frequencies over `n` draws with one RNG.
std::vector<double> Frequencies(const std::vector<float>& logits, const SamplingParams& p,
                                const std::vector<int32_t>& history, int n) {
  SamplingRng rng(p.seed);
  std::vector<float> scratch;
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) f[SampleToken(logits, p, history, rng, scratch).id] += 1.0 / n;
  return f;
}

// Reference: softmax(logits / t) renormalised over `keep`.
std::vector<double> Reference(const std::vector<float>& logits, float t,
                              const std::vector<int>& keep) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0;
  for (int i : keep) sum += p[i] = std::exp(logits[i] / t);
  for (double& x : p) x /= sum;
  return p;
}

void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << "id " << i;
  }
}

const std::vector<float> kLogits = {1.0f, 3.0f, 0.5f, 2.5f, -1.0f, 2.0f};

TEST(SamplerTest, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingRng rng(1);
  std::vector<float> scratch;
  EXPECT_EQ(SampleToken(kLogits, p, {}, rng, scratch).id, 1);
  std::vector<float> tie = {0.0f, 5.0f, 5.0f};
  EXPECT_EQ(SampleToken(tie, p, {}, rng, scratch).id, 1);
}

TEST(SamplerTest, TemperatureMatchesSoftmax) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.seed = 11;
  ExpectClose(Frequencies(kLogits, p, {}, 40000), Reference(kLogits, 0.7f, {0, 1, 2, 3, 4, 5}),
              0.01);
}

TEST(SamplerTest, TopKKeepsTheKBest) {
  SamplingParams p;
  p.top_k = 3;
  p.seed = 5;
  ExpectClose(Frequencies(kLogits, p, {}, 40000), Reference(kLogits, 1.0f, {1, 3, 5}), 0.01);
}

TEST(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // softmax(kLogits): ids 1, 3 together hold < 0.8 of the mass, with id 5 > 0.8:
  // top_p 0.8 keeps {1, 3, 5}, as HF's ascending-sort cut does.
  std::vector<double> ref = Reference(kLogits, 1.0f, {0, 1, 2, 3, 4, 5});
  ASSERT_LT(ref[1] + ref[3], 0.8);
  ASSERT_GT(ref[1] + ref[3] + ref[5], 0.8);
  SamplingParams p;
  p.top_p = 0.8f;
  p.seed = 9;
  ExpectClose(Frequencies(kLogits, p, {}, 40000), Reference(kLogits, 1.0f, {1, 3, 5}), 0.01);
  // A tiny top_p keeps only the best.
  p.top_p = 0.01f;
  ExpectClose(Frequencies(kLogits, p, {}, 1000), Reference(kLogits, 1.0f, {1}), 1e-12);
}

TEST(SamplerTest, RepetitionPenaltyFollowsHuggingFace) {
  // Positive logits are divided, negative ones multiplied; each seen id once.
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  SamplingRng rng(0);
  std::vector<float> scratch;
  // id1 3.0 -> 1.5 (< id3 2.5): greedy moves to id3.
  EXPECT_EQ(SampleToken(kLogits, p, {1, 1, 1}, rng, scratch).id, 3);
  // Negative logits get more negative: with all-negative logits the seen one loses.
  std::vector<float> neg = {-1.0f, -1.5f};
  EXPECT_EQ(SampleToken(neg, p, {0}, rng, scratch).id, 1);  // -2.0 < -1.5
  // Sampled distribution matches the penalised logits.
  p.temperature = 1.0f;
  p.seed = 3;
  std::vector<float> pen = kLogits;
  pen[1] /= 2.0f;
  pen[4] *= 2.0f;
  ExpectClose(Frequencies(kLogits, p, {1, 4, 4}, 40000), Reference(pen, 1.0f, {0, 1, 2, 3, 4, 5}),
              0.01);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.seed = 42;
  auto draw = [&](uint64_t seed) {
    SamplingParams q = p;
    q.seed = seed;
    SamplingRng rng(seed);
    std::vector<float> scratch;
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(SampleToken(kLogits, q, {}, rng, scratch).id);
    return ids;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(SamplerTest, LogprobsAreNormalisedModelLogprobs) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_logprobs = 6;
  SamplingRng rng(0);
  std::vector<float> scratch;
  SampledToken t = SampleToken(kLogits, p, {}, rng, scratch);
  ASSERT_EQ(t.top.size(), 6u);
  double sum = 0;
  for (const auto& tl : t.top) sum += std::exp(tl.logprob);
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(t.top[0].id, 1);
  EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
  for (size_t i = 1; i < t.top.size(); ++i) EXPECT_GE(t.top[i - 1].logprob, t.top[i].logprob);
  const double ref = std::log(Reference(kLogits, 1.0f, {0, 1, 2, 3, 4, 5})[1]);
  EXPECT_NEAR(t.logprob, ref, 1e-5);
}

TEST(SamplerTest, ValidationNamesTheField) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_NE(ValidateSamplingParams(p).message().find("top_p"), std::string::npos);
  p = SamplingParams();
  p.temperature = -1.0f;
  EXPECT_NE(ValidateSamplingParams(p).message().find("temperature"), std::string::npos);
  p = SamplingParams();
  p.top_k = -2;
  EXPECT_NE(ValidateSamplingParams(p).message().find("top_k"), std::string::npos);
  p = SamplingParams();
  p.repetition_penalty = 0.0f;
  EXPECT_NE(ValidateSamplingParams(p).message().find("repetition_penalty"), std::string::npos);
  p = SamplingParams();
  p.top_logprobs = 100;
  EXPECT_NE(ValidateSamplingParams(p).message().find("top_logprobs"), std::string::npos);
  EXPECT_TRUE(ValidateSamplingParams(SamplingParams()).ok());
}

}  // namespace
}  // namespace attnserve
