// HandlerThreads: a fixed set of threads with a stack size we choose, on which
// the HTTP door runs its request handling.
//
// Why: civetweb creates its worker threads with a fixed 100 KiB stack
// (compiled into Debian's libcivetweb 1.15; no run-time option). A request's
// work (reading the body, the JSON DOM and protobuf's JSON parser, tokenising,
// building the answer) is deeper than that under ASan and uncomfortably close
// to it in release builds. The civetweb worker hands its connection to one of
// these threads and waits; only one thread uses the connection at a time.
//
// Sized to civetweb's worker count, so a request never waits here for a
// thread: at most that many connections are being served at once. The
// gateway keeps some of them for quick requests (options.h,
// kHttpReservedThreads) by refusing inference calls past the rest.
#ifndef ATTNSERVE_SERVER_HTTP_HANDLER_THREADS_H_
#define ATTNSERVE_SERVER_HTTP_HANDLER_THREADS_H_

#include <pthread.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace attnserve {

class HandlerThreads {
 public:
  static constexpr size_t kDefaultStackBytes = size_t{8} << 20;

  // Starts `threads` threads with `stack_bytes` of stack each. Fails (naming
  // the reason) if the system refuses a thread.
  static absl::StatusOr<std::unique_ptr<HandlerThreads>> Start(int threads,
                                                               size_t stack_bytes = kDefaultStackBytes);
  // Runs what is still queued, then joins every thread.
  ~HandlerThreads();
  HandlerThreads(const HandlerThreads&) = delete;
  HandlerThreads& operator=(const HandlerThreads&) = delete;

  // Runs `fn` on one of the threads and returns when it has finished.
  void RunAndWait(absl::AnyInvocable<void() &&> fn);

  size_t stack_bytes() const { return stack_bytes_; }

 private:
  struct Job;
  explicit HandlerThreads(size_t stack_bytes) : stack_bytes_(stack_bytes) {}
  static void* ThreadMain(void* self);
  void Loop();

  const size_t stack_bytes_;
  std::vector<pthread_t> threads_;
  absl::Mutex mu_;
  std::deque<Job*> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_HANDLER_THREADS_H_
