// BERT cross-encoders (BertForSequenceClassification: a reranker with one
// label, a three-label NLI classifier) against transformers and Hugging Face
// tokenizers (tools/golden/cross_encoder_golden.py): text pairs with their
// segments, longest-first truncation, and the pooler + classifier logits.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/formats/hf_config.h"
#include "engine/formats/json_util.h"
#include "engine/models/bert_config.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("cross_encoder_golden.json"); }

EncoderInput InputOf(const nlohmann::json& c) {
  EncoderInput in;
  in.text = c["text"].get<std::string>();
  if (!c["text_pair"].is_null()) in.text_pair = c["text_pair"].get<std::string>();
  return in;
}

class CrossEncoderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CrossEncoderTest, TokenizesPairsAsHuggingFace) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json& cases = Golden()["models"][GetParam()]["cases"];
  int pairs = 0, truncated = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& c = cases[i];
    const int max_length = c["max_length"].get<int>();
    absl::StatusOr<TextEncoding> enc =
        c["text_pair"].is_null()
            ? (*model)->tokenizer().Encode(c["text"].get<std::string>(), true, max_length)
            : (*model)->tokenizer().EncodePair(c["text"].get<std::string>(), c["text_pair"].get<std::string>(),
                                               max_length);
    ASSERT_TRUE(enc.ok()) << enc.status();
    EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << "case " << i;
    if (c["text_pair"].is_null()) continue;
    ++pairs;
    if (enc->truncated) ++truncated;
    EXPECT_THAT(enc->type_ids, ElementsAreArray(c["type_ids"].get<std::vector<int32_t>>())) << "case " << i;
  }
  EXPECT_GE(pairs, 10);
  EXPECT_GE(truncated, 6);  // both texts cut, either one, ties, odd budgets
}

// Every case in one batch (singles and pairs mixed, so the packed segments
// of a pair sit beside a single text's zeros), then each alone.
TEST_P(CrossEncoderTest, LogitsMatchTransformers) {
  auto model = EncoderModel::Load(ModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json& m = Golden()["models"][GetParam()];
  EXPECT_EQ((*model)->description().labels, m["labels"].get<std::vector<std::string>>());
  std::vector<EncoderInput> inputs;
  std::vector<const nlohmann::json*> expected;
  for (const nlohmann::json& c : m["cases"]) {
    if (c["max_length"].get<int>() != (*model)->max_tokens()) continue;  // the short budgets are tokenizer cases
    inputs.push_back(InputOf(c));
    expected.push_back(&c);
  }
  ASSERT_GE(inputs.size(), 15u);
  auto batch = (*model)->Encode(inputs, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> want = (*expected[i])["logits"].get<std::vector<float>>();
    EXPECT_THAT((*batch)[i].token_ids, ElementsAreArray((*expected[i])["ids"].get<std::vector<int32_t>>()));
    ASSERT_EQ((*batch)[i].logits.size(), want.size()) << "input " << i;
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*batch)[i].logits[k], want[k], 1e-4) << "input " << i;
    auto alone = (*model)->Encode({&inputs[i], 1}, {});
    ASSERT_TRUE(alone.ok()) << alone.status();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*alone)[0].logits[k], want[k], 1e-4) << "input " << i;
  }
}

TEST_P(CrossEncoderTest, Bf16WeightsStayClose) {
  EncoderLoadOptions options;
  options.weight_dtype = DType::kBF16;
  auto model = EncoderModel::Load(ModelDir(GetParam()), options);
  ASSERT_TRUE(model.ok()) << model.status();
  for (const nlohmann::json& c : Golden()["models"][GetParam()]["cases"]) {
    if (c["max_length"].get<int>() != (*model)->max_tokens()) continue;
    EncoderInput in = InputOf(c);
    auto r = (*model)->Encode({&in, 1}, {});
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<float> want = c["logits"].get<std::vector<float>>();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*r)[0].logits[k], want[k], 0.1) << c["text"];
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CrossEncoderTest, ::testing::Values("bert_reranker_tiny", "bert_nli_tiny"));

TEST(CrossEncoderInputTest, PairWithTokenIdsAndOverLongPairAreRefused) {
  auto model = EncoderModel::Load(ModelDir("bert_reranker_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput ids;
  ids.is_text = false;
  ids.token_ids = {2, 1002, 3};
  ids.text_pair = "a";
  auto r = (*model)->Encode({&ids, 1}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("input 0: a text pair needs a text"));

  EncoderInput long_pair;
  std::string words;
  for (int i = 0; i < 40; ++i) words += "the capital of france ";
  long_pair.text = "what is it?";
  long_pair.text_pair = words;
  EncodeOptions strict;
  strict.truncate = false;
  r = (*model)->Encode({&long_pair, 1}, strict);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("the model's limit is 64"));
  r = (*model)->Encode({&long_pair, 1}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].truncated);
  EXPECT_EQ((*r)[0].token_ids.size(), 64u);
}

// A plain encoder has no head: no logits, and its description no labels.
TEST(CrossEncoderInputTest, PlainEncoderHasNoLogits) {
  auto model = EncoderModel::Load(testing_util::MiniLmDir(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->description().labels.empty());
  EncoderInput in;
  in.text = "a";
  in.text_pair = "b";
  auto r = (*model)->Encode({&in, 1}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].logits.empty());
  EXPECT_EQ((*r)[0].embedding.dim(0), 384);
}

absl::StatusOr<BertConfig> ConfigWith(nlohmann::json extra) {
  nlohmann::json j = {{"model_type", "bert"},          {"hidden_size", 32},          {"num_hidden_layers", 1},
                      {"num_attention_heads", 4},      {"intermediate_size", 64},    {"vocab_size", 100},
                      {"max_position_embeddings", 16}, {"architectures", {"BertForSequenceClassification"}}};
  if (extra.is_object()) j.update(extra);
  auto config = HfConfig::FromJson(j, "dir/config.json");
  if (!config.ok()) return config.status();
  return ParseBertConfig(*config);
}

TEST(CrossEncoderConfigTest, LabelsComeFromId2LabelOrNumLabels) {
  auto c = ConfigWith({{"id2label", {{"1", "yes"}, {"0", "no"}}}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->labels, (std::vector<std::string>{"no", "yes"}));
  c = ConfigWith({{"num_labels", 3}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  c = ConfigWith({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->labels.size(), 2u);  // Hugging Face's default
  c = ConfigWith({{"architectures", {"BertModel"}}, {"id2label", {{"0", "x"}}}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->labels.empty());
}

TEST(CrossEncoderConfigTest, MalformedId2LabelIsRefusedNamingTheFile) {
  for (const nlohmann::json& id2label :
       {nlohmann::json{{"0", "a"}, {"2", "b"}}, nlohmann::json{{"x", "a"}}, nlohmann::json{{"0", 5}},
        nlohmann::json::array({"a"}), nlohmann::json::object()}) {
    auto c = ConfigWith({{"id2label", id2label}});
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << id2label;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: id2label")) << id2label;
  }
}

}  // namespace
}  // namespace attnserve
