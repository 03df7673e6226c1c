// MPNet encoders (all-mpnet-base-v2's architecture: BERT layers, RoBERTa's
// positions, no token types, a relative position bias in every layer's
// attention) against transformers and sentence-transformers
// (tools/golden/mpnet_golden.py): the bucket function over distances past
// 128, mean-pooled normalised embeddings of MPNetModel for texts up to the
// 130-token limit, batched and alone, and MPNetForSequenceClassification's
// logits.
#include <string>
#include <vector>

#include "engine/models/bert.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("mpnet_golden.json"); }

TEST(MpnetEncoderTest, RelativePositionBucketsEqualTransformers) {
  ASSERT_FALSE(Golden().is_null());
  const int from = Golden()["buckets"]["from"].get<int>();
  const std::vector<int> want = Golden()["buckets"]["values"].get<std::vector<int>>();
  ASSERT_GE(want.size(), 601u);
  for (size_t k = 0; k < want.size(); ++k) {
    const int r = from + static_cast<int>(k);
    EXPECT_EQ(MpnetRelativePositionBucket(r), want[k]) << "key - query = " << r;
  }
}

TEST(MpnetEncoderTest, LoadsAsMpnet) {
  auto model = EncoderModel::Load(ModelDir("mpnet_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "mpnet");
  EXPECT_EQ((*model)->max_tokens(), 130);  // 132 positions - padding id 1 - 1
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
}

// Every text in one batch, then each alone.
TEST(MpnetEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("mpnet_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 8u);
  // The 12-sentence text is cut to 130 tokens.
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

TEST(MpnetClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("mpnet_classifier_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().labels.size(), 2u);
  testing_util::ExpectGoldenLogits(**model, Golden()["logits"], 1e-4);
}

TEST(MpnetEncoderTest, OtherBucketCountsAreRefusedNamingTheField) {
  auto parsed = HfConfig::FromJson(nlohmann::json{{"model_type", "mpnet"}, {"hidden_size", 32},
                                                  {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                                                  {"intermediate_size", 64}, {"vocab_size", 100},
                                                  {"max_position_embeddings", 66},
                                                  {"relative_attention_num_buckets", 64}},
                                   "dir/config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto c = ParseBertConfig(*parsed);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: relative_attention_num_buckets 64"));
}

}  // namespace
}  // namespace attnserve
