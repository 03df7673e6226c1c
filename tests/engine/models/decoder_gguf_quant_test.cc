// GGUF F16 and Q8_0 end to end: llama_tiny converted by
// tools/golden/decoder_make_models.py (gguf.quants), loaded by our GGUF
// reader, against an independent reference (tools/golden/decoder_logits.py):
// the HF model with its weights replaced by the GGUF's values dequantised in
// Python by gguf.quants.dequantize. Same maths on the same numbers: logits
// within 1e-4 and identical greedy continuations. A second check keeps each
// file near the f32 original, so a dequantisation that is wrong in both the
// reference and the engine (or a fixture mix-up) is still caught.
#include <algorithm>
#include <cmath>
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

struct Case {
  std::string file;     // in tests/golden/decoder_models/llama_tiny
  std::string fixture;  // tests/golden/decoder_logits/<fixture>.json
  // How far the file's last logits may be from the f32 model's (|logits| up
  // to 3.9): the dequantised HF references are 4.8e-3 (F16) and 0.20 (Q8_0)
  // away; a wrong scale or block layout moves them by whole units.
  float vs_f32;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) { return info.param.fixture; }

class GgufQuantTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    auto model = DecoderModel::Load(
        ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/llama_tiny/" + GetParam().file, DecoderLoadOptions());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    ref_ = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/" + GetParam().fixture + ".json");
    f32_ = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/llama_tiny.json");
    ASSERT_FALSE(ref_.is_discarded());
    ASSERT_FALSE(f32_.is_discarded());
    ASSERT_EQ(ref_["prompts"], f32_["prompts"]);
    prompts_ = ref_["prompts"].get<std::vector<std::vector<int32_t>>>();
  }

  std::shared_ptr<const DecoderModel> model_;
  nlohmann::json ref_, f32_;
  std::vector<std::vector<int32_t>> prompts_;
};

TEST_P(GgufQuantTest, LogitsWithin1e4OfDequantisedHf) {
  const auto want = ref_["logits"].get<std::vector<std::vector<float>>>();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    EXPECT_LE(MaxAbsDiff(LastLogits(*model_, prompts_[p]), want[p]), kTol) << "prompt " << p;
  }
}

TEST_P(GgufQuantTest, Greedy64TokensIdenticalToDequantisedHf) {
  const auto want = ref_["greedy"].get<std::vector<std::vector<int32_t>>>();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    auto got = GreedyOverModel(*model_, prompts_[p], 64, /*chunk=*/7);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want[p]) << "prompt " << p;
  }
}

TEST_P(GgufQuantTest, StaysNearTheF32Model) {
  const auto f32 = f32_["logits"].get<std::vector<std::vector<float>>>();
  float worst = 0.0f;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    worst = std::max(worst, MaxAbsDiff(LastLogits(*model_, prompts_[p]), f32[p]));
  }
  EXPECT_LE(worst, GetParam().vs_f32);
  EXPECT_GT(worst, 0.0f);  // really the quantised weights, not the f32 file
}

INSTANTIATE_TEST_SUITE_P(LlamaTiny, GgufQuantTest,
                         ::testing::Values(Case{"model-f16.gguf", "llama_tiny_f16", 1.5e-2f},
                                           Case{"model-q8_0.gguf", "llama_tiny_q8_0", 0.4f}),
                         CaseName);

// A GGUF as llama-quantize writes one, every weight in a block type
// (tests/golden/decoder_models/llama_quant_mix: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS across its 16 matrices),
// against the HF model holding the same file's values as gguf-py
// dequantises them.
class GgufQuantMixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = DecoderModel::Load(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/llama_quant_mix/model.gguf",
                                    DecoderLoadOptions());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
    ref_ = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/llama_quant_mix.json");
    ASSERT_FALSE(ref_.is_discarded());
    prompts_ = ref_["prompts"].get<std::vector<std::vector<int32_t>>>();
  }

  std::shared_ptr<const DecoderModel> model_;
  nlohmann::json ref_;
  std::vector<std::vector<int32_t>> prompts_;
};

TEST_F(GgufQuantMixTest, LogitsMatchGgufPyDequantisedHf) {
  const auto want = ref_["logits"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(want.size(), prompts_.size());
  for (size_t p = 0; p < prompts_.size(); ++p) {
    EXPECT_LE(MaxAbsDiff(LastLogits(*model_, prompts_[p]), want[p]), 2e-4f) << "prompt " << p;
  }
}

TEST_F(GgufQuantMixTest, Greedy64TokensIdenticalToGgufPyDequantisedHf) {
  const auto want = ref_["greedy"].get<std::vector<std::vector<int32_t>>>();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    auto got = GreedyOverModel(*model_, prompts_[p], 64, /*chunk=*/5);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want[p]) << "prompt " << p;
  }
}

// --weight-dtype=q8_0: matrices held as Q8_0 blocks, quantised at load as
// llama.cpp quantises. llama_tiny's f32 safetensors so quantised must be
// the model of its Q8_0 GGUF (written by gguf-py's quantiser): within 1e-4
// of the HF reference holding that file's dequantised values, and the same
// greedy continuations; the Q8_0 GGUF itself, its blocks requantised, too.
// The weights held shrink to about 1.125 bytes a weight.
class DecoderQ8StorageTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderQ8StorageTest, IsTheQ8_0FilesModelInAQuarterOfTheBytes) {
  const std::string dir = ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/llama_tiny/";
  DecoderLoadOptions q8;
  q8.weight_dtype = DType::kQ8_0;
  auto model = DecoderModel::Load(dir + GetParam(), q8);
  ASSERT_TRUE(model.ok()) << model.status();
  auto f32 = DecoderModel::Load(dir + GetParam(), DecoderLoadOptions());
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ((*model)->description().weight_dtype, DType::kQ8_0);
  EXPECT_LT((*model)->description().weight_bytes, (*f32)->description().weight_bytes * 0.3);
  const nlohmann::json ref = ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/llama_tiny_q8_0.json");
  ASSERT_FALSE(ref.is_discarded());
  const auto prompts = ref["prompts"].get<std::vector<std::vector<int32_t>>>();
  const auto logits = ref["logits"].get<std::vector<std::vector<float>>>();
  const auto greedy = ref["greedy"].get<std::vector<std::vector<int32_t>>>();
  for (size_t p = 0; p < prompts.size(); ++p) {
    EXPECT_LE(MaxAbsDiff(LastLogits(**model, prompts[p]), logits[p]), kTol) << "prompt " << p;
    auto got = GreedyOverModel(**model, prompts[p], 64, /*chunk=*/7);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, greedy[p]) << "prompt " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaTiny, DecoderQ8StorageTest, ::testing::Values("", "model-q8_0.gguf"),
                         [](const auto& info) { return info.param.empty() ? std::string("Safetensors") : "Q8_0Gguf"; });

}  // namespace
}  // namespace attnserve
