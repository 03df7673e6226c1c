// A BERT tokenizer from vocab.txt + tokenizer_config.json alone
// (engine/tokenizers/bert_vocab_txt.h) against Hugging Face tokenizers' ids
// for all-MiniLM-L6-v2 (tests/golden/encoder/minilm_golden.json). An
// encoder directory without tokenizer.json: tests/engine/models/
// encoder_vocab_txt_test.cc.
#include "engine/tokenizers/bert_vocab_txt.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/tokenizers/wordpiece.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class BertVocabTxtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attnserve_vocab_txt_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(BertVocabTxtTest, MatchesTokenizersOnEveryGoldenSentence) {
  const std::string minilm = testing_util::MiniLmDir();
  auto described = BertTokenizerJsonFromVocab(minilm + "/vocab.txt", minilm + "/tokenizer_config.json");
  ASSERT_TRUE(described.ok()) << described.status();
  auto from_vocab = WordPieceTokenizer::FromJson(*described, minilm + "/vocab.txt");
  ASSERT_TRUE(from_vocab.ok()) << from_vocab.status();
  auto from_json = WordPieceTokenizer::FromFile(minilm + "/tokenizer.json");
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ((*from_vocab)->vocab_size(), (*from_json)->vocab_size());
  auto golden = ReadJsonFile(testing_util::EncoderGoldenPath());
  ASSERT_TRUE(golden.ok()) << golden.status();
  int checked = 0;
  for (const nlohmann::json& s : (*golden)["sentences"]) {
    const std::string text = s["text"].get<std::string>();
    auto enc = (*from_vocab)->Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(enc.ok()) << enc.status();
    EXPECT_THAT(enc->ids, ElementsAreArray(s["ids_full"].get<std::vector<int32_t>>())) << text;
    auto pair = (*from_vocab)->EncodePair(text, "a second text [MASK]", 64);
    auto want = (*from_json)->EncodePair(text, "a second text [MASK]", 64);
    ASSERT_TRUE(pair.ok() && want.ok());
    EXPECT_EQ(pair->ids, want->ids) << text;
    EXPECT_EQ(*(*from_vocab)->Decode(enc->ids, true), *(*from_json)->Decode(enc->ids, true)) << text;
    ++checked;
  }
  EXPECT_GE(checked, 70);
}

TEST_F(BertVocabTxtTest, ConfigFlagsAndRefusals) {
  Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nHello\n");
  Write("tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": null, "cls_token": {"content": "[CLS]"}})");
  auto described = BertTokenizerJsonFromVocab((dir_ / "vocab.txt").string(), (dir_ / "tokenizer_config.json").string());
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ((*described)["normalizer"]["lowercase"], false);
  auto cased = WordPieceTokenizer::FromJson(*described, "vocab.txt");
  ASSERT_TRUE(cased.ok()) << cased.status();
  EXPECT_THAT(cased->get()->Encode("Hello hello", true)->ids, ElementsAreArray({2, 6, 5, 3}));
  // Defaults (no tokenizer_config.json): lower case.
  described = BertTokenizerJsonFromVocab((dir_ / "vocab.txt").string(), "");
  ASSERT_TRUE(described.ok()) << described.status();
  auto uncased = WordPieceTokenizer::FromJson(*described, "vocab.txt");
  ASSERT_TRUE(uncased.ok()) << uncased.status();
  EXPECT_THAT(uncased->get()->Encode("Hello hello", true)->ids, ElementsAreArray({2, 5, 5, 3}));

  Write("no_cls.txt", "[PAD]\n[UNK]\n[SEP]\n[MASK]\n");
  auto refused = BertTokenizerJsonFromVocab((dir_ / "no_cls.txt").string(), "");
  EXPECT_THAT(refused.status().message(), HasSubstr("no_cls.txt: cls_token \"[CLS]\" is not in the vocabulary"));
  Write("empty.txt", "");
  EXPECT_THAT(BertTokenizerJsonFromVocab((dir_ / "empty.txt").string(), "").status().message(),
              HasSubstr("empty.txt: no tokens"));
  Write("bad_config.json", R"({"do_lower_case": "yes"})");
  EXPECT_THAT(
      BertTokenizerJsonFromVocab((dir_ / "vocab.txt").string(), (dir_ / "bad_config.json").string()).status().message(),
      HasSubstr("bad_config.json: do_lower_case must be a bool"));
  EXPECT_EQ(BertTokenizerJsonFromVocab((dir_ / "missing.txt").string(), "").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace attnserve
