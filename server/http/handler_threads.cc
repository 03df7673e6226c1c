#include "server/http/handler_threads.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace attnserve {

struct HandlerThreads::Job {
  absl::AnyInvocable<void() &&> fn;
  absl::Notification done;
};

absl::StatusOr<std::unique_ptr<HandlerThreads>> HandlerThreads::Start(int threads, size_t stack_bytes) {
  if (threads <= 0) return absl::InvalidArgumentError(absl::StrCat("handler threads: need at least 1, got ", threads));
  std::unique_ptr<HandlerThreads> pool(new HandlerThreads(stack_bytes));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  for (int i = 0; rc == 0 && i < threads; ++i) {
    pthread_t t;
    rc = pthread_create(&t, &attr, &HandlerThreads::ThreadMain, pool.get());
    if (rc == 0) pool->threads_.push_back(t);
  }
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    // The destructor joins the threads that did start.
    return absl::ResourceExhaustedError(absl::StrCat("handler threads: cannot start thread ", pool->threads_.size() + 1,
                                                     " of ", threads, " with a ", stack_bytes,
                                                     "-byte stack: ", std::strerror(rc)));
  }
  return pool;
}

HandlerThreads::~HandlerThreads() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (pthread_t t : threads_) pthread_join(t, nullptr);
}

void* HandlerThreads::ThreadMain(void* self) {
  static_cast<HandlerThreads*>(self)->Loop();
  return nullptr;
}

void HandlerThreads::Loop() {
  for (;;) {
    Job* job = nullptr;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](HandlerThreads* p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->stopping_ || !p->queue_.empty(); }, this));
      if (queue_.empty()) return;  // stopping, nothing left
      job = queue_.front();
      queue_.pop_front();
    }
    std::move(job->fn)();
    job->done.Notify();
  }
}

void HandlerThreads::RunAndWait(absl::AnyInvocable<void() &&> fn) {
  Job job{std::move(fn), {}};
  bool run_here;
  {
    absl::MutexLock lock(&mu_);
    run_here = stopping_;  // nobody will take it any more: run it here rather than never
    if (!run_here) queue_.push_back(&job);
  }
  if (run_here) {
    std::move(job.fn)();
    return;
  }
  job.done.WaitForNotification();
}

}  // namespace attnserve
