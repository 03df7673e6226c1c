#include "engine/formats/decoder_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

// A copy of llama_tiny (links to its files) with `extra` files written in.
std::string TinyWith(const std::string& name, const std::vector<std::pair<std::string, std::string>>& extra) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"}) {
    // A file `extra` replaces is written fresh, never through a link into the fixtures.
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const auto& e) { return e.first == f; });
    if (!replaced) std::filesystem::create_symlink(kModels + "llama_tiny/" + f, dir + "/" + f);
  }
  for (const auto& [file, text] : extra) std::ofstream(dir + "/" + file) << text;
  return dir;
}

TEST(LoadDecoderTest, ReadsTheChatTemplateWhereTransformersKeepsIt) {
  auto none = LoadDecoder(kModels + "llama_tiny", DType::kF32);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->chat_template, "");
  auto stories = LoadDecoder(kStories, DType::kF32);
  ASSERT_TRUE(stories.ok()) << stories.status();
  EXPECT_EQ(stories->chat_template, "");  // its GGUF has no tokenizer.chat_template

  auto string_form = LoadDecoder(
      TinyWith("chat_string", {{"tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "{{ x }}\n"})"}}),
      DType::kF32);
  ASSERT_TRUE(string_form.ok()) << string_form.status();
  EXPECT_EQ(string_form->chat_template, "{{ x }}\n");

  auto named = LoadDecoder(TinyWith("chat_named", {{"tokenizer_config.json",
                                                    R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                                                          {"name": "default", "template": "D"}]})"}}),
                           DType::kF32);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->chat_template, "D");

  // chat_template.jinja wins over tokenizer_config.json, as in transformers.
  auto jinja = LoadDecoder(TinyWith("chat_jinja", {{"tokenizer_config.json", R"({"chat_template": "old"})"},
                                                   {"chat_template.jinja", "new {{ messages }}"}}),
                           DType::kF32);
  ASSERT_TRUE(jinja.ok()) << jinja.status();
  EXPECT_EQ(jinja->chat_template, "new {{ messages }}");

  auto broken = LoadDecoder(TinyWith("chat_broken", {{"tokenizer_config.json", "{\"chat_template\": "}}), DType::kF32);
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("chat_broken/tokenizer_config.json: not a JSON object"));
  auto wrong = LoadDecoder(TinyWith("chat_wrong", {{"tokenizer_config.json", R"({"chat_template": 7})"}}), DType::kF32);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("chat_template is neither a string"));
}

// generation_config.json's end ids stop generation as in transformers'
// generate() and vLLM (an instruct model's end-of-turn id is often only there).
TEST(LoadDecoderTest, GenerationConfigEosIdsAreStopIds) {
  auto plain = LoadDecoder(kModels + "llama_tiny", DType::kF32);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const int eos = plain->config.eos_token_id;
  ASSERT_GE(eos, 0);
  auto listed = LoadDecoder(TinyWith("gen_eos_list", {{"generation_config.json",
                                                       "{\"eos_token_id\": [" + std::to_string(eos) + ", 17, 42]}"}}),
                            DType::kF32);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->config.eos_token_id, eos);
  EXPECT_THAT(listed->config.eos_token_ids, ::testing::ElementsAre(eos, 17, 42));
  auto single = LoadDecoder(TinyWith("gen_eos_one", {{"generation_config.json", R"({"eos_token_id": 9})"}}),
                            DType::kF32);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(single->config.eos_token_ids, ::testing::ElementsAre(eos, 9));
  auto outside = LoadDecoder(TinyWith("gen_eos_bad", {{"generation_config.json", R"({"eos_token_id": [1, 99999]})"}}),
                             DType::kF32);
  EXPECT_THAT(std::string(outside.status().message()),
              HasSubstr("gen_eos_bad/generation_config.json: eos_token_id 99999 is not a token id"));
  auto broken = LoadDecoder(TinyWith("gen_broken", {{"generation_config.json", "{"}}), DType::kF32);
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("gen_broken/generation_config.json: not a JSON object"));
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
