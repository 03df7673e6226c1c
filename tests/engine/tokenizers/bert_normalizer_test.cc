#include "engine/tokenizers/bert_normalizer.h"

#include <string>
#include <vector>

#include "engine/tokenizers/unicode_util.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

std::string Normalize(const std::string& text, const BertNormalizerOptions& options = {}) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offs;
  EXPECT_TRUE(DecodeUtf8(text, &cps, &offs).ok());
  std::vector<NormalizedChar> out;
  BertNormalize(options, cps, offs, &out);
  std::u32string s;
  for (const NormalizedChar& c : out) s.push_back(c.c);
  return ToUtf8(s);
}

// Expected strings are what tokenizers' BertNormalizer().normalize_str gives.
TEST(BertNormalizerTest, MatchesHuggingFaceBertNormalizer) {
  EXPECT_EQ(Normalize("Héllo WORLD"), "hello world");
  EXPECT_EQ(Normalize("a\tb\nc\r\nd"), "a b c  d");
  EXPECT_EQ(Normalize("x\u200by\u00adz\x01"), "xyz");
  EXPECT_EQ(Normalize("我爱NLP"), " 我  爱 nlp");
  EXPECT_EQ(Normalize("\u0130stanbul"), "istanbul");
  EXPECT_EQ(Normalize("\u2260"), "=");
  BertNormalizerOptions keep_case;
  keep_case.lowercase = false;
  EXPECT_EQ(Normalize("Héllo", keep_case), "Héllo");
  keep_case.strip_accents = true;
  EXPECT_EQ(Normalize("Héllo", keep_case), "Hello");
}

TEST(BertNormalizerTest, OffsetsPointAtSourceCharacters) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offs;
  ASSERT_TRUE(DecodeUtf8("aé", &cps, &offs).ok());
  std::vector<NormalizedChar> out;
  BertNormalize({}, cps, offs, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].c, U'e');
  EXPECT_EQ(out[1].begin, 1u);
  EXPECT_EQ(out[1].end, 3u);
}

}  // namespace
}  // namespace attnserve
