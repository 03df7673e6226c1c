// Added tokens matched after normalization (normalized: true: what
// add_tokens makes for a fine-tuned model's new words, and what older RoBERTa
// files give <s> </s>), for each encoder tokenizer, against Hugging Face
// tokenizers (tools/golden/added_tokens_golden.py): ids and byte offsets.
#include <string>
#include <vector>

#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("added_tokens_golden.json"); }

class NormalizedAddedTokensTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NormalizedAddedTokensTest, MatchedInTheNormalizedTextAsTokenizersDoes) {
  ASSERT_FALSE(Golden().is_null());
  const nlohmann::json& fixture = Golden()[GetParam()];
  auto tok = EncoderTokenizerFromJson(fixture["tokenizer"], GetParam() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  testing_util::ExpectGoldenEncodings(**tok, fixture["cases"]);
  int added_seen = 0;  // the cases do reach the second pass
  for (const nlohmann::json& c : fixture["cases"]) {
    for (const nlohmann::json& a : fixture["tokenizer"]["added_tokens"]) {
      if (!a["normalized"].get<bool>()) continue;
      for (const nlohmann::json& id : c["ids"]) added_seen += id.get<int32_t>() == a["id"].get<int32_t>();
    }
  }
  EXPECT_GE(added_seen, 4);
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
