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
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("mpnet_golden.json"); }

EncoderInput TextInput(const std::string& text) {
  EncoderInput in;
  in.text = text;
  return in;
}

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
  std::vector<EncoderInput> inputs;
  for (const nlohmann::json& c : Golden()["embeddings"]) inputs.push_back(TextInput(c["text"].get<std::string>()));
  ASSERT_GE(inputs.size(), 8u);
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
  EXPECT_EQ(truncated, 1);  // the 12-sentence text, cut to 130 tokens
}

TEST(MpnetClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("mpnet_classifier_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().labels.size(), 2u);
  std::vector<EncoderInput> inputs;
  for (const nlohmann::json& c : Golden()["logits"]) {
    EncoderInput in = TextInput(c["text"].get<std::string>());
    if (!c["text_pair"].is_null()) in.text_pair = c["text_pair"].get<std::string>();
    inputs.push_back(in);
  }
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
