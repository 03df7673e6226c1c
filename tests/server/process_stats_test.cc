#include "server/metrics/process_stats.h"

#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/metrics/metrics.h"

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

TEST(ProcessStatsTest, SchedstatParsesRunAndWaitNanoseconds) {
  const auto stats = ParseSchedstat("1500000000 250000000 42\n");
  ASSERT_TRUE(stats.has_value());
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 1.5);
  EXPECT_DOUBLE_EQ(stats->wait_seconds, 0.25);
  EXPECT_FALSE(ParseSchedstat("").has_value());
  EXPECT_FALSE(ParseSchedstat("12 x 3").has_value());
}

// Spins on this thread for about `seconds` of wall time.
void Burn(double seconds) {
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  volatile double x = 1;
  while (absl::Now() < end) x = x * 1.0000001;
}

TEST(ProcessStatsTest, ThreadSchedStatsCountThisThreadsCpu) {
  const int tid = CurrentThreadId();
  const auto before = ReadThreadSchedStats(tid);
  if (!before) GTEST_SKIP() << "this kernel has no /proc/<pid>/task/<tid>/schedstat (CONFIG_SCHED_INFO off)";
  Burn(0.05);
  const auto after = ReadThreadSchedStats(tid);
  ASSERT_TRUE(after.has_value());
  // At least some of 50 ms of spinning ran on a CPU (however loaded the machine).
  EXPECT_GT(after->cpu_seconds - before->cpu_seconds, 0.001);
  EXPECT_GE(after->wait_seconds, before->wait_seconds);
  EXPECT_NE(tid, 0);
  int other = 0;
  std::thread([&] { other = CurrentThreadId(); }).join();
  EXPECT_NE(other, tid);
}

// The value of one series (name and labels as exposed) in a text exposition;
// -1 if absent. Every sample line follows its family's # HELP / # TYPE lines.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(ProcessStatsTest, ScrapeReportsTheSchedulerThreadsCpuTime) {
  if (!ReadThreadSchedStats(CurrentThreadId())) GTEST_SKIP() << "no schedstat on this kernel (CONFIG_SCHED_INFO off)";
  ServerMetrics metrics(BuildLabels{"v", "3.7", "avx2", 1});
  const std::string running = R"(attnserve_scheduler_thread_cpu_seconds_total{state="running"})";
  const std::string waiting = R"(attnserve_scheduler_thread_cpu_seconds_total{state="waiting"})";
  // Before any thread registers, both series exist at 0.
  std::string text = metrics.Scrape();
  EXPECT_EQ(Sample(text, running), 0);
  EXPECT_EQ(Sample(text, waiting), 0);

  std::thread([&] {
    metrics.SetSchedulerThread(CurrentThreadId());
    Burn(0.05);
    text = metrics.Scrape();  // while the thread is alive
  }).join();
  const double first = Sample(text, running);
  EXPECT_GT(first, 0.001);
  EXPECT_GE(Sample(text, waiting), 0);
  // Counters never go back, also once the thread is gone.
  text = metrics.Scrape();
  EXPECT_GE(Sample(text, running), first);
}

}  // namespace
}  // namespace attnserve
