#include "engine/formats/decoder_loader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/";
const std::string kStories = std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";

TEST(LoadDecoderTest, Stories260KGguf) {
  auto m = LoadDecoder(kStories, DType::kF32);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->format, "gguf");
  EXPECT_EQ(m->config.num_layers, 5);
  EXPECT_EQ(m->weights.layers.size(), 5u);
  EXPECT_EQ(m->tokenizer->kind(), "sentencepiece_bpe");
  EXPECT_THAT(*m->tokenizer->Encode("Once upon a time"), ::testing::ElementsAre(1, 403, 407, 261, 378));
}

TEST(LoadDecoderTest, EveryTinyModelInBothFormatsAgrees) {
  for (const char* name : {"llama_tiny", "qwen2_tiny", "gpt2_tiny"}) {
    auto hf = LoadDecoder(kModels + name, DType::kBF16);
    auto gg = LoadDecoder(kModels + name + "/model.gguf", DType::kBF16);
    ASSERT_TRUE(hf.ok()) << name << hf.status();
    ASSERT_TRUE(gg.ok()) << name << gg.status();
    EXPECT_EQ(hf->format, "hf");
    EXPECT_EQ(hf->config.name, name);
    EXPECT_EQ(hf->config.vocab_size, gg->config.vocab_size);
    EXPECT_EQ(hf->tokenizer->vocab_size(), gg->tokenizer->vocab_size());
    EXPECT_EQ(hf->config.tie_word_embeddings, gg->config.tie_word_embeddings);
    EXPECT_EQ(hf->weights.TotalBytes(), gg->weights.TotalBytes());
    const std::string text = "Hello world, 123!";
    EXPECT_EQ(*hf->tokenizer->Encode(text), *gg->tokenizer->Encode(text)) << name;
    EXPECT_EQ(hf->weights.layers[0].q_weight.dtype(), DType::kBF16);
  }
}

TEST(LoadDecoderTest, ErrorsNameThePath) {
  auto missing = LoadDecoder("/nonexistent/model.gguf", DType::kF32);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/model.gguf"));
  const std::string dir = ::testing::TempDir() + "/empty_model_dir";
  std::filesystem::create_directories(dir);
  auto empty = LoadDecoder(dir, DType::kF32);
  EXPECT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("config.json"));
  const std::string junk = ::testing::TempDir() + "/junk.gguf";
  std::ofstream(junk) << "this is not a gguf file at all";
  auto bad = LoadDecoder(junk, DType::kF32);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("junk.gguf"));
  EXPECT_FALSE(LoadDecoder(kStories, DType::kF16).ok());
}

}  // namespace
}  // namespace attnserve
