// RoBERTa's tokenizer (byte-level BPE, RobertaProcessing) against Hugging Face
// tokenizers (tools/golden/roberta_golden.py): ids, byte offsets (trimmed of
// spaces, characters split across tokens), decoding and pair templates for
// RoBERTa's own tokenizer.json and two variants (add_prefix_space; a
// TemplateProcessing post-processor, which trims nothing), and the refusals of
// malformed files.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/pretokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("roberta_golden.json"); }

nlohmann::json RobertaJson() {
  auto j = ReadJsonFile(testing_util::GoldenEncoderModelDir("roberta_tiny") + "/tokenizer.json");
  return j.ok() ? *j : nlohmann::json();
}

// roberta_tiny's tokenizer.json with the layout's pre-tokenizer and
// post-processor, as the golden script made it.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LayoutTokenizer(const std::string& layout) {
  nlohmann::json j = RobertaJson();
  j["pre_tokenizer"] = Golden()["layouts"][layout]["pre_tokenizer"];
  j["post_processor"] = Golden()["layouts"][layout]["post_processor"];
  return EncoderTokenizerFromJson(j, layout + "/tokenizer.json");
}

class ByteLevelBpeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ByteLevelBpeGoldenTest, IdsAndOffsetsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LayoutTokenizer(GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->kind(), "bpe");
  ASSERT_GE(Golden()["tokenizer"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"][GetParam()]);
}

TEST_P(ByteLevelBpeGoldenTest, PairsAndTruncationEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LayoutTokenizer(GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_GE(testing_util::ExpectGoldenPairs(**tok, Golden()["pairs"][GetParam()]), 3);  // the long pairs were cut
}

INSTANTIATE_TEST_SUITE_P(Layouts, ByteLevelBpeGoldenTest, ::testing::Values("roberta", "prefix", "template"));

TEST(ByteLevelBpeEncoderTest, ACharacterSplitAcrossTokensGivesEachItsSpan) {
  auto tok = LayoutTokenizer("roberta");
  ASSERT_TRUE(tok.ok()) << tok.status();
  // U+1F642 is four bytes; the tiny vocabulary has no merge for them.
  auto enc = (*tok)->Encode("\xF0\x9F\x99\x82", /*add_special_tokens=*/false);
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_EQ(enc->ids.size(), 4u);
  for (const auto& o : enc->offsets) EXPECT_EQ(o, std::make_pair(0u, 4u));
  // A token cut at a character boundary decodes to U+FFFD, as tokenizers does.
  auto half = (*tok)->Decode(std::vector<int32_t>(enc->ids.begin(), enc->ids.begin() + 2), false);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*half, "\xEF\xBF\xBD");
}

TEST(ByteLevelBpeEncoderTest, InvalidUtf8IsRefusedWithItsOffset) {
  auto tok = LayoutTokenizer("roberta");
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto enc = (*tok)->Encode("abc\xff", true);
  ASSERT_FALSE(enc.ok());
  EXPECT_EQ(enc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(enc.status().message(), HasSubstr("3"));
}

TEST(ByteLevelBpeEncoderTest, DecodeRefusesIdsOutsideTheVocabulary) {
  auto tok = LayoutTokenizer("roberta");
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto text = (*tok)->Decode(std::vector<int32_t>{0, (*tok)->vocab_size()}, false);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("index 1"));
}

TEST(ByteLevelBpeEncoderTest, MalformedFilesNameTheComponent) {
  nlohmann::json base = RobertaJson();
  ASSERT_FALSE(base.is_null());
  testing_util::ExpectRefusals(base, {
      {"normalizer", [](nlohmann::json& j) { j["normalizer"] = {{"type", "NFKC"}}; }, "normalizer \"NFKC\""},
      {"pre_tokenizer", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; },
       "pre_tokenizer \"Whitespace\""},
      {"split regex",
       [](nlohmann::json& j) {
         j["pre_tokenizer"] = nlohmann::json::parse(
             R"({"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false},
                  {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
       },
       "Split regex is not one of the supported"},
      {"split behavior",
       [](nlohmann::json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"},
                                  {"pattern", {{"Regex", PretokenizerRegex(PretokenizerKind::kQwen2)}}},
                                  {"behavior", "Removed"}},
                                 {{"type", "ByteLevel"}, {"use_regex", false}}}}};
       },
       "Split must be Isolated"},
      {"split then regex",
       [](nlohmann::json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"},
                                  {"pattern", {{"Regex", PretokenizerRegex(PretokenizerKind::kQwen2)}}},
                                  {"behavior", "Isolated"}},
                                 {{"type", "ByteLevel"}, {"use_regex", true}}}}};
       },
       "use_regex false"},
      {"decoder", [](nlohmann::json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, "decoder \"WordPiece\""},
      {"dropout", [](nlohmann::json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout"},
      {"subword prefix", [](nlohmann::json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
       "continuing_subword_prefix"},
      // byte_fallback makes it a SentencePiece-style file, which has no ByteLevel pre-tokenizer.
      {"byte fallback", [](nlohmann::json& j) { j["model"]["byte_fallback"] = true; },
       "pre_tokenizer: type \"ByteLevel\" is not supported"},
      {"unk", [](nlohmann::json& j) { j["model"]["unk_token"] = "<nothing>"; }, "unk_token \"<nothing>\""},
      {"vocab id", [](nlohmann::json& j) { j["model"]["vocab"]["a"] = -3; }, "model.vocab['a']"},
      {"merges", [](nlohmann::json& j) { j["model"]["merges"] = {7}; }, "model.merges entries"},
      {"post_processor", [](nlohmann::json& j) { j["post_processor"]["sep"] = "</s>"; }, "sep must be [token, id]"},
  });
}

TEST(ByteLevelBpeEncoderTest, UnknownSymbolsBecomeUnkAndFuse) {
  nlohmann::json j = RobertaJson();
  ASSERT_FALSE(j.is_null());
  // Take the stand-ins of 0xF0 0x9F (an emoji's first bytes) out of the
  // vocabulary; with unk_token they become <unk>, fused into one by fuse_unk.
  j["model"]["vocab"].erase("\xC3\xB0");  // ð  (0xF0)
  j["model"]["vocab"].erase("\xC5\x81");  // Ł  (0x9F)
  j["model"]["unk_token"] = "<unk>";
  auto plain = EncoderTokenizerFromJson(j, "t");
  j["model"]["fuse_unk"] = true;
  auto fused = EncoderTokenizerFromJson(j, "t");
  ASSERT_TRUE(plain.ok() && fused.ok()) << plain.status() << fused.status();
  auto a = (*plain)->Encode("\xF0\x9F\x99\x82", false);
  auto b = (*fused)->Encode("\xF0\x9F\x99\x82", false);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->ids.size(), 4u);
  EXPECT_EQ(a->ids[0], 3);
  EXPECT_EQ(a->ids[1], 3);
  ASSERT_EQ(b->ids.size(), 3u);
  EXPECT_EQ(b->ids[0], 3);
  EXPECT_EQ(b->ids[1], a->ids[2]);
  // Without an unk_token the text is refused, naming the symbol.
  j["model"]["unk_token"] = nullptr;
  auto strict = EncoderTokenizerFromJson(j, "t");
  ASSERT_TRUE(strict.ok());
  auto refused = (*strict)->Encode("\xF0\x9F\x99\x82", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no unk_token"));
}

// [[a, b], ...] (a braced list of string pairs would read as an object).
nlohmann::json Merges(const std::vector<std::pair<std::string, std::string>>& pairs) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [a, b] : pairs) list.push_back(nlohmann::json::array({a, b}));
  return list;
}

// A merge listed twice keeps its last rank (tokenizers collects the merges
// into a map: encoding "abc" with merges [a b, b c, a b] gives a, bc there),
// and a merge whose parts or result are not in the vocabulary is refused, as
// tokenizers refuses it.
TEST(ByteLevelBpeEncoderTest, MergesAsTokenizersReadsThem) {
  nlohmann::json j = {
      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"<s>", 5}, {"</s>", 6}}},
                 {"merges", Merges({{"a", "b"}, {"b", "c"}, {"a", "b"}})}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"post_processor", {{"type", "RobertaProcessing"}, {"cls", {"<s>", 5}}, {"sep", {"</s>", 6}}}},
  };
  auto tok = EncoderTokenizerFromJson(j, "t");
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto enc = (*tok)->Encode("abc", /*add_special_tokens=*/false);
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_THAT(enc->ids, ElementsAreArray({0, 4}));
  j["model"]["merges"] = Merges({{"a", "b"}, {"c", "a"}});
  auto refused = EncoderTokenizerFromJson(j, "dir/tokenizer.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("model.merges[1] \"c a\" names a token that is not in model.vocab"));
}

}  // namespace
}  // namespace attnserve
