// SPLADE sparse embeddings (sentence-transformers' SparseEncoder: a
// masked-language model's vocabulary logits, log(1 + relu), max over the
// tokens) against SparseEncoder.encode (tools/golden/splade_golden.py): a
// BertForMaskedLM with SpladePooling max + relu and a DistilBertForMaskedLM
// with max + log1p_relu, both with the decoder tied to the word embeddings,
// texts up to the 64-token limit batched and alone; and the refusals.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("splade_golden.json"); }

// The result's sparse entries against the case's, as dense vectors: an entry
// next to zero may be non-zero on one side only.
void ExpectSparseEqual(const EncodeResult& got, const nlohmann::json& c, int vocab, double tolerance) {
  std::vector<float> want(vocab, 0.0f);
  const std::vector<int> indices = c["indices"].get<std::vector<int>>();
  const std::vector<float> values = c["values"].get<std::vector<float>>();
  for (size_t k = 0; k < indices.size(); ++k) want[indices[k]] = values[k];
  std::vector<float> dense(vocab, 0.0f);
  ASSERT_EQ(got.sparse_indices.size(), got.sparse_values.size());
  EXPECT_EQ(got.embedding.numel(), 0);
  for (size_t k = 0; k < got.sparse_indices.size(); ++k) {
    if (k > 0) {
      EXPECT_LT(got.sparse_indices[k - 1], got.sparse_indices[k]);
    }
    ASSERT_GE(got.sparse_indices[k], 0);
    ASSERT_LT(got.sparse_indices[k], vocab);
    EXPECT_GT(got.sparse_values[k], 0.0f);
    dense[got.sparse_indices[k]] = got.sparse_values[k];
  }
  for (int v = 0; v < vocab; ++v) EXPECT_NEAR(dense[v], want[v], tolerance) << c["text"] << " [" << v << "]";
  // Non-zero entries the reference has: nearly all present (the rest within
  // tolerance of zero).
  EXPECT_GE(got.sparse_indices.size() + 2, indices.size()) << c["text"];
}

class SpladeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpladeGoldenTest, SparseEmbeddingsMatchSparseEncoder) {
  ASSERT_FALSE(Golden().is_null());
  const nlohmann::json& m = Golden()["models"][GetParam()];
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->sparse());
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kSplade);
  EXPECT_EQ((*model)->max_tokens(), Golden()["max_tokens"].get<int>());
  const int vocab = m["vocab_size"].get<int>();
  const std::vector<EncoderInput> inputs = testing_util::GoldenInputs(m["cases"]);
  auto batch = (*model)->Encode(inputs, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  int truncated = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json& c = m["cases"][i];
    EXPECT_EQ((*batch)[i].token_ids, c["ids"].get<std::vector<int32_t>>()) << inputs[i].text;
    ExpectSparseEqual((*batch)[i], c, vocab, 1e-4);
    auto alone = (*model)->Encode({&inputs[i], 1}, {});
    ASSERT_TRUE(alone.ok()) << alone.status();
    ExpectSparseEqual((*alone)[0], c, vocab, 1e-4);
    truncated += (*batch)[i].truncated;
  }
  EXPECT_EQ(truncated, 1);  // the 6-sentence text
}

INSTANTIATE_TEST_SUITE_P(Models, SpladeGoldenTest, ::testing::Values("splade_tiny", "splade_distil_tiny"));

// The head runs in slices after the forward's (the scheduler interleaves
// generate steps between them); interleaved with another job's slices, the
// result is bit-identical to a whole Encode.
TEST(SpladeEncoderTest, HeadRunsInItsOwnSlicesInterleavedBitForBit) {
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir("splade_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<EncoderInput> inputs = testing_util::GoldenInputs(Golden()["models"]["splade_tiny"]["cases"]);
  auto sparse = (*model)->StartEncode(inputs, {});
  EncodeOptions cls;
  cls.pooling = PoolingMode::kCls;
  auto dense = (*model)->StartEncode({&inputs[0], 2}, cls);
  ASSERT_TRUE(sparse.ok() && dense.ok());
  // Vocabulary 2,040 in blocks of 256 rows (the least; a third of a layer
  // is 2,730 multiply-adds a token at hidden 32, intermediate 64): 8 slices.
  const int forward_slices = 1 + 3 * 2;
  EXPECT_EQ((*sparse)->slices_total(), forward_slices + 8);
  EXPECT_EQ((*dense)->slices_total(), forward_slices);
  while (!(*sparse)->done() || !(*dense)->done()) {
    for (auto* job : {&*sparse, &*dense}) {
      if (!(*job)->done()) {
        ASSERT_TRUE((*job)->RunSlice().ok());
      }
    }
  }
  EXPECT_FALSE((*sparse)->RunSlice().ok());  // every slice has run
  auto sliced = (*sparse)->Finish();
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  auto whole = (*model)->Encode(inputs, {});
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ((*sliced)[i].sparse_indices, (*whole)[i].sparse_indices);
    EXPECT_EQ((*sliced)[i].sparse_values, (*whole)[i].sparse_values);
  }
  EXPECT_FALSE((*sparse)->Finish().ok());  // once only
}

TEST(SpladeEncoderTest, DensePoolingStillServesTheHiddenStates) {
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir("splade_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in;
  in.text = "a man is eating food.";
  EncodeOptions options;
  options.pooling = PoolingMode::kCls;
  auto r = (*model)->Encode({&in, 1}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].embedding.numel(), 32);
  EXPECT_TRUE((*r)[0].sparse_indices.empty());
}

TEST(SpladeEncoderTest, SpladePoolingOnADenseModelIsRefused) {
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir("distilbert_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->sparse());
  EncoderInput in;
  in.text = "hello";
  EncodeOptions options;
  options.pooling = PoolingMode::kSplade;
  auto r = (*model)->Encode({&in, 1}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("pooling splade needs a SPLADE model"));
}

TEST(SpladeEncoderTest, DimensionsAreRefusedWithSplade) {
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir("splade_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in;
  in.text = "hello";
  EncodeOptions options;
  options.dimensions = 8;
  auto r = (*model)->Encode({&in, 1}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not with pooling splade"));
}

// A copy of splade_tiny with one file changed.
std::string CopyWith(const std::string& name, const std::string& file, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path dst = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dst);
  fs::copy(testing_util::GoldenEncoderModelDir("splade_tiny"), dst, fs::copy_options::recursive);
  std::ofstream(dst / file) << text;
  return dst.string();
}

TEST(SpladeEncoderTest, UnknownPoolingStrategyIsRefusedNamingTheFile) {
  const std::string dir = CopyWith("splade_bad_strategy", "1_SpladePooling/config.json",
                                   R"({"pooling_strategy": "mean", "activation_function": "relu"})");
  auto model = EncoderModel::Load(dir, {});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("1_SpladePooling/config.json: pooling_strategy \"mean\""));
}

TEST(SpladeEncoderTest, MaxActiveDimsIsRefusedNamingTheFile) {
  const std::string dir = CopyWith("splade_max_active", "config_sentence_transformers.json",
                                   R"({"max_active_dims": 64})");
  auto model = EncoderModel::Load(dir, {});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("config_sentence_transformers.json: max_active_dims 64"));
}

}  // namespace
}  // namespace attnserve
