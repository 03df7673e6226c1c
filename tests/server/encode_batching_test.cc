#include "server/scheduler/encode_batching.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;

TEST(EncodeBatchingTest, OldestAlwaysRunsAndSimilarLengthsJoinIt) {
  const std::string a = "a";
  // Lengths: oldest 10, then 100, 11, 9, 200, 12.
  std::vector<QueuedInput> q = {{&a, 10}, {&a, 100}, {&a, 11}, {&a, 9}, {&a, 200}, {&a, 12}};
  EXPECT_THAT(PickEncodeBatch(q, {4, 100000}), ElementsAre(0, 2, 3, 5));
}

TEST(EncodeBatchingTest, OnlyEqualOptionsBatchTogether) {
  const std::string a = "a", b = "b";
  std::vector<QueuedInput> q = {{&a, 5}, {&b, 5}, {&a, 5}, {&b, 5}};
  EXPECT_THAT(PickEncodeBatch(q, {8, 1000}), ElementsAre(0, 2));
}

TEST(EncodeBatchingTest, PaddedTokenBudgetIsRespectedButTheOldestAlwaysRuns) {
  const std::string a = "a";
  std::vector<QueuedInput> q = {{&a, 300}, {&a, 300}, {&a, 10}};
  EXPECT_THAT(PickEncodeBatch(q, {8, 256}), ElementsAre(0));  // longer than the budget: alone
  std::vector<QueuedInput> r = {{&a, 64}, {&a, 64}, {&a, 64}, {&a, 64}, {&a, 64}};
  EXPECT_THAT(PickEncodeBatch(r, {8, 256}), ElementsAre(0, 1, 2, 3));  // 4 x 64 = 256
}

TEST(EncodeBatchingTest, PaddingRatio) {
  EXPECT_DOUBLE_EQ(PaddingRatio({4, 4}), 0.0);
  EXPECT_DOUBLE_EQ(PaddingRatio({4, 2}), 0.25);
  EXPECT_DOUBLE_EQ(PaddingRatio({}), 0.0);
}

}  // namespace
}  // namespace attnserve
