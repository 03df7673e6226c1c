// ELECTRA encoders from a Hugging Face directory against transformers 5's
// ElectraModel / ElectraForSequenceClassification and sentence-transformers
// (tools/golden/electra_golden.py): BERT's layers under "electra.", an
// embedder whose tables are as wide as the hidden size, and a reranker
// whose narrower tables are projected (embeddings_project) with
// ElectraClassificationHead's GELU over pairs that carry segment 1.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;
using testing_util::GoldenEncoderConfig;
using testing_util::ParseBertConfigJson;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("electra_golden.json"); }

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

TEST(ElectraConfigTest, EmbeddingWidthAndTheReranker) {
  auto embedder = ParseBertConfigJson(GoldenEncoderConfig("electra_tiny"));
  ASSERT_TRUE(embedder.ok()) << embedder.status();
  EXPECT_EQ(embedder->family, EncoderFamily::kElectra);
  EXPECT_EQ(embedder->embedding_width(), 32);
  EXPECT_EQ(embedder->type_vocab_size, 2);
  EXPECT_EQ(embedder->max_sequence_length(), 64);  // BERT's positions: no padding offset
  EXPECT_TRUE(embedder->labels.empty());
  auto reranker = ParseBertConfigJson(GoldenEncoderConfig("electra_reranker_tiny"));
  ASSERT_TRUE(reranker.ok()) << reranker.status();
  EXPECT_EQ(reranker->embedding_width(), 16);
  EXPECT_EQ(reranker->labels, std::vector<std::string>{"LABEL_0"});
  // ElectraConfig's own default, electra-small's 128, when the key is absent.
  nlohmann::json without = GoldenEncoderConfig("electra_tiny");
  without.erase("embedding_size");
  auto defaulted = ParseBertConfigJson(without);
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  EXPECT_EQ(defaulted->embedding_width(), 128);
}

TEST(ElectraConfigTest, VariantsItDoesNotRunAreRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"position_embedding_type", "relative_key"}}, "position_embedding_type \"relative_key\" is not supported"},
      {{{"hidden_act", "relu"}}, "hidden_act \"relu\" is not supported"},
      {{{"embedding_size", 0}}, "field \"embedding_size\""},
  };
  for (const auto& [patch, want] : cases) {
    nlohmann::json json = GoldenEncoderConfig("electra_tiny");
    json.update(patch);
    auto c = ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
}

// Every text in one batch, then each alone.
TEST(ElectraEncoderTest, EmbeddingsMatchSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("electra_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "electra");
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 1);
}

// Tables of 16 projected to 32 (the projection counted in the weights and a
// token's 16 table values in the scratch), ElectraClassificationHead, and
// pairs whose second text is segment 1.
TEST(ElectraEncoderTest, RerankerLogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  testing_util::ExpectGoldenClassifier(ModelDir("electra_reranker_tiny"), Golden()["logits"], 1e-4);
  auto model = EncoderModel::Load(ModelDir("electra_reranker_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const int64_t d = 32, e = 16, inner = 64, vocab = (*model)->description().vocab_size;
  const int64_t per_layer = 4 * (d * d + d) + (inner * d + inner) + (d * inner + d) + 4 * d;
  const int64_t unpadded = ((vocab + 64 + 2) * e + 2 * e + (d * e + d) + 2 * per_layer + (d * d + d) + (d + 1)) * 4;
  EXPECT_GE((*model)->description().weight_bytes, unpadded);  // packed panels may pad
  EXPECT_LT((*model)->description().weight_bytes, unpadded + 2 * d * d * 4);
  EXPECT_EQ((*model)->ScratchBytes(2, 16), 2 * 16 * (6 * d + inner + e) * 4);
}

}  // namespace
}  // namespace attnserve
