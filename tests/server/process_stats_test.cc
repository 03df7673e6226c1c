#include "server/metrics/process_stats.h"

#include <ctime>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

TEST(ProcessStatsTest, ResidentGrowsWhenMemoryIsTouched) {
  const ProcessStats before = ReadProcessStats();
  ASSERT_GT(before.resident_bytes, 0);
  ASSERT_GE(before.virtual_bytes, before.resident_bytes);
  std::vector<char> block(64 << 20, 1);  // touched: 64 MiB resident
  const ProcessStats after = ReadProcessStats();
  EXPECT_GE(after.resident_bytes - before.resident_bytes, 48 << 20);
  EXPECT_EQ(block[12345], 1);
}

TEST(ProcessStatsTest, StartTimeIsRecentPast) {
  const double now = static_cast<double>(std::time(nullptr));
  const double start = ReadProcessStats().start_time_seconds;
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600);
}

}  // namespace
}  // namespace attnserve
