// Phi-3's longrope past its original context (fixtures from
// tools/golden/decoder_logits.py: phi3_longrope_tiny, 256 original of 1024
// positions, 12 of 16 head dims rotated). Served with a context above 256 the
// model rotates with the long factors, as llama.cpp does for such a context
// and as transformers does for any sequence longer than 256: prompts of 260
// and 300 tokens, whole, token by token and greedy, equal transformers'
// "long" reference, from the directory and from the GGUF file. The default
// context is the original one (short factors: decoder_hf_test.cc).
#include <string>
#include <vector>

#include "engine/models/decoder_model.h"
#include "gtest/gtest.h"
#include "tests/engine/models/decoder_test_util.h"

namespace attnserve {
namespace {

using testing_util::GreedyOverModel;
using testing_util::LastLogits;
using testing_util::MaxAbsDiff;
using testing_util::ReadJson;

constexpr float kTol = 1e-4f;
const std::string kDir = ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/phi3_longrope_tiny";

std::shared_ptr<const DecoderModel> LoadWithContext(const std::string& path, int context) {
  DecoderLoadOptions options;
  options.context_length = context;
  auto model = DecoderModel::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

class Phi3LongRopeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ref_ = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/phi3_longrope_tiny.json");
    ASSERT_FALSE(ref_.is_discarded());
    path_ = GetParam().empty() ? kDir : kDir + "/" + GetParam();
  }
  nlohmann::json ref_;
  std::string path_;
};

TEST_P(Phi3LongRopeTest, DefaultContextIsTheOriginalOneWithShortFactors) {
  auto model = LoadWithContext(path_, 0);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->description().max_positions, 256);
  EXPECT_FALSE(model->config().rope_scaling.use_long);
  EXPECT_TRUE(LoadWithContext(path_, 256) != nullptr && !LoadWithContext(path_, 256)->config().rope_scaling.use_long);
}

TEST_P(Phi3LongRopeTest, LongContextEqualsTransformersPastTheOriginalPositions) {
  auto model = LoadWithContext(path_, 1024);
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->config().rope_scaling.use_long);
  EXPECT_EQ(model->description().max_positions, 1024);
  const nlohmann::json& ref = ref_["long"];
  const auto prompts = ref["prompts"].get<std::vector<std::vector<int32_t>>>();
  const auto logits = ref["logits"].get<std::vector<std::vector<float>>>();
  const auto greedy = ref["greedy"].get<std::vector<std::vector<int32_t>>>();
  ASSERT_EQ(prompts.size(), 2u);
  for (size_t p = 0; p < prompts.size(); ++p) {
    EXPECT_LE(MaxAbsDiff(LastLogits(*model, prompts[p]), logits[p]), kTol) << prompts[p].size() << " tokens";
    auto got = GreedyOverModel(*model, prompts[p], static_cast<int>(greedy[p].size()), /*chunk=*/37);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, greedy[p]) << prompts[p].size() << " tokens";
  }
  // Token by token through the cache: every position of the 300-token prompt
  // with the long factors, as transformers' one forward of the whole prompt.
  auto rows = testing_util::TokenByTokenLogits(*model, prompts.back(), /*block_size=*/16);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(ref["rows_last_prompt"].size(), 6u);
  for (const auto& [position, want] : ref["rows_last_prompt"].items()) {
    EXPECT_LE(MaxAbsDiff((*rows)[std::stoi(position)], want.get<std::vector<float>>()), kTol) << "position " << position;
  }
}

TEST_P(Phi3LongRopeTest, TheFactorListsGiveDifferentLogits) {
  // The references above tell the two lists apart: a 40-token prompt run
  // with the long factors is far from transformers' short-factor logits.
  auto model = LoadWithContext(path_, 1024);
  ASSERT_NE(model, nullptr);
  const auto prompt = ref_["prompts"][3].get<std::vector<int32_t>>();
  EXPECT_GT(MaxAbsDiff(LastLogits(*model, prompt), ref_["logits"][3].get<std::vector<float>>()), 0.05f);
}

INSTANTIATE_TEST_SUITE_P(Files, Phi3LongRopeTest, ::testing::Values(std::string(), std::string("model.gguf")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("hf") : std::string("gguf");
                         });

}  // namespace
}  // namespace attnserve
