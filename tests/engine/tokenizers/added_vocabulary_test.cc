// Added tokens matched after normalization (normalized: true: what
// add_tokens makes for a fine-tuned model's new words, and what older RoBERTa
// files give <s> </s>), for each encoder tokenizer, against Hugging Face
// tokenizers (tools/golden/added_tokens_golden.py): ids and byte offsets.
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("added_tokens_golden.json"); }

class NormalizedAddedTokensTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NormalizedAddedTokensTest, MatchedInTheNormalizedTextAsTokenizersDoes) {
  ASSERT_FALSE(Golden().is_null());
  const nlohmann::json& fixture = Golden()[GetParam()];
  auto tok = EncoderTokenizerFromJson(fixture["tokenizer"], GetParam() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  int added_seen = 0;
  for (const nlohmann::json& c : fixture["cases"]) {
    const std::string text = c["text"].get<std::string>();
    auto enc = (*tok)->Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(enc.ok()) << enc.status();
    EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << text;
    std::vector<std::pair<uint32_t, uint32_t>> offsets;
    for (const nlohmann::json& o : c["offsets"]) offsets.emplace_back(o[0].get<uint32_t>(), o[1].get<uint32_t>());
    EXPECT_THAT(enc->offsets, ElementsAreArray(offsets)) << text;
    for (const nlohmann::json& a : fixture["tokenizer"]["added_tokens"]) {
      if (!a["normalized"].get<bool>()) continue;
      for (int32_t id : enc->ids) added_seen += id == a["id"].get<int32_t>();
    }
  }
  EXPECT_GE(added_seen, 4);  // the cases do reach the second pass
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, NormalizedAddedTokensTest, ::testing::Values("wordpiece", "unigram", "bpe"));

TEST(AddedVocabularyTest, SingleWordIsRefusedNamingTheToken) {
  ASSERT_FALSE(Golden().is_null());
  nlohmann::json j = Golden()["bpe"]["tokenizer"];
  j["added_tokens"].back()["single_word"] = true;
  auto tok = EncoderTokenizerFromJson(j, "dir/tokenizer.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(tok.status().message(), HasSubstr("dir/tokenizer.json: added token \"<ent>\" has single_word"));
}

}  // namespace
}  // namespace attnserve
