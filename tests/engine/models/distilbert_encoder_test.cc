// DistilBERT encoders (distilbert-base-uncased-finetuned-sst-2-english's and
// msmarco-distilbert-base-v4's architecture: BERT's layers under
// DistilBERT's tensor names and config keys, no token types, a
// pre_classifier + ReLU head) against transformers and sentence-transformers
// (tools/golden/distilbert_golden.py): mean-pooled embeddings of
// DistilBertModel for texts up to the 64-token limit, batched and alone, and
// DistilBertForSequenceClassification's logits for texts and pairs.
#include <string>
#include <vector>

#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("distilbert_golden.json"); }

nlohmann::json TinyConfig() {
  return nlohmann::json{{"model_type", "distilbert"}, {"dim", 32},         {"n_layers", 2},
                        {"n_heads", 4},               {"hidden_dim", 64},  {"vocab_size", 100},
                        {"max_position_embeddings", 64}};
}

TEST(DistilBertEncoderTest, ReadsDistilBertsConfigKeys) {
  auto c = testing_util::ParseBertConfigJson(TinyConfig());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, EncoderFamily::kDistilBert);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->intermediate_size, 64);
  EXPECT_EQ(c->type_vocab_size, 0);
  EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-12f);
  EXPECT_FALSE(c->roberta_positions());
  EXPECT_EQ(c->max_sequence_length(), 64);
}

TEST(DistilBertEncoderTest, LoadsAsDistilBert) {
  auto model = EncoderModel::Load(ModelDir("distilbert_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "distilbert");
  EXPECT_EQ((*model)->max_tokens(), 64);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_FALSE((*model)->default_normalize());
}

// Every text in one batch, then each alone.
TEST(DistilBertEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("distilbert_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 8u);
  // The 6-sentence text is cut to 64 tokens.
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

// Pairs included: their second text's segment 1 (BERT's template) never
// reaches DistilBERT, which has no token-type table.
TEST(DistilBertClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("distilbert_classifier_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT((*model)->description().labels, ElementsAre("NEGATIVE", "POSITIVE"));
  testing_util::ExpectGoldenLogits(**model, Golden()["logits"], 1e-4);
}

TEST(DistilBertEncoderTest, OtherActivationsAreRefusedNamingTheField) {
  nlohmann::json json = TinyConfig();
  json["activation"] = "relu";
  auto c = testing_util::ParseBertConfigJson(json);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: activation \"relu\" is not supported"));
}

TEST(DistilBertEncoderTest, HeadsNotDividingDimAreRefusedNamingBothKeys) {
  nlohmann::json json = TinyConfig();
  json["n_heads"] = 5;
  auto c = testing_util::ParseBertConfigJson(json);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: dim 32 is not a multiple of n_heads 5"));
}

TEST(DistilBertEncoderTest, MissingSizeIsRefusedNamingDistilBertsKey) {
  nlohmann::json json = TinyConfig();
  json.erase("hidden_dim");
  auto c = testing_util::ParseBertConfigJson(json);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("hidden_dim"));
}

}  // namespace
}  // namespace attnserve
