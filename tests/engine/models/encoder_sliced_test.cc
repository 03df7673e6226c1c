// Encoding in slices (EncodeJob, what the server's scheduler interleaves with
// generate steps) gives bit-identical results to encoding the batch whole, for
// f32 and bf16 weights, even with other batches' slices and whole encodes run
// in between (each job owns its activations).
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

void ExpectIdentical(const std::vector<EncodeResult>& sliced, const std::vector<EncodeResult>& whole,
                     const std::string& what) {
  ASSERT_EQ(sliced.size(), whole.size()) << what;
  for (size_t i = 0; i < whole.size(); ++i) {
    SCOPED_TRACE(what + ", input " + std::to_string(i));
    EXPECT_EQ(sliced[i].token_ids, whole[i].token_ids);
    EXPECT_EQ(sliced[i].truncated, whole[i].truncated);
    EXPECT_TRUE(SameBits(sliced[i].embedding, whole[i].embedding));
    ASSERT_EQ(sliced[i].hidden_states.size(), whole[i].hidden_states.size());
    for (size_t l = 0; l < whole[i].hidden_states.size(); ++l) {
      EXPECT_TRUE(SameBits(sliced[i].hidden_states[l], whole[i].hidden_states[l])) << "hidden state " << l;
    }
    ASSERT_EQ(sliced[i].attentions.size(), whole[i].attentions.size());
    for (size_t l = 0; l < whole[i].attentions.size(); ++l) {
      EXPECT_EQ(sliced[i].attentions[l].first, whole[i].attentions[l].first);
      EXPECT_TRUE(SameBits(sliced[i].attentions[l].second, whole[i].attentions[l].second)) << "attention " << l;
    }
  }
}

class EncoderSlicedTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    const std::string dir = testing_util::MiniLmDir();
    ASSERT_TRUE(std::filesystem::is_directory(dir))
        << "all-MiniLM-L6-v2 not found at " << dir << " (set ATTNSERVE_MINILM_DIR or run ./dev setup)";
    auto m = EncoderModel::Load(dir, {.weight_dtype = GetParam()});
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = *std::move(m);
    auto g = ReadJsonFile(testing_util::EncoderGoldenPath());
    ASSERT_TRUE(g.ok()) << g.status();
    for (const nlohmann::json& s : (*g)["sentences"]) {
      EncoderInput in;
      in.text = s["text"].get<std::string>();
      sentences_.push_back(std::move(in));
    }
    ASSERT_GE(sentences_.size(), 73u);
  }
  std::vector<EncoderInput> Pick(std::initializer_list<int> indices) const {
    std::vector<EncoderInput> out;
    for (int i : indices) out.push_back(sentences_[i]);
    return out;
  }

  std::unique_ptr<EncoderModel> model_;
  std::vector<EncoderInput> sentences_;
};

TEST_P(EncoderSlicedTest, SlicedRunsInterleavedEqualWholeBatchesBitForBit) {
  // A padded batch of very different lengths asking for everything, a plain
  // pooled batch, and a single sequence (the unpadded attention path).
  EncodeOptions everything;
  everything.return_hidden_states = true;
  everything.attention_layers = {0, 5};
  const std::vector<EncoderInput> a = Pick({70, 2, 72, 0, 71});
  const std::vector<EncoderInput> b = Pick({5, 6, 7});
  const std::vector<EncoderInput> c = Pick({71});
  EncodeOptions token_level;
  token_level.pooling = PoolingMode::kNone;
  auto whole_a = model_->Encode(a, everything);
  auto whole_b = model_->Encode(b, {});
  auto whole_c = model_->Encode(c, token_level);
  ASSERT_TRUE(whole_a.ok() && whole_b.ok() && whole_c.ok());

  auto job_a = model_->StartEncode(a, everything);
  auto job_b = model_->StartEncode(b, {});
  auto job_c = model_->StartEncode(c, token_level);
  ASSERT_TRUE(job_a.ok() && job_b.ok() && job_c.ok());
  // The embeddings plus three slices per layer.
  EXPECT_EQ((*job_a)->slices_total(), 1 + 3 * model_->description().num_layers);
  EncodeJob* jobs[] = {job_a->get(), job_b->get(), job_c->get()};
  for (int round = 0; !jobs[0]->done() || !jobs[1]->done() || !jobs[2]->done(); ++round) {
    for (EncodeJob* job : jobs) {
      if (!job->done()) {
        ASSERT_TRUE(job->RunSlice().ok());
      }
    }
    if (round % 4 == 1) {
      ASSERT_TRUE(model_->Encode(Pick({3, 4}), {}).ok());  // whole work in between
    }
  }
  EXPECT_EQ(jobs[0]->slices_done(), jobs[0]->slices_total());
  auto sliced_a = jobs[0]->Finish();
  auto sliced_b = jobs[1]->Finish();
  auto sliced_c = jobs[2]->Finish();
  ASSERT_TRUE(sliced_a.ok() && sliced_b.ok() && sliced_c.ok());
  ExpectIdentical(*sliced_a, *whole_a, "padded batch with hidden states and attentions");
  ExpectIdentical(*sliced_b, *whole_b, "pooled batch");
  ExpectIdentical(*sliced_c, *whole_c, "single sequence, token level");
  EXPECT_FALSE((*sliced_a)[0].hidden_states.empty());
  EXPECT_EQ((*sliced_a)[0].attentions.size(), 2u);
}

TEST_P(EncoderSlicedTest, JobMisuseAndBadInputAreCleanErrors) {
  auto job = model_->StartEncode(Pick({0}), {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)->Finish().status().code(), absl::StatusCode::kFailedPrecondition);  // nothing ran yet
  while (!(*job)->done()) ASSERT_TRUE((*job)->RunSlice().ok());
  EXPECT_EQ((*job)->RunSlice().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*job)->Finish().ok());
  EXPECT_EQ((*job)->Finish().status().code(), absl::StatusCode::kFailedPrecondition);  // taken already

  // Validation happens at the start, before any compute.
  EncoderInput bad;
  bad.is_text = false;
  bad.token_ids = {1, 2, 999999};
  auto refused = model_->StartEncode({sentences_[0], bad}, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("input 1"));
}

INSTANTIATE_TEST_SUITE_P(WeightDtypes, EncoderSlicedTest, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace attnserve
