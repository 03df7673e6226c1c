// XLM-RoBERTa encoders (the multilingual-e5 / bge-m3 / bge-reranker family)
// against transformers and sentence-transformers
// (tools/golden/xlmr_golden.py): mean-pooled embeddings of XLMRobertaModel,
// RoBERTa's position ids (counted after the padding id, a <pad> written in
// the text keeping the padding position), the 64-token limit of a 66-row
// position table, and XLMRobertaForSequenceClassification's logits.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("xlmr_golden.json"); }

EncoderInput TextInput(const std::string& text) {
  EncoderInput in;
  in.text = text;
  return in;
}

TEST(XlmrEncoderTest, LoadsTheConfigAsRoberta) {
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "xlm-roberta");
  EXPECT_EQ((*model)->max_tokens(), 64);  // 66 positions - padding id 1 - 1
  EXPECT_EQ((*model)->description().max_positions, 64);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->description().labels.empty());
}

// Every text in one batch, then each alone.
TEST(XlmrEncoderTest, EmbeddingsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"].size(), 12u);
  // The 120-word text is cut to 64 tokens.
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"], 1e-4), 1);
}

TEST(XlmrEncoderTest, PadTokenInTheTextKeepsThePaddingPosition) {
  // The golden text with "<pad>" in it: its embedding (checked above) needs
  // the pad's position to be the padding id and the count to skip it; a
  // model that numbered it like any token differs.
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json* pad_case = nullptr;
  for (const nlohmann::json& c : Golden()["embeddings"]) {
    if (c["text"].get<std::string>().find("<pad>") != std::string::npos) pad_case = &c;
  }
  ASSERT_NE(pad_case, nullptr);
  const std::vector<int32_t> ids = (*pad_case)["ids"].get<std::vector<int32_t>>();
  ASSERT_THAT(ids, ::testing::Contains(1));
  EncoderInput in;
  in.is_text = false;
  in.token_ids = ids;
  auto r = (*model)->Encode({&in, 1}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<float> want = (*pad_case)["embedding"].get<std::vector<float>>();
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*r)[0].embedding.f32()[k], want[k], 1e-4);
}

TEST(XlmrEncoderTest, OverLongInputNamesTheLimit) {
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  std::string words;
  for (int i = 0; i < 80; ++i) words += "the quick brown fox ";
  EncoderInput in = TextInput(words);
  EncodeOptions strict;
  strict.truncate = false;
  auto r = (*model)->Encode({&in, 1}, strict);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("the model's limit is 64"));
}

TEST(XlmrEncoderTest, LeftTruncationKeepsTheLastTokens) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json& c = Golden()["left_truncation"];
  EncoderInput in = TextInput(c["text"].get<std::string>());
  EncodeOptions left;
  left.truncation_side = TruncationSide::kStart;
  auto r = (*model)->Encode({&in, 1}, left);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].truncated);
  EXPECT_THAT((*r)[0].token_ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>()));
  const std::vector<float> want = c["embedding"].get<std::vector<float>>();
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*r)[0].embedding.f32()[k], want[k], 1e-4);
  // Token ids given over-long are cut the same way: the last ones kept.
  EncoderInput ids;
  ids.is_text = false;
  for (int i = 0; i < 70; ++i) ids.token_ids.push_back(5 + i);
  auto cut = (*model)->Encode({&ids, 1}, left);
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_EQ((*cut)[0].token_ids.size(), 64u);
  EXPECT_EQ((*cut)[0].token_ids.front(), 11);
  EXPECT_EQ((*cut)[0].token_ids.back(), 74);
}

TEST(XlmrEncoderTest, DimensionsKeepTheLeadingValuesThenNormalise) {
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in = TextInput("Der schnelle braune Fuchs");
  auto full = (*model)->Encode({&in, 1}, {});
  ASSERT_TRUE(full.ok()) << full.status();
  EncodeOptions short_raw;
  short_raw.dimensions = 8;
  short_raw.normalize = false;
  auto raw = (*model)->Encode({&in, 1}, short_raw);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ((*raw)[0].embedding.numel(), 8);
  double norm = 0;
  for (int k = 0; k < 8; ++k) {
    EXPECT_FLOAT_EQ((*raw)[0].embedding.f32()[k], (*full)[0].embedding.f32()[k]);
    norm += double{(*full)[0].embedding.f32()[k]} * (*full)[0].embedding.f32()[k];
  }
  EncodeOptions short_unit = short_raw;
  short_unit.normalize = true;
  auto unit = (*model)->Encode({&in, 1}, short_unit);
  ASSERT_TRUE(unit.ok()) << unit.status();
  for (int k = 0; k < 8; ++k) {
    EXPECT_NEAR((*unit)[0].embedding.f32()[k], (*full)[0].embedding.f32()[k] / std::sqrt(norm), 1e-6);
  }
  for (int bad : {-1, 33}) {
    EncodeOptions o;
    o.dimensions = bad;
    auto r = (*model)->Encode({&in, 1}, o);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("is outside [1, 32]"));
  }
  EncodeOptions per_token;
  per_token.dimensions = 8;
  per_token.pooling = PoolingMode::kNone;
  EXPECT_THAT((*model)->Encode({&in, 1}, per_token).status().message(), HasSubstr("not with pooling none"));
}

TEST(XlmrEncoderTest, PromptsEqualSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("xlmr_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->prompts().size(), 2u);
  EXPECT_EQ((*model)->default_prompt_name(), "");
  ASSERT_GE(Golden()["prompted"].size(), 2u);
  for (const nlohmann::json& c : Golden()["prompted"]) {
    EncoderInput in = TextInput(c["text"].get<std::string>());
    EncodeOptions o;
    o.prompt_name = c["prompt_name"].get<std::string>();
    auto r = (*model)->Encode({&in, 1}, o);
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*r)[0].embedding.f32()[k], want[k], 1e-4) << k;
    // The same as writing the prompt into the text.
    EncoderInput written = TextInput(c["prompt"].get<std::string>() + c["text"].get<std::string>());
    auto same = (*model)->Encode({&written, 1}, {});
    ASSERT_TRUE(same.ok());
    EXPECT_EQ((*same)[0].token_ids, (*r)[0].token_ids);
  }
  EncoderInput in = TextInput("x");
  EncodeOptions unknown;
  unknown.prompt_name = "instruct";
  EXPECT_THAT((*model)->Encode({&in, 1}, unknown).status().message(),
              HasSubstr("prompt_name \"instruct\" is not one of the model's prompts (passage, query)"));
  EncoderInput ids;
  ids.is_text = false;
  ids.token_ids = {0, 5, 2};
  EncodeOptions query;
  query.prompt_name = "query";
  EXPECT_THAT((*model)->Encode({&ids, 1}, query).status().message(), HasSubstr("not token ids"));
}

TEST(XlmrEncoderTest, DefaultPromptAppliesToSingleTextsOnly) {
  // A copy of the model whose configuration names a default prompt.
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "xlmr_default_prompt";
  fs::remove_all(dir);
  fs::copy(ModelDir("xlmr_tiny"), dir, fs::copy_options::recursive);
  {
    std::ofstream f(dir / "config_sentence_transformers.json", std::ios::trunc);
    f << R"({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": "query"})";
  }
  auto model = EncoderModel::Load(dir.string(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->default_prompt_name(), "query");
  EncoderInput text = TextInput("hello");
  EncoderInput ids;
  ids.is_text = false;
  ids.token_ids = {0, 5, 2};
  auto r = (*model)->Encode(std::vector<EncoderInput>{text, ids}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EncoderInput written = TextInput("query: hello");
  EncodeOptions none;
  none.prompt_name = "";
  auto want = (*model)->Encode({&written, 1}, none);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ((*r)[0].token_ids, (*want)[0].token_ids);
  EXPECT_THAT((*r)[1].token_ids, ElementsAreArray({0, 5, 2}));  // token ids are used as given
  auto bare = (*model)->Encode({&text, 1}, none);
  ASSERT_TRUE(bare.ok());
  EXPECT_LT((*bare)[0].token_ids.size(), (*want)[0].token_ids.size());
  {
    std::ofstream f(dir / "config_sentence_transformers.json", std::ios::trunc);
    f << R"({"prompts": {"query": "query: "}, "default_prompt_name": "passage"})";
  }
  auto bad = EncoderModel::Load(dir.string(), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("config_sentence_transformers.json: default_prompt_name \"passage\""));
  fs::remove_all(dir);
}

TEST(XlmrRerankerTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("xlmr_reranker_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().labels, std::vector<std::string>{"LABEL_0"});
  const std::vector<EncoderInput> inputs = testing_util::GoldenInputs(Golden()["logits"]);
  ASSERT_GE(inputs.size(), 8u);
  testing_util::ExpectGoldenLogits(**model, Golden()["logits"], 1e-4);
  EncoderLoadOptions bf16;
  bf16.weight_dtype = DType::kBF16;
  auto rounded = EncoderModel::Load(ModelDir("xlmr_reranker_tiny"), bf16);
  ASSERT_TRUE(rounded.ok()) << rounded.status();
  auto approx = (*rounded)->Encode(inputs, {});
  ASSERT_TRUE(approx.ok()) << approx.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_NEAR((*approx)[i].logits[0], Golden()["logits"][i]["logits"][0].get<float>(), 0.1);
  }
}

}  // namespace
}  // namespace attnserve
