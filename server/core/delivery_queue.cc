#include "server/core/delivery_queue.h"

#include <pthread.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace attnserve {

struct DeliveryQueue::Worker {
  absl::Mutex mu;
  std::vector<Job> jobs ABSL_GUARDED_BY(mu);  // posted, not yet taken by the thread
  uint64_t posted ABSL_GUARDED_BY(mu) = 0;
  uint64_t done ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool exited ABSL_GUARDED_BY(mu) = false;  // the thread has left; Post runs jobs inline
  std::thread thread;
};

DeliveryQueue::DeliveryQueue(int num_workers) {
  const int n = std::max(1, num_workers);
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker* w = workers_.back().get();
    w->thread = std::thread([w] { Run(w); });
    // Named so profiles and `top -H` tell it from the scheduler (15 chars max).
    pthread_setname_np(w->thread.native_handle(), "attnserve-dlvr");
  }
}

DeliveryQueue::~DeliveryQueue() { Shutdown(); }

void DeliveryQueue::Post(uint64_t key, Job job) {
  Flush();  // a job staged earlier for this key runs first
  Worker& w = *workers_[key % workers_.size()];
  {
    absl::MutexLock lock(&w.mu);
    ++w.posted;
    if (!w.exited) {
      w.jobs.push_back(std::move(job));
      return;
    }
  }
  // After shutdown: every earlier job of this key has run (the thread only
  // exits with its queue empty), so running it here keeps the order.
  std::move(job)();
  absl::MutexLock lock(&w.mu);
  ++w.done;
}

void DeliveryQueue::Stage(uint64_t key, Job job) {
  std::lock_guard<std::mutex> lock(staging_mu_);
  staged_.emplace_back(key, std::move(job));
}

void DeliveryQueue::Flush() {
  // After shutdown a worker takes nothing: its jobs run here, in order, once
  // the locks are released (a job may itself post).
  std::vector<std::pair<size_t, Job>> run_here;
  {
    std::lock_guard<std::mutex> flush(flush_mu_);
    {
      std::lock_guard<std::mutex> lock(staging_mu_);
      if (staged_.empty()) return;
      flushing_.swap(staged_);
    }
    const size_t n = workers_.size();
    for (size_t i = 0; i < n; ++i) {
      Worker& w = *workers_[i];
      absl::MutexLock lock(&w.mu);
      for (auto& [key, job] : flushing_) {
        if (key % n != i) continue;
        ++w.posted;
        if (w.exited) {
          run_here.emplace_back(i, std::move(job));
        } else {
          w.jobs.push_back(std::move(job));
        }
      }
    }
    flushing_.clear();  // destroys the moved-from jobs; keeps the capacity
  }
  for (auto& [worker, job] : run_here) {
    std::move(job)();
    absl::MutexLock lock(&workers_[worker]->mu);
    ++workers_[worker]->done;
  }
}

void DeliveryQueue::Run(Worker* w) {
  std::vector<Job> batch;
  for (;;) {
    {
      absl::MutexLock lock(&w->mu);
      auto ready = [w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) { return !w->jobs.empty() || w->stopping; };
      w->mu.Await(absl::Condition(&ready));
      if (w->jobs.empty()) {  // stopping and nothing left
        w->exited = true;
        return;
      }
      // Take everything queued at once: one lock per batch, not per job, and
      // the vectors' capacity is reused.
      batch.swap(w->jobs);
    }
    for (Job& job : batch) std::move(job)();
    const uint64_t ran = batch.size();
    batch.clear();  // destroy the jobs (and what they hold) before counting them done
    absl::MutexLock lock(&w->mu);
    w->done += ran;
  }
}

bool DeliveryQueue::WaitEmpty(absl::Time deadline) {
  Flush();
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    absl::MutexLock lock(&w->mu);
    const uint64_t target = w->posted;
    auto caught_up = [w, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) { return w->done >= target; };
    if (!w->mu.AwaitWithDeadline(absl::Condition(&caught_up), deadline)) return false;
  }
  return true;
}

void DeliveryQueue::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    Flush();
    for (auto& w : workers_) {
      absl::MutexLock lock(&w->mu);
      w->stopping = true;
    }
    for (auto& w : workers_) w->thread.join();
  });
}

}  // namespace attnserve
