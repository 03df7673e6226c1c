#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Empirical frequencies over `n` draws with one RNG.
// The last `output_tokens` of `history` are the request's output.
std::vector<double> Frequencies(const std::vector<float>& logits, const SamplingParams& p,
                                const std::vector<int32_t>& history, int n, int output_tokens = 0) {
  SamplingRng rng(p.seed);
  SamplingScratch scratch;
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) f[SampleToken(logits, p, history, output_tokens, rng, scratch).id] += 1.0 / n;
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
  SamplingScratch scratch;
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 1);
  std::vector<float> tie = {0.0f, 5.0f, 5.0f};
  EXPECT_EQ(SampleToken(tie, p, {}, 0, rng, scratch).id, 1);
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
  SamplingScratch scratch;
  // id1 3.0 -> 1.5 (< id3 2.5): greedy moves to id3.
  EXPECT_EQ(SampleToken(kLogits, p, {1, 1, 1}, 0, rng, scratch).id, 3);
  // Negative logits get more negative: with all-negative logits the seen one loses.
  std::vector<float> neg = {-1.0f, -1.5f};
  EXPECT_EQ(SampleToken(neg, p, {0}, 0, rng, scratch).id, 1);  // -2.0 < -1.5
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
    SamplingScratch scratch;
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(SampleToken(kLogits, q, {}, 0, rng, scratch).id);
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
  SamplingScratch scratch;
  SampledToken t = SampleToken(kLogits, p, {}, 0, rng, scratch);
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

// Skipping the log-probability (a request that reports none) must not
// change which token is drawn, greedy or sampled, with penalties or not.
TEST(SamplerTest, SkippingTheLogprobLeavesTheDrawUnchanged) {
  const std::vector<int32_t> history = {1, 3, 3, 5};
  for (float temperature : {0.0f, 0.9f}) {
    for (float repetition : {1.0f, 1.3f}) {
      SamplingParams with;
      with.temperature = temperature;
      with.repetition_penalty = repetition;
      with.seed = 5;
      SamplingParams without = with;
      without.logprob = false;
      SamplingRng rng_with(5), rng_without(5);
      SamplingScratch scratch;
      for (int i = 0; i < 200; ++i) {
        const SampledToken a = SampleToken(kLogits, with, history, 2, rng_with, scratch);
        const SampledToken b = SampleToken(kLogits, without, history, 2, rng_without, scratch);
        ASSERT_EQ(a.id, b.id) << "temperature " << temperature << " repetition " << repetition << " draw " << i;
        EXPECT_LT(a.logprob, 0.0f);
        EXPECT_EQ(b.logprob, 0.0f);
      }
    }
  }
}

TEST(SamplerTest, ValidationNamesTheField) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("top_p"), std::string::npos);
  p = SamplingParams();
  p.temperature = -1.0f;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("temperature"), std::string::npos);
  p = SamplingParams();
  p.top_k = -2;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("top_k"), std::string::npos);
  p = SamplingParams();
  p.repetition_penalty = 0.0f;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("repetition_penalty"), std::string::npos);
  p = SamplingParams();
  p.top_logprobs = 100;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("top_logprobs"), std::string::npos);
  for (float typical_p : {0.0f, 1.5f, std::nanf("")}) {
    p = SamplingParams();
    p.typical_p = typical_p;
    EXPECT_NE(ValidateSamplingParams(p, 6).message().find("typical_p must be in (0, 1]"), std::string::npos);
  }
  EXPECT_TRUE(ValidateSamplingParams(SamplingParams(), 6).ok());
}

// The message of ValidateSamplingParams(p, 6); "" when valid.
std::string ErrorOf(const SamplingParams& p) { return std::string(ValidateSamplingParams(p, 6).message()); }

TEST(SamplerTest, PenaltyAndBiasValidationNamesTheFieldAndTheLimit) {
  SamplingParams p;
  p.frequency_penalty = 2.5f;
  EXPECT_NE(ErrorOf(p).find("frequency_penalty must be in [-2, 2]"), std::string::npos) << ErrorOf(p);
  p = SamplingParams();
  p.presence_penalty = std::nanf("");
  EXPECT_NE(ErrorOf(p).find("presence_penalty"), std::string::npos) << ErrorOf(p);
  p = SamplingParams();
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  EXPECT_EQ(ErrorOf(p), "");
  p = SamplingParams();
  p.logit_bias = {{6, 1.0f}};
  EXPECT_NE(ErrorOf(p).find("logit_bias: token id 6 is not in [0, 6)"), std::string::npos) << ErrorOf(p);
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_NE(ErrorOf(p).find("token id -1"), std::string::npos) << ErrorOf(p);
  p.logit_bias = {{2, 100.5f}};
  EXPECT_NE(ErrorOf(p).find("logit_bias[2] must be in [-100, 100]"), std::string::npos) << ErrorOf(p);
  p.logit_bias = {{2, std::nanf("")}};
  EXPECT_NE(ErrorOf(p).find("logit_bias[2]"), std::string::npos) << ErrorOf(p);
  p.logit_bias = {{2, 1.0f}, {5, -100.0f}, {2, 3.0f}};
  EXPECT_NE(ErrorOf(p).find("token id 2 appears twice"), std::string::npos) << ErrorOf(p);
  p.logit_bias = {{2, 100.0f}, {5, -100.0f}};
  EXPECT_EQ(ErrorOf(p), "");
  p.logit_bias.assign(kMaxLogitBiasEntries + 1, LogitBias{0, 0.0f});
  EXPECT_NE(ErrorOf(p).find("logit_bias: at most 1024 entries, got 1025"), std::string::npos) << ErrorOf(p);
}

TEST(SamplerTest, LogitBiasBansOrForcesAToken) {
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingRng rng(0);
  SamplingScratch scratch;
  p.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 3);
  p.logit_bias = {{4, 100.0f}};
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 4);
  // Sampling follows the biased logits; the reported logprob stays the model's.
  p.temperature = 1.0f;
  p.seed = 11;
  p.logit_bias = {{1, -1.5f}, {2, 2.0f}};
  std::vector<float> biased = kLogits;
  biased[1] -= 1.5f;
  biased[2] += 2.0f;
  ExpectClose(Frequencies(kLogits, p, {}, 40000), Reference(biased, 1.0f, {0, 1, 2, 3, 4, 5}), 0.01);
  p.temperature = 0.0f;
  p.logit_bias = {{4, 100.0f}};
  SampledToken t = SampleToken(kLogits, p, {}, 0, rng, scratch);
  EXPECT_NEAR(t.logprob, std::log(Reference(kLogits, 1.0f, {0, 1, 2, 3, 4, 5})[4]), 1e-5);
}

TEST(SamplerTest, AConstraintMaskComesFirstAndRenormalisesOverWhatItAllows) {
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingRng rng(0);
  SamplingScratch scratch;
  const std::vector<uint8_t> allowed = {1, 0, 1, 0, 1, 1};  // the two best (1, 3) masked
  p.allowed = allowed;
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 5);
  // Not even a +100 bias lifts a masked token.
  p.logit_bias = {{1, 100.0f}};
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 5);
  p.logit_bias.clear();
  p.temperature = 0.8f;
  p.seed = 5;
  ExpectClose(Frequencies(kLogits, p, {}, 40000), Reference(kLogits, 0.8f, {0, 2, 4, 5}), 0.01);
  // The reported logprob stays the model's.
  p.temperature = 0.0f;
  SampledToken t = SampleToken(kLogits, p, {}, 0, rng, scratch);
  EXPECT_NEAR(t.logprob, std::log(Reference(kLogits, 1.0f, {0, 1, 2, 3, 4, 5})[5]), 1e-5);
  // A row wider than the mask (a model's padded vocabulary): ids past it are not allowed.
  const std::vector<uint8_t> short_mask = {1, 0, 1};
  p.allowed = short_mask;
  EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 0);
  p.temperature = 1.0f;
  ExpectClose(Frequencies(kLogits, p, {}, 20000), Reference(kLogits, 1.0f, {0, 2}), 0.01);
}

TEST(SamplerTest, FrequencyAndPresencePenaltiesCountTheOutputOnly) {
  // History: prompt {1, 1} then output {3, 5, 5, 5}. Id 1 is only in the
  // prompt: untouched. OpenAI: logit[j] -= c[j] * frequency + (c[j] > 0) * presence.
  const std::vector<int32_t> history = {1, 1, 3, 5, 5, 5};
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 5;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  std::vector<float> pen = kLogits;
  pen[3] = 2.5f - 0.5f * 1 - 0.25f;  // 1.75
  pen[5] = 2.0f - 0.5f * 3 - 0.25f;  // 0.25
  ExpectClose(Frequencies(kLogits, p, history, 40000, /*output_tokens=*/4),
              Reference(pen, 1.0f, {0, 1, 2, 3, 4, 5}), 0.01);
  // Negative values favour repeats: id 5 (2.0 + 3 * 1.0 + 0.5 = 5.5) and,
  // with output {3}, id 3 (2.5 + 1.0 + 0.5 = 4.0) beat id 1 (3.0).
  p.temperature = 0.0f;
  p.frequency_penalty = -1.0f;
  p.presence_penalty = -0.5f;
  SamplingRng rng(0);
  SamplingScratch scratch;
  EXPECT_EQ(SampleToken(kLogits, p, history, 4, rng, scratch).id, 5);
  EXPECT_EQ(SampleToken(kLogits, p, {1, 1, 3}, 1, rng, scratch).id, 3);
  // Counted over the output only: with none, nothing changes.
  EXPECT_EQ(SampleToken(kLogits, p, history, 0, rng, scratch).id, 1);
}

TEST(SamplerTest, BiasComesFirstThenRepetitionThenFrequencyAndPresence) {
  // Logits {3.0, -2.2}; bias id0 by -4 -> -1.0; repetition 2 (id0 seen) ->
  // -2.0; id0 once in the output with frequency 0.1 and presence 0.05 ->
  // -2.15. Applying the repetition penalty to the unbiased logit, or after
  // the frequency penalty, gives other values, hence other frequencies.
  const std::vector<float> logits = {3.0f, -2.2f};
  SamplingParams p;
  p.temperature = 0.5f;
  p.seed = 9;
  p.logit_bias = {{0, -4.0f}};
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.1f;
  p.presence_penalty = 0.05f;
  const std::vector<float> want = {(3.0f - 4.0f) * 2.0f - 0.1f - 0.05f, -2.2f};
  ExpectClose(Frequencies(logits, p, {0}, 40000, 1), Reference(want, 0.5f, {0, 1}), 0.01);
}

TEST(SamplerTest, MinTokensSuppressesItsIdsUntilTheOutputIsLongEnough) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 3;
  p.min_tokens_suppressed = {1, 3};
  SamplingRng rng(0);
  SamplingScratch scratch;
  // Output of 0..2 tokens: ids 1 (3.0) and 3 (2.5) are out, id 5 (2.0) wins.
  for (int out = 0; out < 3; ++out) EXPECT_EQ(SampleToken(kLogits, p, {0, 0, 0}, out, rng, scratch).id, 5) << out;
  EXPECT_EQ(SampleToken(kLogits, p, {0, 0, 0}, 3, rng, scratch).id, 1);
  // Sampling never draws them, and a bias cannot bring them back.
  p.temperature = 1.0f;
  p.logit_bias = {{3, 100.0f}};
  p.seed = 2;
  const std::vector<double> f = Frequencies(kLogits, p, {}, 5000, 0);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_EQ(f[3], 0.0);
  p.min_tokens = -1;
  EXPECT_NE(ValidateSamplingParams(p, 6).message().find("min_tokens must be >= 0"), std::string::npos);
}

TEST(SamplerTest, EveryIdSuppressedGivesNoId) {
  // A client can list every id as a stop token and ask for min_tokens (or
  // allow only them, or ban the rest): the row is all -inf. Nothing may be
  // drawn, greedy or sampled: id -1, which ends the sequence
  // (token_restrictions_test.cc), rather than a token the masks refused.
  SamplingParams p;
  p.min_tokens = 5;
  p.min_tokens_suppressed = {0, 1, 2, 3, 4, 5};
  SamplingRng rng(0);
  SamplingScratch scratch;
  for (float t : {0.0f, 1.0f}) {
    for (float top_p : {1.0f, 0.5f}) {
      p.temperature = t;
      p.top_p = top_p;
      p.min_p = top_p < 1.0f ? 0.1f : 0.0f;
      const SampledToken tok = SampleToken(kLogits, p, {}, 0, rng, scratch);
      EXPECT_EQ(tok.id, -1) << t << " " << top_p;
    }
  }
  // One id left: that one.
  p.min_tokens_suppressed = {0, 1, 2, 4, 5};
  for (float t : {0.0f, 1.0f}) {
    p.temperature = t;
    EXPECT_EQ(SampleToken(kLogits, p, {}, 0, rng, scratch).id, 3) << t;
  }
}

TEST(SamplerTest, ScratchIsReusableAcrossHistories) {
  // The same call gives the same distribution after calls with other
  // histories on the same scratch (its per-id marks are cleared each time).
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 3.0f;
  p.frequency_penalty = 1.0f;
  p.presence_penalty = 1.0f;
  SamplingRng rng(0);
  SamplingScratch fresh, reused;
  const std::vector<std::vector<int32_t>> histories = {{1, 3, 3, 5}, {0, 2, 4}, {5, 5, 5, 1}, {3}};
  for (const auto& h : histories) {
    for (int out = 0; out <= static_cast<int>(h.size()); ++out) {
      SamplingScratch once;
      EXPECT_EQ(SampleToken(kLogits, p, h, out, rng, reused).id, SampleToken(kLogits, p, h, out, rng, once).id);
    }
  }
  for (int32_t c : reused.counts) EXPECT_EQ(c, 0);
}

}  // namespace
}  // namespace attnserve
