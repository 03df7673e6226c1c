// BertConfig parsing and the malformed-model suite: a tiny random BERT
// directory written by the test, then broken one way at a time. Every break
// must be a clean load error naming the file and the reason.
#include "engine/models/bert.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/formats/hf_config.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

enum class Break { kNone, kTruncated, kOffsetsPastEnd, kWrongDtype, kMissingTensor, kShapeMismatch };

constexpr int kD = 8, kHeads = 2, kInter = 16, kVocab = 30522, kPositions = 16;

struct TinyTensor {
  std::string name;
  std::vector<int64_t> shape;
};

std::vector<TinyTensor> TinyBertTensors() {
  std::vector<TinyTensor> t = {
      {"embeddings.word_embeddings.weight", {kVocab, kD}},
      {"embeddings.position_embeddings.weight", {kPositions, kD}},
      {"embeddings.token_type_embeddings.weight", {2, kD}},
      {"embeddings.LayerNorm.weight", {kD}},
      {"embeddings.LayerNorm.bias", {kD}},
  };
  const std::string l = "encoder.layer.0.";
  for (const char* p : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
    t.push_back({l + p + ".weight", {kD, kD}});
    t.push_back({l + p + ".bias", {kD}});
  }
  t.push_back({l + "attention.output.LayerNorm.weight", {kD}});
  t.push_back({l + "attention.output.LayerNorm.bias", {kD}});
  t.push_back({l + "intermediate.dense.weight", {kInter, kD}});
  t.push_back({l + "intermediate.dense.bias", {kInter}});
  t.push_back({l + "output.dense.weight", {kD, kInter}});
  t.push_back({l + "output.dense.bias", {kD}});
  t.push_back({l + "output.LayerNorm.weight", {kD}});
  t.push_back({l + "output.LayerNorm.bias", {kD}});
  return t;
}

void WriteText(const std::filesystem::path& path, const std::string& s) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << s;
}

// Writes a one-layer BERT with random weights, broken as asked.
void WriteTinyBert(const std::filesystem::path& dir, Break brk) {
  std::filesystem::create_directories(dir);
  nlohmann::json config = {{"model_type", "bert"},         {"hidden_size", kD},
                           {"num_hidden_layers", 1},       {"num_attention_heads", kHeads},
                           {"intermediate_size", kInter},  {"vocab_size", kVocab},
                           {"max_position_embeddings", kPositions}, {"type_vocab_size", 2},
                           {"layer_norm_eps", 1e-12},      {"hidden_act", "gelu"}};
  WriteText(dir / "config.json", config.dump());
  std::filesystem::copy_file(testing_util::MiniLmDir() + "/tokenizer.json", dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (TinyTensor t : TinyBertTensors()) {
    if (brk == Break::kMissingTensor && t.name == "encoder.layer.0.output.dense.weight") continue;
    if (brk == Break::kShapeMismatch && t.name == "encoder.layer.0.intermediate.dense.weight") t.shape = {kInter, kD - 1};
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const size_t begin = data.size();
    for (int64_t i = 0; i < n; ++i) {
      float v = t.name.ends_with("LayerNorm.weight") ? 1.0f + normal(rng) : normal(rng);
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
    size_t end = data.size();
    if (brk == Break::kOffsetsPastEnd && t.name == "embeddings.LayerNorm.bias") end += 1 << 20;
    header[t.name] = {{"dtype", brk == Break::kWrongDtype && t.name == "embeddings.LayerNorm.bias" ? "F33" : "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {begin, end}}};
  }
  std::string h = header.dump();
  std::string image;
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) image.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  image += h + data;
  if (brk == Break::kTruncated) image.resize(image.size() / 2);
  WriteText(dir / "model.safetensors", image);
}

class MalformedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::is_directory(testing_util::MiniLmDir()))
        << "all-MiniLM-L6-v2 not found at " << testing_util::MiniLmDir();
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("attnserve_tinybert_", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(MalformedModelTest, IntactTinyModelLoadsAndRuns) {
  WriteTinyBert(dir_, Break::kNone);
  auto m = EncoderModel::Load(dir_.string(), {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->max_tokens(), kPositions);  // no sentence-transformers config: max_position_embeddings
  EXPECT_EQ((*m)->default_pooling(), PoolingMode::kMean);
  EXPECT_FALSE((*m)->default_normalize());
  std::vector<EncoderInput> in(1);
  in[0].text = "hello world";
  auto r = (*m)->Encode(in, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].embedding.numel(), kD);
}

TEST_F(MalformedModelTest, EachBreakIsACleanLoadError) {
  const struct {
    Break brk;
    const char* reason;
  } cases[] = {
      {Break::kTruncated, "past the end"},
      {Break::kOffsetsPastEnd, "past the end of the data"},
      {Break::kWrongDtype, "unknown dtype \"F33\""},
      {Break::kMissingTensor, "missing tensor \"encoder.layer.0.output.dense.weight\""},
      {Break::kShapeMismatch, "has shape [16, 7] but the config implies [16, 8]"},
  };
  for (const auto& c : cases) {
    std::filesystem::remove_all(dir_);
    WriteTinyBert(dir_, c.brk);
    auto m = EncoderModel::Load(dir_.string(), {});
    ASSERT_FALSE(m.ok()) << c.reason;
    EXPECT_THAT(m.status().message(), HasSubstr((dir_ / "model.safetensors").string())) << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr(c.reason)) << m.status();
  }
}

TEST_F(MalformedModelTest, BadConfigIsACleanLoadError) {
  WriteTinyBert(dir_, Break::kNone);
  WriteText(dir_ / "config.json", R"({"model_type":"bert","hidden_size":10,"num_hidden_layers":1,
    "num_attention_heads":3,"intermediate_size":16,"vocab_size":30522,"max_position_embeddings":16})");
  auto m = EncoderModel::Load(dir_.string(), {});
  EXPECT_THAT(m.status().message(), HasSubstr("config.json: hidden_size 10 is not a multiple of num_attention_heads 3"));
  WriteText(dir_ / "config.json", R"({"model_type":"gpt2"})");
  EXPECT_THAT(EncoderModel::Load(dir_.string(), {}).status().message(), HasSubstr("model_type \"gpt2\""));
  WriteText(dir_ / "config.json", R"({"model_type":"bert","hidden_size":8,"num_hidden_layers":1,
    "num_attention_heads":2,"intermediate_size":16,"vocab_size":100,"max_position_embeddings":16})");
  EXPECT_THAT(EncoderModel::Load(dir_.string(), {}).status().message(), HasSubstr("vocab_size is 100"));
  std::filesystem::remove(dir_ / "tokenizer.json");
  WriteText(dir_ / "config.json", R"({"model_type":"bert","hidden_size":8,"num_hidden_layers":1,
    "num_attention_heads":2,"intermediate_size":16,"vocab_size":30522,"max_position_embeddings":16})");
  EXPECT_THAT(EncoderModel::Load(dir_.string(), {}).status().message(), HasSubstr("no tokenizer.json or vocab.txt"));
}

TEST(BertConfigTest, ParsesMiniLm) {
  auto hf = HfConfig::Read(testing_util::MiniLmDir());
  ASSERT_TRUE(hf.ok()) << hf.status();
  auto c = ParseBertConfig(*hf);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->hidden_size, 384);
  EXPECT_EQ(c->num_layers, 6);
  EXPECT_EQ(c->num_heads, 12);
  EXPECT_EQ(c->head_dim(), 32);
  EXPECT_EQ(c->intermediate_size, 1536);
  EXPECT_EQ(c->max_positions, 512);
  EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-12f);
}

TEST(BertConfigTest, RejectsUnsupportedActivation) {
  auto hf = HfConfig::FromJson(nlohmann::json::parse(R"({"model_type":"bert","hidden_size":8,"num_hidden_layers":1,
    "num_attention_heads":2,"intermediate_size":16,"vocab_size":10,"max_position_embeddings":16,"hidden_act":"relu"})"),
                               "cfg.json");
  ASSERT_TRUE(hf.ok());
  EXPECT_THAT(ParseBertConfig(*hf).status().message(), HasSubstr("cfg.json: hidden_act \"relu\""));
}

}  // namespace
}  // namespace attnserve
