// The checks the encoder model tests run on their golden fixtures
// (tools/golden/*): pooled embeddings and classification logits against
// transformers' for texts run as one batch and each alone.
#ifndef ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_GOLDEN_CHECKS_H_
#define ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_GOLDEN_CHECKS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve::testing_util {

// Each case {text[, text_pair]} as an input.
inline std::vector<EncoderInput> GoldenInputs(const nlohmann::json& cases) {
  std::vector<EncoderInput> inputs;
  for (const nlohmann::json& c : cases) {
    EncoderInput in;
    in.text = c["text"].get<std::string>();
    if (c.contains("text_pair") && !c["text_pair"].is_null()) in.text_pair = c["text_pair"].get<std::string>();
    inputs.push_back(std::move(in));
  }
  return inputs;
}

// Each case {text, ids, embedding} with the model's default options, the
// cases as one batch and each alone; returns how many were truncated.
inline int ExpectGoldenEmbeddings(const EncoderModel& model, const nlohmann::json& cases, double tolerance) {
  using ::testing::ElementsAreArray;
  const std::vector<EncoderInput> inputs = GoldenInputs(cases);
  auto batch = model.Encode(inputs, {});
  EXPECT_TRUE(batch.ok()) << batch.status();
  if (!batch.ok()) return 0;
  int truncated = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json& c = cases[i];
    EXPECT_THAT((*batch)[i].token_ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << inputs[i].text;
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    EXPECT_EQ((*batch)[i].embedding.numel(), static_cast<int64_t>(want.size())) << inputs[i].text;
    if ((*batch)[i].embedding.numel() != static_cast<int64_t>(want.size())) continue;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR((*batch)[i].embedding.f32()[k], want[k], tolerance) << inputs[i].text << " [" << k << "]";
    }
    auto alone = model.Encode({&inputs[i], 1}, {});
    EXPECT_TRUE(alone.ok()) << alone.status();
    if (!alone.ok()) continue;
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*alone)[0].embedding.f32()[k], want[k], tolerance);
    truncated += (*batch)[i].truncated;
  }
  return truncated;
}

// Each case {text, text_pair or null, ids, logits}, as one batch.
inline void ExpectGoldenLogits(const EncoderModel& model, const nlohmann::json& cases, double tolerance) {
  using ::testing::ElementsAreArray;
  const std::vector<EncoderInput> inputs = GoldenInputs(cases);
  auto batch = model.Encode(inputs, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json& c = cases[i];
    EXPECT_THAT((*batch)[i].token_ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << inputs[i].text;
    const std::vector<float> want = c["logits"].get<std::vector<float>>();
    ASSERT_EQ((*batch)[i].logits.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR((*batch)[i].logits[k], want[k], tolerance) << inputs[i].text << " [" << k << "]";
    }
  }
}

// The classifier at `dir`: as many labels as each case has logits, and every
// case's logits (ExpectGoldenLogits).
inline void ExpectGoldenClassifier(const std::string& dir, const nlohmann::json& cases, double tolerance) {
  auto model = EncoderModel::Load(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(cases.size(), 8u);
  EXPECT_EQ((*model)->description().labels.size(), cases[0]["logits"].size());
  ExpectGoldenLogits(**model, cases, tolerance);
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_GOLDEN_CHECKS_H_
