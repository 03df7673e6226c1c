// Nomic BERT from a Hugging Face directory (nomic-embed-text's layout)
// against transformers' NomicBertModel and sentence-transformers
// (tools/golden/nomic_bert_golden.py, whose script also checks them against
// the numpy nomic-bert forward that llama.cpp agrees with): the hub's config
// layout and transformers 5's over the same tensors, the prompts' texts, the
// refusals of the variants the encoder does not run, and errors naming the
// checkpoint's own tensors.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "engine/models/nomic_bert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("nomic_bert_golden.json"); }

std::string TinyDir() { return testing_util::GoldenEncoderModelDir("nomic_bert_tiny"); }

nlohmann::json HubConfig() {
  std::ifstream in(TinyDir() + "/config.json");
  return nlohmann::json::parse(in);
}

// The tiny model's files with config.json replaced by `config`.
class DirWithConfig {
 public:
  explicit DirWithConfig(const nlohmann::json& config)
      : dir_(fs::temp_directory_path() / ("attnserve_nomic_bert_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const fs::directory_entry& e : fs::directory_iterator(TinyDir())) {
      if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir_ / e.path().filename());
    }
    std::ofstream(dir_ / "config.json") << config.dump();
  }
  ~DirWithConfig() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

void ExpectNomicConfig(const BertConfig& c) {
  EXPECT_EQ(c.family, EncoderFamily::kBert);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.intermediate_size, 48);
  EXPECT_EQ(c.max_sequence_length(), 128);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_FLOAT_EQ(c.rotary_theta, 1000.0f);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.gate_activation, Activation::kSilu);
  EXPECT_FALSE(c.projection_bias);
}

TEST(NomicBertConfigTest, BothLayoutsReadAlike) {
  ASSERT_FALSE(Golden().is_null());
  auto hub = testing_util::ParseBertConfigJson(HubConfig());
  ASSERT_TRUE(hub.ok()) << hub.status();
  ExpectNomicConfig(*hub);
  auto native = testing_util::ParseBertConfigJson(Golden()["transformers_config"]);
  ASSERT_TRUE(native.ok()) << native.status();
  ExpectNomicConfig(*native);
  EXPECT_EQ(hub->vocab_size, native->vocab_size);
}

TEST(NomicBertConfigTest, VariantsItDoesNotRunAreRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> hub_cases = {
      {{{"rotary_emb_fraction", 0.5}}, "rotary_emb_fraction 0.5 is not supported"},
      {{{"activation_function", "gelu"}}, "activation_function \"gelu\" is not supported (swiglu)"},
      {{{"prenorm", true}}, "prenorm true (pre-norm layers) is not supported"},
      {{{"rotary_emb_interleaved", true}}, "rotary_emb_interleaved true"},
      {{{"rotary_scaling_factor", 2.0}}, "rotary_scaling_factor 2.0"},
      {{{"moe_every_n_layers", 2}}, "moe_every_n_layers 2 (a mixture of experts"},
      {{{"qkv_proj_bias", true}}, "qkv_proj_bias true (attention projection biases)"},
      {{{"n_embd", 30}}, "width 30 / heads 4 must be an even head size"},
      {{{"architectures", {"NomicBertForSequenceClassification"}}},
       "architecture NomicBertForSequenceClassification is not supported"},
  };
  for (const auto& [patch, want] : hub_cases) {
    nlohmann::json json = HubConfig();
    json.update(patch);
    auto c = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
  // Nomic's config class defaults the projection biases on: a file without
  // the keys is not nomic-embed-text's layout.
  nlohmann::json without_bias_keys = HubConfig();
  without_bias_keys.erase("mlp_fc1_bias");
  auto c = testing_util::ParseBertConfigJson(without_bias_keys);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("mlp_fc1_bias true (feed-forward biases) is not supported"));

  const std::vector<std::pair<nlohmann::json, std::string>> native_cases = {
      {{{"hidden_act", "gelu"}}, "hidden_act \"gelu\" is not supported (silu: SwiGLU)"},
      {{{"rope_parameters", {{"rope_type", "dynamic"}, {"rope_theta", 1000.0}}}},
       "rope_parameters.rope_type \"dynamic\" is not supported"},
      {{{"head_dim", 16}}, "head_dim 16 is not hidden_size 32 / num_attention_heads 4"},
  };
  for (const auto& [patch, want] : native_cases) {
    nlohmann::json json = Golden()["transformers_config"];
    json.update(patch);
    auto parsed = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(parsed.ok()) << want;
    EXPECT_THAT(parsed.status().message(), HasSubstr("dir/config.json: " + want));
  }
}

TEST(NomicBertEncoderTest, LoadsAsNomicBert) {
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "nomic_bert");
  EXPECT_EQ((*model)->max_tokens(), 64);  // sentence-transformers' max_seq_length under 128 positions
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
  EXPECT_EQ((*model)->description().vocab_size, Golden()["transformers_config"]["vocab_size"].get<int>());
  // No position table: rotary angles and the layers' weights only.
  const int64_t d = 32;
  const int64_t vocab = (*model)->description().vocab_size;
  const int64_t per_layer = 3 * d * d + d * d + 3 * 48 * d + 4 * d;
  const int64_t tables = (vocab + 2) * d + 2 * d;
  EXPECT_GE((*model)->description().weight_bytes, (tables + 2 * per_layer) * 4);
  // A token's activations: x, q/k/v, context, the output's sum, up and gate
  // (2I) and the gated product (I).
  EXPECT_EQ((*model)->ScratchBytes(2, 16), 2 * 16 * (6 * d + 3 * 48) * 4);
}

// Every text in one batch (rotary angles per position in sequences of
// several lengths, the longest cut at 64), then each alone.
TEST(NomicBertEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 8u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 1);
}

TEST(NomicBertEncoderTest, TransformersFiveLayoutGivesTheSameEmbeddings) {
  ASSERT_FALSE(Golden().is_null());
  DirWithConfig dir(Golden()["transformers_config"]);
  auto model = EncoderModel::Load(dir.path(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 2e-5), 1);
}

TEST(NomicBertEncoderTest, PromptsAreReadFromSentenceTransformersConfig) {
  auto model = EncoderModel::Load(TinyDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& prompts = (*model)->prompts();
  ASSERT_EQ(prompts.count("query"), 1u);
  EXPECT_EQ(prompts.at("query"), "search_query: ");
  EXPECT_EQ(prompts.at("document"), "search_document: ");
}

TEST(NomicBertWeightsTest, ErrorsNameTheCheckpointsTensor) {
  auto config = testing_util::ParseBertConfigJson(HubConfig());
  ASSERT_TRUE(config.ok()) << config.status();
  auto archive = SafetensorsArchive::OpenDirectory(TinyDir());
  ASSERT_TRUE(archive.ok()) << archive.status();

  std::vector<SafetensorsTensor> all_but_gate;
  for (const std::string& name : (*archive)->Names()) {
    if (name != "encoder.layers.1.mlp.fc12.weight") all_but_gate.push_back(*(*archive)->Find(name));
  }
  auto partial = SafetensorsArchive::FromTensors("dir", std::move(all_but_gate), nullptr);
  ASSERT_TRUE(partial.ok()) << partial.status();
  auto missing = NomicBertWeightsAsBert(**partial, *config);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("encoder.layers.1.mlp.fc12.weight"));

  BertConfig wider = *config;
  wider.intermediate_size = 40;
  auto misshapen = NomicBertWeightsAsBert(**archive, wider);
  ASSERT_FALSE(misshapen.ok());
  EXPECT_THAT(misshapen.status().message(), HasSubstr("encoder.layers.0.mlp.fc11.weight"));

  // Loaded: the fused Wqkv's thirds are the query, key and value rows.
  auto renamed = NomicBertWeightsAsBert(**archive, *config);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  const SafetensorsTensor* wqkv = (*archive)->Find("encoder.layers.0.attn.Wqkv.weight");
  const SafetensorsTensor* key = (*renamed)->Find("encoder.layer.0.attention.self.key.weight");
  ASSERT_NE(wqkv, nullptr);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->shape, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(key->data.data(), wqkv->data.data() + wqkv->data.size() / 3);
  EXPECT_THAT(key->file, HasSubstr("(encoder.layers.0.attn.Wqkv.weight)"));
}

}  // namespace
}  // namespace attnserve
