// ModernBERT encoders (pre-norm layers, rotary positions with a global and a
// local theta, local layers' keys within a window, GeGLU, optional biases)
// against transformers and sentence-transformers
// (tools/golden/modernbert_golden.py): the byte-level BPE's ids and offsets,
// mean-pooled normalised embeddings for texts up to 100 tokens (far past the
// 8-key half window), batched and alone, and ModernBertForSequenceClassification's
// logits with classifier_pooling mean (every bias on) and cls (the older
// config layout).
#include <string>
#include <vector>

#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("modernbert_golden.json"); }

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

nlohmann::json TinyConfig() {
  return nlohmann::json{{"model_type", "modernbert"}, {"hidden_size", 32}, {"num_hidden_layers", 4},
                        {"num_attention_heads", 4},   {"intermediate_size", 48}, {"vocab_size", 100},
                        {"max_position_embeddings", 128}};
}

TEST(ModernBertConfigTest, OlderKeysGiveTheLayerPatternAndThetas) {
  nlohmann::json json = TinyConfig();
  json["global_attn_every_n_layers"] = 2;
  json["global_rope_theta"] = 80000.0;
  json["local_attention"] = 32;
  auto c = testing_util::ParseBertConfigJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, EncoderFamily::kModernBert);
  EXPECT_THAT(c->modern.global_layers, ElementsAre(true, false, true, false));
  EXPECT_FLOAT_EQ(c->modern.global_rope_theta, 80000.0f);
  EXPECT_FLOAT_EQ(c->modern.local_rope_theta, 10000.0f);
  EXPECT_EQ(c->modern.window, 16);
  EXPECT_EQ(c->max_sequence_length(), 128);  // no padding offset
  EXPECT_FALSE(c->modern.attention_bias);
  EXPECT_FALSE(c->modern.classifier_mean);
}

TEST(ModernBertConfigTest, TransformersFivesKeysWin) {
  nlohmann::json json = TinyConfig();
  json["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "sliding_attention"};
  json["rope_parameters"] = {{"full_attention", {{"rope_theta", 1000.0}, {"rope_type", "default"}}},
                             {"sliding_attention", {{"rope_theta", 500.0}}}};
  json["global_rope_theta"] = 80000.0;
  auto c = testing_util::ParseBertConfigJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->modern.global_layers, ElementsAre(false, true, true, false));
  EXPECT_FLOAT_EQ(c->modern.global_rope_theta, 1000.0f);
  EXPECT_FLOAT_EQ(c->modern.local_rope_theta, 500.0f);
}

TEST(ModernBertConfigTest, UnsupportedSettingsAreRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_activation", "silu"}}, "hidden_activation \"silu\" is not supported"},
      {{{"classifier_pooling", "max"}}, "classifier_pooling \"max\" is not supported"},
      {{{"layer_types", {"full_attention"}}}, "layer_types must list one type per layer (4)"},
      {{{"rope_parameters", {{"full_attention", {{"rope_type", "yarn"}, {"rope_theta", 1.0}}}}}},
       "rope_parameters.full_attention.rope_type \"yarn\""},
  };
  for (const auto& [patch, want] : cases) {
    nlohmann::json json = TinyConfig();
    json.update(patch);
    auto c = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
}

TEST(ModernBertEncoderTest, TokenizerIdsAndOffsetsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(ModelDir("modernbert_tiny") + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"]);
}

TEST(ModernBertEncoderTest, LoadsAsModernBert) {
  auto model = EncoderModel::Load(ModelDir("modernbert_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "modernbert");
  EXPECT_EQ((*model)->max_tokens(), 100);  // sentence-transformers' max_seq_length under 128 positions
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
}

// Every text in one batch (the window mask shared by sequences of other
// lengths), then each alone.
TEST(ModernBertEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("modernbert_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 8u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

class ModernBertClassifierTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModernBertClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  testing_util::ExpectGoldenClassifier(ModelDir(GetParam()), Golden()["logits"][GetParam()], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Heads, ModernBertClassifierTest,
                         ::testing::Values("modernbert_reranker_tiny", "modernbert_classifier_tiny"));

}  // namespace
}  // namespace attnserve
