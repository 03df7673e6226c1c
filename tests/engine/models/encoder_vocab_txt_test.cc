// all-MiniLM-L6-v2 without its tokenizer.json: the encoder reads vocab.txt
// and tokenizer_config.json (engine/tokenizers/bert_vocab_txt.h) and embeds
// exactly as with it.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(EncoderVocabTxtTest, DirectoryWithoutTokenizerJson) {
  const fs::path dir = fs::temp_directory_path() / ("attnserve_encoder_vocab_txt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path minilm = testing_util::MiniLmDir();
  for (const fs::directory_entry& e : fs::directory_iterator(minilm)) {
    if (e.path().filename() != "tokenizer.json") fs::create_symlink(e.path(), dir / e.path().filename());
  }
  auto without = EncoderModel::Load(dir.string(), {});
  ASSERT_TRUE(without.ok()) << without.status();
  auto with = EncoderModel::Load(minilm.string(), {});
  ASSERT_TRUE(with.ok()) << with.status();
  std::vector<EncoderInput> inputs(2);
  inputs[0].text = "Café naïve — 東京 UPPER case, [MASK] and unbelievably long words.";
  inputs[1].text = "A man is playing guitar.";
  auto a = (*without)->Encode(inputs, {});
  auto b = (*with)->Encode(inputs, {});
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ((*a)[i].token_ids, (*b)[i].token_ids);
    EXPECT_EQ(testing_util::MaxAbsDiff((*a)[i].embedding.f32(), (*b)[i].embedding.f32(), 384), 0.0);
  }
  fs::remove(dir / "vocab.txt");
  EXPECT_THAT(EncoderModel::Load(dir.string(), {}).status().message(), HasSubstr("no tokenizer.json or vocab.txt"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnserve
