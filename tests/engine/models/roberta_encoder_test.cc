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
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("roberta_golden.json"); }

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
  ASSERT_GE(Golden()["embeddings"].size(), 12u);
  // The 120-word text is cut to 64 tokens.
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

TEST(RobertaClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("roberta_classifier_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().labels, Golden()["labels"].get<std::vector<std::string>>());
  ASSERT_GE(Golden()["logits"].size(), 5u);
  testing_util::ExpectGoldenLogits(**model, Golden()["logits"], 1e-4);
}

}  // namespace
}  // namespace attnserve
