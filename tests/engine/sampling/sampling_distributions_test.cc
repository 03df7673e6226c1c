// The distribution a token is drawn from, against transformers' logits
// processors on the same logits and history (fixture from
// tools/golden/sampling_distributions.py): logit bias, repetition,
// frequency and presence penalties, temperature, top-k, top-p, min-p and typical-p,
// one at a time and together, on the real stories260K's logits and on a
// random row.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/sampling/sampler.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

nlohmann::json Fixture() {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_sampling/distributions.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

SamplingParams ParamsOf(const nlohmann::json& c) {
  SamplingParams p;
  p.temperature = c["temperature"].get<float>();
  p.top_k = c.value("top_k", 0);
  p.top_p = c.value("top_p", 1.0f);
  p.min_p = c.value("min_p", 0.0f);
  p.typical_p = c.value("typical_p", 1.0f);
  p.repetition_penalty = c.value("repetition_penalty", 1.0f);
  p.frequency_penalty = c.value("frequency_penalty", 0.0f);
  p.presence_penalty = c.value("presence_penalty", 0.0f);
  if (c.contains("logit_bias")) {
    for (const auto& [id, bias] : c["logit_bias"].items()) p.logit_bias.push_back({std::stoi(id), bias.get<float>()});
  }
  return p;
}

TEST(SamplingDistributionsTest, EqualTransformersProcessors) {
  const nlohmann::json doc = Fixture();
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_GE(doc["cases"].size(), 13u);
  SamplingScratch scratch;
  for (const nlohmann::json& c : doc["cases"]) {
    const std::string name = c["name"].get<std::string>();
    const auto logits = doc["rows"][c["row"].get<std::string>()].get<std::vector<float>>();
    const auto history = c["history"].get<std::vector<int32_t>>();
    const auto want = c["probs"].get<std::vector<double>>();
    const SamplingParams p = ParamsOf(c);
    ASSERT_TRUE(ValidateSamplingParams(p, static_cast<int>(logits.size())).ok()) << name;
    SamplingProbabilities(logits, p, history, c["output_tokens"].get<int>(), scratch);
    const std::vector<double>& got = scratch.probs;
    ASSERT_EQ(got.size(), want.size()) << name;
    int kept = 0;
    double sum = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      // The same tokens dropped, and the rest within float32 rounding of
      // the reference's softmax.
      EXPECT_EQ(got[i] > 0.0, want[i] > 0.0) << name << " id " << i;
      EXPECT_NEAR(got[i], want[i], 2e-6 + 2e-5 * want[i]) << name << " id " << i;
      kept += got[i] > 0.0;
      sum += got[i];
    }
    EXPECT_EQ(kept, c["kept"].get<int>()) << name;
    EXPECT_NEAR(sum, 1.0, 1e-12) << name;
  }
}

TEST(SamplingDistributionsTest, MinPKeepsTokensWithinAFactorOfTheBest) {
  // Hand-worked: logits {2, 1, 0, -1} -> p = {.644, .237, .087, .032}; min_p
  // 0.2 keeps p >= 0.129: ids 0 and 1, renormalised; min_p 1 keeps the best.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f};
  SamplingParams p;
  p.min_p = 0.2f;
  SamplingScratch scratch;
  SamplingProbabilities(logits, p, {}, 0, scratch);
  const double e = std::exp(1.0);
  EXPECT_NEAR(scratch.probs[0], e / (e + 1.0), 1e-12);
  EXPECT_NEAR(scratch.probs[1], 1.0 / (e + 1.0), 1e-12);
  EXPECT_EQ(scratch.probs[2], 0.0);
  EXPECT_EQ(scratch.probs[3], 0.0);
  p.min_p = 1.0f;
  SamplingProbabilities(logits, p, {}, 0, scratch);
  EXPECT_EQ(scratch.probs[0], 1.0);
  p.min_p = 1.5f;
  EXPECT_NE(ValidateSamplingParams(p, 4).message().find("min_p must be in [0, 1], got 1.5"), std::string::npos);
  p.min_p = -0.1f;
  EXPECT_NE(ValidateSamplingParams(p, 4).message().find("min_p"), std::string::npos);
}

TEST(SamplingDistributionsTest, SampleTokenDrawsFromThatDistribution) {
  // SampleToken's draws follow SamplingProbabilities (the function the
  // golden test checks), with every step on.
  const std::vector<float> logits = {1.0f, 3.0f, 0.5f, 2.5f, -1.0f, 2.0f, 2.2f, 0.0f};
  SamplingParams p;
  p.temperature = 1.4f;
  p.top_k = 6;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.2f;
  p.presence_penalty = 0.1f;
  p.logit_bias = {{2, 1.0f}, {1, -0.5f}};
  p.seed = 17;
  const std::vector<int32_t> history = {1, 3, 5, 5, 6};
  SamplingScratch scratch;
  SamplingProbabilities(logits, p, history, 3, scratch);
  const std::vector<double> want = scratch.probs;
  SamplingRng rng(p.seed);
  std::vector<double> freq(logits.size(), 0.0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) freq[SampleToken(logits, p, history, 3, rng, scratch).id] += 1.0 / n;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(freq[i], want[i], 0.01) << "id " << i;
    if (want[i] == 0.0) {
      EXPECT_EQ(freq[i], 0.0) << "id " << i;
    }
  }
}

}  // namespace
}  // namespace attnserve
