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

// The first message's prompt ids (return_prompt_token_ids) survive a merge,
// whichever side carries them.
TEST(AppendGenerateChunkTest, KeepsThePromptTokenIds) {
  v1::GenerateResponse merged = Chunk({5}, "a", 0.0f);
  merged.add_prompt_token_ids(1);
  merged.add_prompt_token_ids(9);
  AppendGenerateChunk(&merged, Chunk({6}, "b", 0.0f));
  EXPECT_THAT(merged.prompt_token_ids(), ElementsAre(1, 9));
  v1::GenerateResponse empty;
  v1::GenerateResponse first = Chunk({5}, "a", 0.0f);
  first.add_prompt_token_ids(3);
  AppendGenerateChunk(&empty, first);
  EXPECT_THAT(empty.prompt_token_ids(), ElementsAre(3));
}

// vLLM's stop_reason: the stop string for STOP_STRING, the generated stop
// id for STOP_TOKEN, nothing for EOS or the length; kept when merged.
TEST(SetStopReasonTest, NamesWhatStopped) {
  GenerationParams p;
  p.stop = {"The end", "\n\n"};
  p.stop_token_ids.assign(1, 13);  // "= {13}" trips GCC 14's -Warray-bounds under the asan build
  v1::GenerateResponse by_string;
  by_string.set_finish_reason(v1::FINISH_REASON_STOP_STRING);
  SetStopReason(p, 42, 1, &by_string);
  EXPECT_EQ(by_string.stop_string(), "\n\n");
  v1::GenerateResponse by_token;
  by_token.set_finish_reason(v1::FINISH_REASON_STOP_TOKEN);
  SetStopReason(p, 13, -1, &by_token);
  ASSERT_TRUE(by_token.has_stop_token_id());
  EXPECT_EQ(by_token.stop_token_id(), 13);
  for (v1::FinishReason f : {v1::FINISH_REASON_EOS, v1::FINISH_REASON_LENGTH}) {
    v1::GenerateResponse other;
    other.set_finish_reason(f);
    SetStopReason(p, 2, -1, &other);
    EXPECT_EQ(other.stop_reason_case(), v1::GenerateResponse::STOP_REASON_NOT_SET);
  }
  v1::GenerateResponse merged = Chunk({1}, "a", 0.0f);
  AppendGenerateChunk(&merged, by_token);
  EXPECT_EQ(merged.stop_token_id(), 13);
  AppendGenerateChunk(&merged, by_string);
  EXPECT_EQ(merged.stop_string(), "\n\n");
}

}  // namespace
}  // namespace attnserve
