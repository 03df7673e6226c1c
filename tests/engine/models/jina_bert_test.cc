// JinaBERT (jina-embeddings-v2: BERT with ALiBi and a GeGLU feed-forward)
// from a Hugging Face directory against tools/golden/jina_bert_golden.py's
// reference: a numpy transcription of Jina's forward, which the script
// checks against llama.cpp reading the same weights (6 heads, so both of
// ALiBi's slope sequences run; a 206-token text); the refusals of what the
// encoder does not run; errors naming the checkpoint's tensors; and
// llama.cpp's jina-bert-v2 GGUF file of the same weights.
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "engine/models/jina_bert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("jina_bert_golden.json"); }

std::string TinyDir() { return testing_util::GoldenEncoderModelDir("jina_bert_tiny"); }

nlohmann::json TinyConfig() {
  auto config = HfConfig::Read(TinyDir());
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? config->json() : nlohmann::json();
}

TEST(JinaBertConfigTest, AlibiAndGeGlu) {
  auto c = testing_util::ParseBertConfigJson(TinyConfig());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, EncoderFamily::kBert);
  EXPECT_TRUE(c->alibi);
  EXPECT_EQ(c->gate_activation, Activation::kGeluErf);
  EXPECT_TRUE(c->projection_bias);
  EXPECT_EQ(c->rotary_theta, 0.0f);
  EXPECT_EQ(c->max_sequence_length(), 256);
}

TEST(JinaBertConfigTest, WhatItDoesNotRunIsRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"feed_forward_type", "reglu"}}, "feed_forward_type \"reglu\" is not supported with ALiBi positions"},
      {{{"feed_forward_type", nullptr}}, "feed_forward_type \"original\" is not supported"},
      {{{"architectures", {"JinaBertForSequenceClassification"}}},
       "architecture JinaBertForSequenceClassification is not supported"},
      {{{"position_embedding_type", "relative_key"}}, "position_embedding_type \"relative_key\" is not supported"},
      {{{"model_type", "roberta"}}, "position_embedding_type \"alibi\" is not supported"},
  };
  for (const auto& [patch, want] : cases) {
    nlohmann::json json = TinyConfig();
    json.update(patch);
    auto c = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
}

TEST(JinaBertEncoderTest, LoadsWithoutAPositionTable) {
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->max_tokens(), 256);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
  // Word and type tables, norms, 2 layers of 4 biased [48, 48] projections,
  // the [128, 48] gated GEMM and the biased [48, 64] down projection: no
  // [256, 48] position table.
  const int64_t d = 48, vocab = (*model)->description().vocab_size;
  const int64_t per_layer = 4 * (d * d + d) + 2 * 64 * d + (d * 64 + d) + 4 * d;
  const int64_t unpadded = ((vocab + 2) * d + 2 * d + 2 * per_layer) * 4;
  EXPECT_GE((*model)->description().weight_bytes, unpadded);  // packed panels may pad
  EXPECT_LT((*model)->description().weight_bytes, unpadded + 256 * d * 4);
  // A token's activations (x, q/k/v, context, sum, up and gate, their
  // product), and each head's bias by distance (2N - 1 values).
  EXPECT_EQ((*model)->ScratchBytes(2, 16), (2 * 16 * (6 * d + 3 * 64) + 6 * 31) * 4);
}

// Every text in one batch (sequences of several lengths sharing the bias
// table), then each alone.
TEST(JinaBertEncoderTest, EmbeddingsMatchTheReference) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 6u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 0);
}

// llama.cpp on the same weights (tanh GELU): the same vectors within 1e-3.
TEST(JinaBertEncoderTest, EmbeddingsAgreeWithLlamaCpp) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  int compared = 0;
  for (const nlohmann::json& c : Golden()["embeddings"]) {
    if (c["llama_cpp_embedding"].is_null()) continue;
    EncoderInput input;
    input.text = c["text"].get<std::string>();
    auto out = (*model)->Encode({&input, 1}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> want = c["llama_cpp_embedding"].get<std::vector<float>>();
    ASSERT_EQ((*out)[0].embedding.numel(), static_cast<int64_t>(want.size()));
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*out)[0].embedding.f32()[k], want[k], 1e-3) << input.text;
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

// llama.cpp's jina-bert-v2 files of the same weights (tools/golden's writer
// does as the converters do: gated_layers split into ffn_gate and ffn_up in
// older conversions, whole as a [2I] ffn_up in the current one): the
// reference's vectors, from the file's own WordPiece vocabulary.
class JinaBertGgufTest : public ::testing::TestWithParam<std::string> {};

TEST_P(JinaBertGgufTest, LlamaCppFileGivesTheSameEmbeddings) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "jina-bert-v2");
  EXPECT_EQ((*model)->max_tokens(), 256);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, JinaBertGgufTest,
                         ::testing::Values("jina_bert_tiny.gguf", "jina_bert_fused_tiny.gguf"));

TEST(JinaBertWeightsTest, ErrorsNameTheCheckpointsTensor) {
  auto config = testing_util::ParseBertConfigJson(TinyConfig());
  ASSERT_TRUE(config.ok()) << config.status();
  auto archive = SafetensorsArchive::OpenDirectory(TinyDir());
  ASSERT_TRUE(archive.ok()) << archive.status();
  std::vector<SafetensorsTensor> without;
  for (const std::string& name : (*archive)->Names()) {
    if (name != "encoder.layer.1.mlp.gated_layers.weight") without.push_back(*(*archive)->Find(name));
  }
  auto partial = SafetensorsArchive::FromTensors("dir", std::move(without), nullptr);
  ASSERT_TRUE(partial.ok()) << partial.status();
  auto missing = JinaBertWeightsAsBert(**partial, *config);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("encoder.layer.1.mlp.gated_layers.weight"));

  // gated_layers' halves: the gate's rows first, then up's.
  auto renamed = JinaBertWeightsAsBert(**archive, *config);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  const SafetensorsTensor* fused = (*archive)->Find("encoder.layer.0.mlp.gated_layers.weight");
  const SafetensorsTensor* gate = (*renamed)->Find("encoder.layer.0.intermediate.gate.weight");
  const SafetensorsTensor* up = (*renamed)->Find("encoder.layer.0.intermediate.dense.weight");
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(gate->data.data(), fused->data.data());
  EXPECT_EQ(up->data.data(), fused->data.data() + fused->data.size() / 2);
}

}  // namespace
}  // namespace attnserve
