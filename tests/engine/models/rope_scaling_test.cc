// Rope scaling kinds yarn and dynamic NTK against Hugging Face transformers
// (fixtures from tools/golden/decoder_logits.py on the tiny random Llamas of
// tools/golden/decoder_make_models.py): prompts of 20, 48 and 100 tokens,
// past the 32 original positions, so the scaling changes the results (the
// SensitiveToScaling test checks that the fixtures would catch its absence).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/formats/decoder_loader.h"
#include "engine/models/decoder_model.h"
#include "engine/models/rope.h"
#include "gtest/gtest.h"
#include "tests/engine/models/decoder_test_util.h"

namespace attnserve {
namespace {

using testing_util::GreedyOverModel;
using testing_util::ReadJson;

constexpr float kTol = 1e-4f;
constexpr int kContext = 256;  // the dynamic model declares 32 positions

std::string ModelDir(const std::string& name) {
  return ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/" + name;
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Last-position logits of `prompt` fed in chunks of `chunk` tokens; with
// `every_step` the logits after each chunk are appended to `steps`.
std::vector<float> RunPrompt(const DecoderModel& model, const std::vector<int32_t>& prompt, int chunk,
                             std::vector<std::vector<float>>* steps = nullptr) {
  KvCacheOptions opt;
  opt.block_size = 16;
  opt.kv_cache_bytes = model.description().kv_bytes_per_token * (prompt.size() + 32);
  auto kv = *KvCache::Create(model.kv_shape(), opt);
  EXPECT_TRUE(kv->AddSequence(1).ok());
  DecoderScratch scratch;
  std::vector<float> logits;
  ForwardBatch batch;
  for (size_t pos = 0; pos < prompt.size(); pos += chunk) {
    const int len = std::min<int>(chunk, static_cast<int>(prompt.size() - pos));
    batch.Clear();
    batch.Add(1, prompt.data() + pos, len, static_cast<int>(pos));
    EXPECT_TRUE(kv->Reserve({1}, {static_cast<int>(pos) + len}).ok());
    absl::Status s = model.Forward(batch, *kv, scratch, logits);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(kv->Commit(1, absl::MakeConstSpan(prompt.data() + pos, len), true).ok());
    if (steps != nullptr) steps->push_back(logits);
  }
  return logits;
}

class RopeScalingTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    DecoderLoadOptions options;
    options.context_length = kContext;
    auto model = DecoderModel::Load(ModelDir(GetParam()), options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    ref_ = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/" + GetParam() + ".json");
    ASSERT_FALSE(ref_.is_discarded());
    ASSERT_EQ(ref_["vocab_size"].get<int>(), model_->config().vocab_size);
    prompts_ = ref_["prompts"].get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(prompts_.size(), 3u);
  }

  std::shared_ptr<const DecoderModel> model_;
  nlohmann::json ref_;
  std::vector<std::vector<int32_t>> prompts_;
};

TEST_P(RopeScalingTest, WholePromptLogitsWithin1e4) {
  const auto want = ref_["logits"].get<std::vector<std::vector<float>>>();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    EXPECT_LE(MaxAbsDiff(RunPrompt(*model_, prompts_[p], 1 << 20), want[p]), kTol)
        << "prompt " << p << " (" << prompts_[p].size() << " tokens)";
  }
}

TEST_P(RopeScalingTest, TokenByTokenLogitsEqualHfCachedDecode) {
  // HF fed the last prompt one token at a time through its cache: for
  // dynamic NTK each step uses the base for its own length (rope.h).
  const auto want = ref_["decode_logits_last_prompt"].get<std::vector<std::vector<float>>>();
  std::vector<std::vector<float>> steps;
  RunPrompt(*model_, prompts_.back(), 1, &steps);
  ASSERT_EQ(steps.size(), want.size());
  for (size_t t = 0; t < steps.size(); ++t) ASSERT_LE(MaxAbsDiff(steps[t], want[t]), kTol) << "position " << t;
}

TEST_P(RopeScalingTest, Greedy64TokensIdentical) {
  const auto want = ref_["greedy"].get<std::vector<std::vector<int32_t>>>();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    auto got = GreedyOverModel(*model_, prompts_[p], 64);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want[p]) << "prompt " << p;
  }
}

TEST_P(RopeScalingTest, SensitiveToScaling) {
  // The same weights without rope scaling must miss the reference by far
  // more than the tolerance on the longest prompt (else the fixture would
  // not catch a broken scaling).
  auto loaded = LoadDecoder(ModelDir(GetParam()), DType::kF32);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_NE(loaded->config.rope_scaling.kind, RopeScalingKind::kNone);
  loaded->config.rope_scaling = RopeScaling();
  DecoderLoadOptions options;
  options.context_length = kContext;
  auto plain = DecoderModel::FromLoaded(*std::move(loaded), options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const auto want = ref_["logits"].get<std::vector<std::vector<float>>>();
  EXPECT_GT(MaxAbsDiff(RunPrompt(**plain, prompts_.back(), 1 << 20), want.back()), 100 * kTol);
}

INSTANTIATE_TEST_SUITE_P(TinyLlamas, RopeScalingTest,
                         ::testing::Values("llama_yarn_tiny", "llama_dynamic_tiny"));

TEST(RopeScalingTest, YarnChunkedPrefillEqualsWholePrompt) {
  // Yarn's frequencies do not depend on the length: chunks change nothing.
  DecoderLoadOptions options;
  options.context_length = kContext;
  auto model = DecoderModel::Load(ModelDir("llama_yarn_tiny"), options);
  ASSERT_TRUE(model.ok()) << model.status();
  nlohmann::json ref = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/llama_yarn_tiny.json");
  const auto prompt = ref["prompts"].back().get<std::vector<int32_t>>();
  EXPECT_LE(MaxAbsDiff(RunPrompt(**model, prompt, 7), ref["logits"].back().get<std::vector<float>>()), kTol);
  EXPECT_FLOAT_EQ(model.value()->config().rope_scaling.attn_factor,
                  static_cast<float>(0.1 * std::log(4.0) + 1.0));
}

TEST(RopeScalingTest, DynamicBaseFollowsEachSequenceInABatch) {
  // Two sequences in one step: one short (plain rope), one past 32 positions
  // (scaled base). Each gets its own frequencies, as when run alone.
  DecoderConfig c;
  c.architecture = "llama";
  c.hidden_size = 16;
  c.intermediate_size = 16;
  c.num_layers = 1;
  c.num_heads = c.num_kv_heads = 1;
  c.head_dim = c.rope_dim = 16;
  c.vocab_size = 10;
  c.max_positions = c.trained_max_positions = 32;
  c.rope_scaling.kind = RopeScalingKind::kDynamicNtk;
  c.rope_scaling.factor = 2.0f;
  ASSERT_TRUE(c.Validate().ok());
  auto rope = Rope::Create(c);
  ASSERT_TRUE(rope.ok()) << rope.status();
  ForwardBatch batch;
  batch.Clear();
  const int32_t ids[3] = {1, 2, 3};
  batch.Add(1, ids, 3, 5);   // positions 5..7
  batch.Add(2, ids, 3, 40);  // positions 40..42: seq_len 43
  std::vector<float> got(6 * 16), want(16);
  rope->BatchAngles(batch, got.data());
  rope->Angles(6, want.data());
  EXPECT_EQ(std::vector<float>(got.begin() + 16, got.begin() + 32), want);
  rope->Angles(41, want.data(), 43);
  EXPECT_EQ(std::vector<float>(got.begin() + 4 * 16, got.begin() + 5 * 16), want);
  std::vector<float> plain41(16);
  rope->Angles(41, plain41.data(), 42);
  EXPECT_NE(plain41, want);  // a different length, a different base
}

}  // namespace
}  // namespace attnserve
