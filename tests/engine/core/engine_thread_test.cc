#include "engine/core/engine_thread.h"

#include <omp.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Threads of this process, from /proc/self/status.
int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

TEST(EngineThreadTest, RunsWithTheGivenOpenMpThreadCountAndReturnsTheResult) {
  for (const int threads : {1, 2}) {
    const std::unique_ptr<int> team = RunOnShortLivedThread(threads, [] {
      int size = 0;
#pragma omp parallel
      {
#pragma omp single
        size = omp_get_num_threads();
      }
      return std::make_unique<int>(size);  // a move-only result comes back too
    });
    EXPECT_EQ(*team, threads);
  }
}

TEST(EngineThreadTest, TheOpenMpWorkersItsRegionsMadeEndWithIt) {
  const int before = ProcessThreads();
  ASSERT_GT(before, 0);
  const int during = RunOnShortLivedThread(2, [] {
    int n = 0;
#pragma omp parallel
    {
#pragma omp single
      n = ProcessThreads();  // this thread and its pool's worker
    }
    return n;
  });
  EXPECT_EQ(during, before + 2);
  // The worker exits just after its owner; the bound only keeps a broken
  // build (a pool left behind) from hanging the suite.
  int after = ProcessThreads();
  for (int i = 0; i < 6000 && after != before; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    after = ProcessThreads();
  }
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace attnserve
