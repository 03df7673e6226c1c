// CamemBERT encoders (RoBERTa's model over a SentencePiece Unigram vocabulary
// in fairseq's CamemBERT layout: <s> and </s> at ids 5 and 6, "NOTUSED"
// specials before them) against tokenizers, transformers and
// sentence-transformers (tools/golden/camembert_golden.py): ids, byte offsets,
// decoding and pairs for the checkpoints' tokenizer.json layout
// (CamembertConverter: Precompiled + Replace normalizer, Metaspace) and
// transformers 5's (WhitespaceSplit + Metaspace), and mean-pooled embeddings
// of CamembertModel up to the 64-token limit.
#include <string>
#include <vector>

#include "engine/models/encoder_model.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("camembert_golden.json"); }

std::string ModelDir() { return testing_util::GoldenEncoderModelDir("camembert_tiny"); }

absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LayoutTokenizer(const std::string& layout) {
  if (layout == "hub") return LoadEncoderTokenizer(ModelDir() + "/tokenizer.json");
  return EncoderTokenizerFromJson(Golden()["v5_tokenizer_json"], "camembert_v5/tokenizer.json");
}

class CamembertTokenizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CamembertTokenizerTest, IdsOffsetsAndDecodingEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LayoutTokenizer(GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->kind(), "unigram");
  ASSERT_GE(Golden()["tokenizer"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"][GetParam()]);
}

TEST_P(CamembertTokenizerTest, PairsAndTruncationEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LayoutTokenizer(GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_GE(testing_util::ExpectGoldenPairs(**tok, Golden()["pairs"][GetParam()]), 3);  // the long pairs were cut
}

INSTANTIATE_TEST_SUITE_P(Layouts, CamembertTokenizerTest, ::testing::Values("hub", "v5"));

TEST(CamembertEncoderTest, LoadsAsCamembert) {
  auto model = EncoderModel::Load(ModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "camembert");
  EXPECT_EQ((*model)->max_tokens(), 64);  // 66 positions less the padding offset
}

// Every text in one batch, then each alone.
TEST(CamembertEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 6u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

}  // namespace
}  // namespace attnserve
