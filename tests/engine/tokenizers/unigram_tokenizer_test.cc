// XLM-RoBERTa's tokenizer (SentencePiece Unigram with a Precompiled nmt_nfkc
// normalizer) against Hugging Face tokenizers (tools/golden/xlmr_golden.py):
// ids, byte offsets, decoding and pair templates for both tokenizer.json
// layouts in use (the checkpoints' own, and transformers 5's), and the
// refusals of malformed files.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/precompiled_charsmap.h"
#include "engine/tokenizers/serde_json_float.h"
#include "engine/tokenizers/unigram_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("xlmr_golden.json"); }

// Which model directory carries each layout's tokenizer.json.
std::string TokenizerPath(const std::string& layout) {
  return testing_util::GoldenEncoderModelDir(layout == "legacy" ? "xlmr_tiny" : "xlmr_reranker_tiny") +
         "/tokenizer.json";
}

nlohmann::json TokenizerJson() {
  auto j = ReadJsonFile(TokenizerPath("legacy"));
  return j.ok() ? *j : nlohmann::json();
}

class UnigramGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(UnigramGoldenTest, IdsAndOffsetsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(TokenizerPath(GetParam()));
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->kind(), "unigram");
  ASSERT_GE(Golden()["tokenizer"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"][GetParam()]);
}

TEST_P(UnigramGoldenTest, PairsAndTruncationEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(TokenizerPath(GetParam()));
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_GE(testing_util::ExpectGoldenPairs(**tok, Golden()["pairs"][GetParam()]), 3);  // the long pairs were cut
}

INSTANTIATE_TEST_SUITE_P(Layouts, UnigramGoldenTest, ::testing::Values("legacy", "v5"));

// Runs of one character tie between segmentations; tokenizers breaks the
// ties by its serde_json reading of the scores (one in eight 1 ULP off the
// correctly rounded value). The golden marks the texts where correctly
// rounded scores would give other ids.
TEST(UnigramTokenizerTest, ScoreTiesBreakAsTokenizersReadsTheScores) {
  ASSERT_FALSE(Golden().is_null());
  const nlohmann::json& ties = Golden()["score_ties"];
  auto tok = EncoderTokenizerFromJson(ties["tokenizer"], "ties/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  int decided_by_rounding = 0;
  for (const nlohmann::json& c : ties["cases"]) {
    auto enc = (*tok)->Encode(c["text"].get<std::string>(), /*add_special_tokens=*/false);
    ASSERT_TRUE(enc.ok()) << enc.status();
    EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << c["text"];
    decided_by_rounding += c["differs_when_correctly_rounded"].get<bool>();
  }
  EXPECT_GE(decided_by_rounding, 10);
}

TEST(SerdeJsonFloatTest, TwoRoundingsAsSerdeJsonDoes) {
  // Expected values from the same arithmetic in Python: float(digits) / 10**k.
  EXPECT_EQ(SerdeJsonFloat(-12.526375739369499), -12.5263757393695);
  EXPECT_EQ(SerdeJsonFloat(3.4028234663852886e+38), 3.402823466385289e+38);
  for (double same : {-6.605040550231934, -10.557645797729492, 0.5, -1.5e-07, 0.0, -8.0, 123456.0}) {
    EXPECT_EQ(SerdeJsonFloat(same), same) << same;
  }
  EXPECT_TRUE(std::isinf(SerdeJsonFloat(std::numeric_limits<double>::infinity())));
}

TEST(UnigramTokenizerTest, SingleTruncationKeepsTheSpecialTokens) {
  auto tok = LoadEncoderTokenizer(TokenizerPath("legacy"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto full = (*tok)->Encode("the quick brown fox jumps over the lazy dog", true);
  auto cut = (*tok)->Encode("the quick brown fox jumps over the lazy dog", true, 5);
  ASSERT_TRUE(full.ok() && cut.ok());
  ASSERT_GT(full->ids.size(), 5u);
  EXPECT_TRUE(cut->truncated);
  EXPECT_EQ(cut->untruncated_length, static_cast<int64_t>(full->ids.size()));
  std::vector<int32_t> expected(full->ids.begin(), full->ids.begin() + 4);
  expected.push_back(full->ids.back());
  EXPECT_THAT(cut->ids, ElementsAreArray(expected));
}

TEST(UnigramTokenizerTest, LeftTruncationEqualsTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(TokenizerPath("legacy"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const nlohmann::json& c = Golden()["left_truncation"];
  auto enc = (*tok)->Encode(c["text"].get<std::string>(), true, Golden()["max_tokens"].get<int>(),
                            TruncationSide::kStart);
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_TRUE(enc->truncated);
  EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>()));
}

TEST(UnigramTokenizerTest, InvalidUtf8IsRefusedWithItsOffset) {
  auto tok = LoadEncoderTokenizer(TokenizerPath("legacy"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto enc = (*tok)->Encode("abc\xff", true);
  ASSERT_FALSE(enc.ok());
  EXPECT_EQ(enc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(enc.status().message(), HasSubstr("3"));
}

TEST(UnigramTokenizerTest, DecodeRefusesIdsOutsideTheVocabulary) {
  auto tok = LoadEncoderTokenizer(TokenizerPath("legacy"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto text = (*tok)->Decode(std::vector<int32_t>{0, (*tok)->vocab_size()}, false);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("index 1"));
}

TEST(UnigramTokenizerTest, MalformedFilesNameTheComponent) {
  nlohmann::json base = TokenizerJson();
  ASSERT_FALSE(base.is_null());
  testing_util::ExpectRefusals(base, {
      {"bad base64", [](nlohmann::json& j) { j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "!!"; },
       "precompiled_charsmap is not valid base64"},
      {"short trie", [](nlohmann::json& j) { j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "/////w=="; },
       "trie size"},
      {"normalizer", [](nlohmann::json& j) { j["normalizer"] = {{"type", "NFKD"}}; }, "normalizer: type \"NFKD\""},
      {"pre_tokenizer", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}}; },
       "pre_tokenizer: type \"ByteLevel\""},
      {"unk", [](nlohmann::json& j) { j["model"].erase("unk_id"); }, "unk_id is missing"},
      {"vocab entry", [](nlohmann::json& j) { j["model"]["vocab"][5] = "x"; }, "vocab[5] is not [piece, score]"},
      {"post_processor", [](nlohmann::json& j) { j["post_processor"]["pair"] = nlohmann::json::array(); },
       "pair must hold $A and $B"},
      {"model type", [](nlohmann::json& j) { j["model"]["type"] = "WordLevel"; }, "model.type \"WordLevel\""},
  });
}

TEST(PrecompiledCharsmapTest, ShortestRuleWinsAndDamagedTriesMatchNothing) {
  nlohmann::json j = TokenizerJson();
  ASSERT_FALSE(j.is_null());
  auto map = PrecompiledCharsmap::FromBase64(j["normalizer"]["normalizers"][0]["precompiled_charsmap"].get<std::string>(),
                                             "t");
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->Transform("\xEF\xBC\xA1"), "A");                 // fullwidth A: NFKC
  EXPECT_EQ(map->Transform("\xEF\xBC\xA1\xCC\x81"), "A");         // + a combining accent: the shorter rule
  EXPECT_EQ(map->Transform("\xEF\xAC\x81"), "fi");                // the fi ligature
  EXPECT_EQ(map->Transform("\t"), " ");
  EXPECT_FALSE(map->Transform("a").has_value());
  // A trie of one unit whose offsets point outside it.
  auto damaged = PrecompiledCharsmap::FromBase64("BAAAAP////8=", "t");
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_FALSE(damaged->Transform("abc").has_value());
}

}  // namespace
}  // namespace attnserve
