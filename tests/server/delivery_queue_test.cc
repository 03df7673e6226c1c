// DeliveryQueue: per-key order under concurrent producers, every job run
// exactly once, off the caller's thread, and the documented shutdown
// behaviour (queued jobs run; later ones run inline).
#include "server/core/delivery_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Producers post interleaved sequences for their own keys; each key's jobs
// must run in the order posted, and every job exactly once.
void CheckOrderAndOnce(int num_workers) {
  static constexpr int kProducers = 6;
  static constexpr int kKeysPerProducer = 5;
  static constexpr int kJobsPerKey = 2000;
  static constexpr int kKeys = kProducers * kKeysPerProducer;
  std::vector<std::vector<int>> seen(kKeys);  // a key's jobs run one at a time
  std::vector<std::atomic<int>> runs(kKeys * kJobsPerKey);
  {
    DeliveryQueue queue(num_workers);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kJobsPerKey; ++i) {
          for (int k = 0; k < kKeysPerProducer; ++k) {
            const int key = p * kKeysPerProducer + k;
            queue.Post(key, [&seen, &runs, key, i] {
              seen[key].push_back(i);
              runs[key * kJobsPerKey + i].fetch_add(1);
            });
          }
        }
      });
    }
    for (std::thread& t : producers) t.join();
  }  // the destructor runs whatever is still queued
  for (int key = 0; key < kKeys; ++key) {
    ASSERT_EQ(seen[key].size(), kJobsPerKey) << "key " << key;
    for (int i = 0; i < kJobsPerKey; ++i) ASSERT_EQ(seen[key][i], i) << "key " << key;
  }
  for (size_t j = 0; j < runs.size(); ++j) ASSERT_EQ(runs[j].load(), 1) << "job " << j;
}

TEST(DeliveryQueueTest, OneWorkerKeepsOrderPerKeyAndRunsEachJobOnce) { CheckOrderAndOnce(1); }
TEST(DeliveryQueueTest, SeveralWorkersKeepOrderPerKeyAndRunEachJobOnce) { CheckOrderAndOnce(3); }

TEST(DeliveryQueueTest, JobsRunOffTheCallersThread) {
  DeliveryQueue queue(1);
  std::thread::id ran_on;
  absl::Notification done;
  queue.Post(7, [&] {
    ran_on = std::this_thread::get_id();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(DeliveryQueueTest, PostDoesNotWaitForARunningJob) {
  DeliveryQueue queue(1);
  absl::Notification release;
  std::atomic<int> ran{0};
  queue.Post(1, [&] {
    release.WaitForNotification();
    ran.fetch_add(1);
  });
  // The worker is blocked in the first job; posting more (same key and
  // others) must still return, and nothing after it has run yet.
  for (int i = 0; i < 100; ++i) queue.Post(i, [&] { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 0);
  release.Notify();
  ASSERT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
  EXPECT_EQ(ran.load(), 101);
}

TEST(DeliveryQueueTest, WaitEmptyIsFalseWhileAJobIsPendingAndTrueOnceItRan) {
  DeliveryQueue queue(2);
  absl::Notification release;
  std::atomic<bool> ran{false};
  queue.Post(3, [&] {
    release.WaitForNotification();
    ran.store(true);
  });
  // The job cannot finish before `release`, so this must time out.
  EXPECT_FALSE(queue.WaitEmpty(absl::Now() + absl::Milliseconds(20)));
  EXPECT_FALSE(ran.load());
  release.Notify();
  EXPECT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
  EXPECT_TRUE(ran.load());
}

TEST(DeliveryQueueTest, ShutdownRunsEveryQueuedJobBeforeReturning) {
  DeliveryQueue queue(2);
  absl::Notification release;
  std::atomic<int> ran{0};
  queue.Post(0, [&] {
    release.WaitForNotification();
    ran.fetch_add(1);
  });
  for (int i = 0; i < 50; ++i) queue.Post(i, [&] { ran.fetch_add(1); });
  std::thread stopper([&] { queue.Shutdown(); });
  release.Notify();
  stopper.join();
  EXPECT_EQ(ran.load(), 51);
  queue.Shutdown();  // idempotent
  EXPECT_EQ(ran.load(), 51);
}

TEST(DeliveryQueueTest, PostAfterShutdownRunsInlineSoNothingIsDropped) {
  DeliveryQueue queue(2);
  queue.Shutdown();
  std::thread::id ran_on;
  int runs = 0;
  queue.Post(5, [&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  EXPECT_EQ(runs, 1);  // already ran when Post returned
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
}

TEST(DeliveryQueueTest, JobsAreDestroyedOnTheWorkerAfterRunning) {
  // What a job captures (a stream's state) is released once it has run, not
  // kept until shutdown.
  auto held = std::make_shared<int>(1);
  std::weak_ptr<int> watch = held;
  DeliveryQueue queue(1);
  queue.Post(9, [held = std::move(held)] {});
  ASSERT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
  EXPECT_TRUE(watch.expired());
}

TEST(DeliveryQueueTest, StagedJobsWaitForFlushThenRunInOrder) {
  DeliveryQueue queue(1);
  absl::Mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    queue.Stage(4, [&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
    });
  }
  // Not handed over yet: nothing may run, however long the worker waits.
  absl::SleepFor(absl::Milliseconds(20));
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(order.empty());
  }
  queue.Flush();
  ASSERT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(DeliveryQueueTest, PostRunsBehindJobsStagedBeforeIt) {
  // A stream's tokens are staged and its ending posted: the ending must not
  // overtake them, on one worker or several.
  for (int workers : {1, 3}) {
    DeliveryQueue queue(workers);
    absl::Mutex mu;
    std::vector<int> order;
    for (int i = 0; i < 3; ++i) {
      queue.Stage(7, [&, i] {
        absl::MutexLock lock(&mu);
        order.push_back(i);
      });
    }
    queue.Post(7, [&] {
      absl::MutexLock lock(&mu);
      order.push_back(99);
    });
    ASSERT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
    absl::MutexLock lock(&mu);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 99})) << workers << " workers";
  }
}

TEST(DeliveryQueueTest, WaitEmptyAndShutdownRunStagedJobs) {
  std::atomic<int> ran{0};
  DeliveryQueue queue(2);
  queue.Stage(1, [&] { ran.fetch_add(1); });
  ASSERT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));  // counts staged jobs as outstanding
  EXPECT_EQ(ran.load(), 1);
  for (int i = 0; i < 10; ++i) queue.Stage(i, [&] { ran.fetch_add(1); });
  queue.Shutdown();
  EXPECT_EQ(ran.load(), 11);
  // After shutdown a flush runs what was staged on the caller's thread.
  std::thread::id ran_on;
  queue.Stage(3, [&] {
    ran_on = std::this_thread::get_id();
    ran.fetch_add(1);
  });
  queue.Flush();
  EXPECT_EQ(ran.load(), 12);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
}

TEST(DeliveryQueueTest, AStagedJobRunAfterShutdownMayItselfPost) {
  // After shutdown Flush runs staged jobs on the caller's thread; one that
  // posts (as a stream's last message might) must not deadlock on the
  // queue's own locks.
  DeliveryQueue queue(1);
  queue.Shutdown();
  std::vector<int> order;
  queue.Stage(2, [&] {
    order.push_back(1);
    queue.Post(2, [&] { order.push_back(2); });
  });
  queue.Flush();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_TRUE(queue.WaitEmpty(absl::InfiniteFuture()));
}

TEST(DeliveryQueueTest, StagedAndPostedJobsFromManyThreadsRunOnceInOrderPerKey) {
  // Each producer owns its keys, stages most jobs and posts every tenth one,
  // flushing now and then, as the scheduler does at the end of a pass.
  static constexpr int kProducers = 4;
  static constexpr int kJobs = 3000;
  std::vector<std::vector<int>> seen(kProducers);
  {
    DeliveryQueue queue(2);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kJobs; ++i) {
          auto job = [&seen, p, i] { seen[p].push_back(i); };
          if (i % 10 == 9) {
            queue.Post(p, job);
          } else {
            queue.Stage(p, job);
          }
          if (i % 7 == 0) queue.Flush();
        }
      });
    }
    for (std::thread& t : producers) t.join();
  }  // the destructor flushes and runs what is left
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), kJobs) << "producer " << p;
    for (int i = 0; i < kJobs; ++i) ASSERT_EQ(seen[p][i], i) << "producer " << p;
  }
}

}  // namespace
}  // namespace attnserve
