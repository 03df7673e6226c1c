// Prompt logprobs (GenerationParams::prompt_logprobs) against Hugging Face
// transformers' logits at every prompt position (fixtures from
// tools/golden/decoder_logits.py), for the tiny Llama, Qwen2 and GPT-2.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/runtime/decoder_engine.h"
#include "gtest/gtest.h"
#include "tests/engine/models/decoder_test_util.h"

namespace attnserve {
namespace {

constexpr float kTol = 1e-4f;  // the forward's logits against HF (decoder_hf_test.cc)

class PromptLogprobsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto model = DecoderModel::Load(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/" + GetParam(),
                                    DecoderLoadOptions());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    ref_ = testing_util::ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/" + GetParam() + ".json");
    ASSERT_FALSE(ref_.is_discarded());
  }

  std::shared_ptr<const DecoderModel> model_;
  nlohmann::json ref_;
};

// Prompt logprobs (GenerationParams::prompt_logprobs) against HF: prompt
// token p is scored by log_softmax of HF's logits at position p - 1, its
// rank is 1 + the tokens HF scores higher there, and its alternatives
// (prompt_top_logprobs of them, not the generated tokens' top_logprobs)
// are HF's best tokens there. The prompt runs in chunks of 7
// next to nothing else, so rows of several steps are stitched together.
TEST_P(PromptLogprobsTest, EqualHfLogSoftmaxOfThePreviousPosition) {
  const auto prompt = ref_["prompts"].back().get<std::vector<int32_t>>();
  const auto hf = ref_["all_logits_last_prompt"].get<std::vector<std::vector<float>>>();
  KvCacheOptions kv;
  kv.kv_cache_bytes = model_->description().kv_bytes_per_token * 256;
  auto engine = DecoderEngine::Create(model_, kv);
  ASSERT_TRUE(engine.ok()) << engine.status();
  GenerationParams params;
  params.temperature = 0.0f;
  params.max_new_tokens = 2;
  params.logprobs = true;
  params.top_logprobs = 3;
  params.prompt_logprobs = true;
  params.prompt_top_logprobs = 5;
  std::vector<StepEvent> events;
  absl::Status s = GenerateOne(**engine, prompt, params, [&](const StepEvent& e) {
    events.push_back(e);
    return true;
  }, /*prefill_chunk=*/7);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_FALSE(events.empty());
  const StepEvent& first = events[0];
  ASSERT_EQ(first.token_ids.size(), 1u);
  EXPECT_EQ(first.prompt_ids, prompt);
  ASSERT_EQ(first.prompt_token_text.size(), prompt.size());
  ASSERT_EQ(first.prompt_logprobs.size(), prompt.size() - 1);
  for (size_t i = 1; i < events.size(); ++i) EXPECT_TRUE(events[i].prompt_logprobs.empty());
  for (size_t p = 1; p < prompt.size(); ++p) {
    const std::vector<float>& row = hf[p - 1];
    double lse = 0.0;
    const float top = *std::max_element(row.begin(), row.end());
    for (float x : row) lse += std::exp(static_cast<double>(x) - top);
    lse = std::log(lse) + top;
    const SampledToken& got = first.prompt_logprobs[p - 1];
    EXPECT_EQ(got.id, prompt[p]);
    EXPECT_NEAR(got.logprob, row[prompt[p]] - lse, 3e-4) << "position " << p;
    // The rank, where rounding within the logits' tolerance could move it:
    // between the tokens surely above and those perhaps above.
    const float own = row[prompt[p]];
    const auto above = [&](float margin) {
      return 1 + std::count_if(row.begin(), row.end(), [&](float x) { return x > own + margin; });
    };
    EXPECT_GE(got.rank, above(4 * kTol)) << "position " << p;
    EXPECT_LE(got.rank, above(-4 * kTol)) << "position " << p;
    // HF's three best (lower id first on a tie), compared where their gaps
    // exceed the logits tolerance so rounding cannot reorder them.
    std::vector<int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 4, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    ASSERT_EQ(got.top.size(), 5u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(got.top[k].logprob, row[got.top[k].id] - lse, 3e-4);
      const bool separated = (k == 0 || row[order[k - 1]] - row[order[k]] > 4 * kTol) &&
                             row[order[k]] - row[order[k + 1]] > 4 * kTol;
      if (separated) {
        EXPECT_EQ(got.top[k].id, order[k]) << "position " << p << " rank " << k;
      }
    }
  }
  for (const StepEvent& e : events) {
    for (const SampledToken& t : e.logprobs) {
      EXPECT_EQ(t.top.size(), 3u);  // the generated tokens' own count
      EXPECT_EQ(t.rank, 0);
    }
  }
  // The first generated token is still HF's greedy one.
  EXPECT_EQ(first.token_ids[0], ref_["greedy"].back()[0].get<int32_t>());
}

INSTANTIATE_TEST_SUITE_P(TinyModels, PromptLogprobsTest,
                         ::testing::Values("llama_tiny", "qwen2_tiny", "gpt2_tiny"));

}  // namespace
}  // namespace attnserve
