#include "server/core/proto_convert.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;

v1::GenerateResponse Chunk(std::vector<int32_t> ids, const std::string& text, float logprob) {
  v1::GenerateResponse c;
  c.mutable_token_ids()->Assign(ids.begin(), ids.end());
  c.set_text(text);
  for (size_t i = 0; i < ids.size(); ++i) c.add_logprobs()->set_logprob(logprob + static_cast<float>(i));
  return c;
}

// Merged stream messages read exactly like the messages one after another.
TEST(AppendGenerateChunkTest, ConcatenatesInOrderAndKeepsTheLastMessagesEnding) {
  v1::GenerateResponse merged = Chunk({5}, "Once", -1.0f);
  AppendGenerateChunk(&merged, Chunk({6, 7}, " upon a", -2.0f));
  EXPECT_EQ(merged.finish_reason(), v1::FINISH_REASON_UNSPECIFIED);
  EXPECT_FALSE(merged.has_usage());

  v1::GenerateResponse last = Chunk({8}, " time\xC3\xA9", -3.0f);
  last.set_finish_reason(v1::FINISH_REASON_LENGTH);
  last.mutable_usage()->set_generated_tokens(4);
  last.mutable_usage()->set_peak_kv_cache_bytes(4096);
  AppendGenerateChunk(&merged, last);

  EXPECT_THAT(merged.token_ids(), ElementsAre(5, 6, 7, 8));
  EXPECT_EQ(merged.text(), "Once upon a time\xC3\xA9");
  ASSERT_EQ(merged.logprobs_size(), 4);
  EXPECT_EQ(merged.logprobs(0).logprob(), -1.0f);
  EXPECT_EQ(merged.logprobs(1).logprob(), -2.0f);
  EXPECT_EQ(merged.logprobs(2).logprob(), -1.0f);
  EXPECT_EQ(merged.logprobs(3).logprob(), -3.0f);
  EXPECT_EQ(merged.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(merged.usage().generated_tokens(), 4);
  EXPECT_EQ(merged.usage().peak_kv_cache_bytes(), 4096);
}

TEST(AppendGenerateChunkTest, AnEmptyFinalMessageOnlyAddsItsEnding) {
  v1::GenerateResponse merged = Chunk({1, 2}, "ab", 0.0f);
  v1::GenerateResponse end;
  end.set_finish_reason(v1::FINISH_REASON_EOS);
  AppendGenerateChunk(&merged, end);
  EXPECT_THAT(merged.token_ids(), ElementsAre(1, 2));
  EXPECT_EQ(merged.text(), "ab");
  EXPECT_EQ(merged.logprobs_size(), 2);
  EXPECT_EQ(merged.finish_reason(), v1::FINISH_REASON_EOS);
}

}  // namespace
}  // namespace attnserve
