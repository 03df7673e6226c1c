// RoBERTa encoders (all-distilroberta-v1's modules; the twitter-roberta
// sentiment classifiers' head) with their byte-level BPE tokenizer, against
// transformers and sentence-transformers (tools/golden/roberta_golden.py):
// mean-pooled, normalised embeddings of RobertaModel and the three logits of
// RobertaForSequenceClassification, for texts batched and alone, with the
// 64-token limit of a 66-row position table.
#include <string>
#include <vector>

#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("roberta_golden.json"); }

EncoderInput TextInput(const std::string& text) {
  EncoderInput in;
  in.text = text;
  return in;
}

TEST(RobertaEncoderTest, LoadsWithTheByteLevelTokenizer) {
  auto model = EncoderModel::Load(ModelDir("roberta_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "roberta");
  EXPECT_EQ((*model)->tokenizer().kind(), "bpe");
  EXPECT_EQ((*model)->max_tokens(), 64);  // 66 positions - padding id 1 - 1
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
}

// Every text in one batch, then each alone.
TEST(RobertaEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("roberta_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<EncoderInput> inputs;
  for (const nlohmann::json& c : Golden()["embeddings"]) inputs.push_back(TextInput(c["text"].get<std::string>()));
  ASSERT_GE(inputs.size(), 12u);
  auto batch = (*model)->Encode(inputs, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  int truncated = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json& c = Golden()["embeddings"][i];
    EXPECT_THAT((*batch)[i].token_ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << inputs[i].text;
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    ASSERT_EQ((*batch)[i].embedding.numel(), static_cast<int64_t>(want.size()));
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR((*batch)[i].embedding.f32()[k], want[k], 1e-4) << inputs[i].text << " [" << k << "]";
    }
    auto alone = (*model)->Encode({&inputs[i], 1}, {});
    ASSERT_TRUE(alone.ok()) << alone.status();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*alone)[0].embedding.f32()[k], want[k], 1e-4);
    truncated += (*batch)[i].truncated;
  }
  EXPECT_EQ(truncated, 1);  // the 120-word text, cut to 64 tokens
}

TEST(RobertaClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("roberta_classifier_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().labels, Golden()["labels"].get<std::vector<std::string>>());
  std::vector<EncoderInput> inputs;
  for (const nlohmann::json& c : Golden()["logits"]) {
    EncoderInput in = TextInput(c["text"].get<std::string>());
    if (!c["text_pair"].is_null()) in.text_pair = c["text_pair"].get<std::string>();
    inputs.push_back(in);
  }
  ASSERT_GE(inputs.size(), 5u);
  auto batch = (*model)->Encode(inputs, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json& c = Golden()["logits"][i];
    EXPECT_THAT((*batch)[i].token_ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << inputs[i].text;
    const std::vector<float> want = c["logits"].get<std::vector<float>>();
    ASSERT_EQ((*batch)[i].logits.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*batch)[i].logits[k], want[k], 1e-4) << inputs[i].text;
  }
}

}  // namespace
}  // namespace attnserve
