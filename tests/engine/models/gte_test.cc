// GTE encoders from a Hugging Face directory against transformers 5's
// GteModel / GteForSequenceClassification and sentence-transformers
// (tools/golden/gte_golden.py): the hub's remote-code layout ("new": NTK
// rope scaling, no token types, CLS pooling; a reranker's tensors under
// "new.") and transformers' ("gte") over the same tensors, the refusals of
// the variants the encoder does not run, and errors naming the checkpoint's
// tensors.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "engine/models/gte.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("gte_golden.json"); }

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

TEST(GteConfigTest, RemoteLayoutWithNtkScaling) {
  auto c = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("gte_tiny"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, EncoderFamily::kBert);
  EXPECT_EQ(c->type_vocab_size, 0);
  EXPECT_EQ(c->max_sequence_length(), 128);
  EXPECT_EQ(c->gate_activation, Activation::kGeluErf);
  EXPECT_TRUE(c->projection_bias);
  // NTK factor 2 over head_dim 8: base 10000 * 2, frequencies / 2^(2/8).
  EXPECT_FLOAT_EQ(c->rotary_theta, 20000.0f);
  EXPECT_FLOAT_EQ(c->rotary_scale, static_cast<float>(std::pow(2.0, 0.25)));
  EXPECT_TRUE(c->labels.empty());
}

TEST(GteConfigTest, TransformersLayoutAndTheReranker) {
  ASSERT_FALSE(Golden().is_null());
  auto native = testing_util::ParseBertConfigJson(Golden()["transformers_config"]);
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_FLOAT_EQ(native->rotary_theta, 10000.0f);
  EXPECT_FLOAT_EQ(native->rotary_scale, 1.0f);
  EXPECT_EQ(native->type_vocab_size, 0);
  auto reranker = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("gte_reranker_tiny"));
  ASSERT_TRUE(reranker.ok()) << reranker.status();
  EXPECT_EQ(reranker->labels, std::vector<std::string>{"LABEL_0"});
  EXPECT_EQ(reranker->type_vocab_size, 1);
  EXPECT_FLOAT_EQ(reranker->rotary_theta, 160000.0f);
}

TEST(GteConfigTest, VariantsItDoesNotRunAreRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> remote_cases = {
      {{{"position_embedding_type", "absolute"}}, "position_embedding_type \"absolute\" is not supported"},
      {{{"layer_norm_type", "rms_norm"}}, "layer_norm_type \"rms_norm\" is not supported"},
      {{{"logn_attention_scale", true}}, "logn_attention_scale true (log-n attention scaling)"},
      {{{"hidden_act", "relu"}}, "hidden_act \"relu\" is not supported (gelu: GeGLU)"},
      {{{"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}}, "rope_scaling {"},
      {{{"rope_scaling", {{"type", "ntk"}, {"factor", 2.0}, {"mixed_b", 0.5}}}}, "rope_scaling.mixed_b"},
      {{{"rope_scaling", {{"type", "ntk"}}}}, "rope_scaling.factor must be a positive number"},
      {{{"architectures", {"NewForTokenClassification"}}}, "architecture NewForTokenClassification"},
  };
  for (const auto& [patch, want] : remote_cases) {
    nlohmann::json json = testing_util::GoldenEncoderConfig("gte_tiny");
    json.update(patch);
    auto c = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
  nlohmann::json yarn = Golden()["transformers_config"];
  yarn["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 1000.0}, {"factor", 2.0}};
  auto c = testing_util::ParseBertConfigJson(yarn);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("rope_parameters.rope_type \"yarn\" is not supported"));
}

TEST(GteEncoderTest, LoadsAsGteWithClsPooling) {
  auto model = EncoderModel::Load(ModelDir("gte_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "new");
  EXPECT_EQ((*model)->max_tokens(), 64);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kCls);
  EXPECT_TRUE((*model)->default_normalize());
}

// The hub's layout: the NTK-scaled frequencies; every text in one batch,
// then each alone.
TEST(GteEncoderTest, EmbeddingsMatchTransformersWithNtkScaling) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("gte_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 6u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 1);
}

// The same weights under transformers 5's config (no scaling) against
// SentenceTransformer.
TEST(GteEncoderTest, TransformersLayoutMatchesSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  const fs::path dir = fs::temp_directory_path() / ("attnserve_gte_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const fs::directory_entry& e : fs::directory_iterator(ModelDir("gte_tiny"))) {
    if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir / e.path().filename());
  }
  std::ofstream(dir / "config.json") << Golden()["transformers_config"].dump();
  auto model = EncoderModel::Load(dir.string(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "gte");
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["transformers_embeddings"], 2e-5), 1);
  fs::remove_all(dir);
}

// gte-base-en-v1.5 has no token-type table, and its code never reads the
// tokenizer's segments: a pair's second text (segment 1 from BERT's
// template) is read as the same ids without segments.
TEST(GteEncoderTest, WithoutATokenTypeTableSegmentsAreIgnored) {
  auto model = EncoderModel::Load(ModelDir("gte_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput pair;
  pair.text = "how do i reset my password?";
  pair.text_pair = "the quick brown fox";
  auto with_pair = (*model)->Encode({&pair, 1}, {});
  ASSERT_TRUE(with_pair.ok()) << with_pair.status();
  EncoderInput ids;
  ids.is_text = false;
  ids.token_ids = (*with_pair)[0].token_ids;
  auto as_ids = (*model)->Encode({&ids, 1}, {});
  ASSERT_TRUE(as_ids.ok()) << as_ids.status();
  const Tensor& a = (*with_pair)[0].embedding;
  const Tensor& b = (*as_ids)[0].embedding;
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t k = 0; k < a.numel(); ++k) EXPECT_EQ(a.f32()[k], b.f32()[k]);
}

// Tensors under "new.", BERT's pooler and classifier, XLM-R's tokenizer.
TEST(GteEncoderTest, RerankerLogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  testing_util::ExpectGoldenClassifier(ModelDir("gte_reranker_tiny"), Golden()["logits"], 1e-4);
}

TEST(GteWeightsTest, ErrorsNameTheCheckpointsTensor) {
  auto config = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("gte_reranker_tiny"));
  ASSERT_TRUE(config.ok()) << config.status();
  auto archive = SafetensorsArchive::OpenDirectory(ModelDir("gte_reranker_tiny"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  std::vector<SafetensorsTensor> without_pooler;
  for (const std::string& name : (*archive)->Names()) {
    if (name != "new.pooler.dense.weight") without_pooler.push_back(*(*archive)->Find(name));
  }
  auto partial = SafetensorsArchive::FromTensors("dir", std::move(without_pooler), nullptr);
  ASSERT_TRUE(partial.ok()) << partial.status();
  auto missing = GteWeightsAsBert(**partial, *config);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("new.pooler.dense.weight"));

  BertConfig wider = *config;
  wider.intermediate_size = 40;
  auto misshapen = GteWeightsAsBert(**archive, wider);
  ASSERT_FALSE(misshapen.ok());
  EXPECT_THAT(misshapen.status().message(), HasSubstr("new.encoder.layer.0.mlp.up_gate_proj.weight"));

  // up_gate_proj's halves: up's rows, then gate's.
  auto renamed = GteWeightsAsBert(**archive, *config);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  const SafetensorsTensor* fused = (*archive)->Find("new.encoder.layer.1.mlp.up_gate_proj.weight");
  const SafetensorsTensor* gate = (*renamed)->Find("encoder.layer.1.intermediate.gate.weight");
  const SafetensorsTensor* value_bias = (*renamed)->Find("encoder.layer.1.attention.self.value.bias");
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(value_bias, nullptr);
  EXPECT_EQ(gate->data.data(), fused->data.data() + fused->data.size() / 2);
  EXPECT_EQ(value_bias->shape, std::vector<int64_t>{32});
}

}  // namespace
}  // namespace attnserve
