// stories260K (real trained weights, 8 query heads over 4 KV heads) from its
// GGUF: greedy ids and text equal the reference runs recorded in
// ../shared/models/stories260K/expected/greedy_reference.json (llama2.c run.c
// and llama.cpp).
#include <string>
#include <vector>

#include "engine/models/decoder_model.h"
#include "gtest/gtest.h"
#include "tests/engine/models/decoder_test_util.h"

namespace attnserve {
namespace {

using testing_util::GreedyOverModel;
using testing_util::ReadJson;

const std::string kDir = ATTNSERVE_SHARED_DIR "/models/stories260K";

std::shared_ptr<const DecoderModel> LoadStories(DType weights = DType::kF32) {
  DecoderLoadOptions opt;
  opt.weight_dtype = weights;
  opt.context_length = 512;  // trained context; the GGUF header says 128 (README)
  auto model = DecoderModel::Load(kDir + "/stories260K.gguf", opt);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

// run.c's text: pieces after BOS (the first loses its leading space).
std::string DecodeAfterBos(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string s;
  int32_t prev = 1;
  for (int32_t id : ids) {
    s += tok.TokenBytes(id, prev);
    prev = id;
  }
  return s;
}

TEST(Stories260kTest, DescriptionMatchesTheModel) {
  auto model = LoadStories();
  ASSERT_NE(model, nullptr);
  const ModelDescription& d = model->description();
  EXPECT_EQ(d.num_layers, 5);
  EXPECT_EQ(d.num_heads, 8);
  EXPECT_EQ(d.num_kv_heads, 4);
  EXPECT_EQ(d.head_dim, 8);
  EXPECT_EQ(d.vocab_size, 512);
  EXPECT_EQ(d.kv_bytes_per_token, 2 * 5 * 4 * 8 * 4);
  EXPECT_EQ(model->max_positions(), 512);
}

TEST(Stories260kTest, GreedyMatchesRunCTokenForTokenAndText) {
  auto model = LoadStories();
  ASSERT_NE(model, nullptr);
  nlohmann::json ref = ReadJson(kDir + "/expected/greedy_reference.json");
  ASSERT_FALSE(ref.is_discarded());
  ASSERT_EQ(ref["runc_cases"].size(), 3u);
  for (const auto& c : ref["runc_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto prompt = c["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    auto want = c["generated_ids"].get<std::vector<int32_t>>();
    auto got = GreedyOverModel(*model, prompt, static_cast<int>(want.size()));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
    // Text: run.c prints the prompt pieces, then the generated ones, then "\n".
    std::vector<int32_t> all(prompt.begin() + 1, prompt.end());
    all.insert(all.end(), got->begin(), got->end());
    EXPECT_EQ(DecodeAfterBos(model->tokenizer(), all) + "\n", c["stdout"].get<std::string>());
  }
}

TEST(Stories260kTest, GreedyMatchesLlamaCppOverItsLongerRuns) {
  auto model = LoadStories();
  ASSERT_NE(model, nullptr);
  nlohmann::json ref = ReadJson(kDir + "/expected/greedy_reference.json");
  const auto& cases = ref["llamacpp_greedy_on_stories260K.gguf"]["cases"];
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["prompt"].get<std::string>());
    auto prompt = c["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    auto want = c["generated_ids"].get<std::vector<int32_t>>();
    // Chunked prefill (2 tokens at a time) must not change anything.
    auto got = GreedyOverModel(*model, prompt, static_cast<int>(want.size()), /*chunk=*/2);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
  }
}

TEST(Stories260kTest, Bf16KvCacheKeepsTheReferencePrefix) {
  // bf16 K/V round the cache; the first tokens must still agree with run.c.
  auto model = LoadStories();
  ASSERT_NE(model, nullptr);
  nlohmann::json ref = ReadJson(kDir + "/expected/greedy_reference.json");
  const auto& c = ref["runc_cases"][1];
  auto prompt = c["prompt_ids_with_bos"].get<std::vector<int32_t>>();
  auto want = c["generated_ids"].get<std::vector<int32_t>>();
  want.resize(16);
  auto got = GreedyOverModel(*model, prompt, 16, 1 << 20, DType::kBF16);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, want);
}

}  // namespace
}  // namespace attnserve
