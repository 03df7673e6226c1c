// DeliveryQueue: runs the work of handing results to the doors (building a
// stream message, detokenising, writing it to the gRPC reactor or the HTTP
// gateway's channel) on worker threads, so the scheduler thread only enqueues.
//
// Why: on stories260K at 16 streams, perf showed the scheduler thread spending
// ~31% of its time in the Generate sink (gRPC StartWrite with an inline
// sendmsg, and futex wake-ups of gRPC's threads): more than 90% of the
// scheduler's per-pass overhead, growing with every stream. See the Service
// section of docs/benchmarks.md.
//
// Order: jobs posted with the same key run one at a time in the order they
// were posted, on the one worker the key maps to (key % num_workers). Jobs of
// different keys may run concurrently and in any relative order.
//
// Unbounded on purpose: a job is one token's message or one request's end,
// and refusing it would lose output the client is owed. What is outstanding is
// bounded by the running sequences times the tokens they make while a worker
// is behind (the gRPC reactor's own queue of messages is unbounded likewise).
//
// Staging: Stage() queues a job without handing it to its worker; Flush()
// hands every staged job over, one lock and at most one wake-up per worker.
// The scheduler stages each token's message during a step and flushes once
// at the end of its pass, instead of a lock and often a wake-up per token:
// on stories260K at 16 streams that made 7 % more tokens/s with a lower p99
// inter-token latency (docs/benchmarks.md, Service). A staged job keeps its
// place: Post, WaitEmpty and Shutdown flush first.
//
// Shutdown (also the destructor): every job already posted or staged runs,
// then the workers are joined. A job posted (or flushed) after a worker has
// exited runs at once on the caller's thread, so nothing (in particular no
// final status) is dropped.
//
// Thread-safe. Jobs must not call Shutdown or WaitEmpty (they would wait on
// themselves).
#ifndef ATTNSERVE_SERVER_CORE_DELIVERY_QUEUE_H_
#define ATTNSERVE_SERVER_CORE_DELIVERY_QUEUE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

namespace attnserve {

class DeliveryQueue {
 public:
  using Job = absl::AnyInvocable<void() &&>;

  // Starts `num_workers` threads (at least 1).
  explicit DeliveryQueue(int num_workers);
  ~DeliveryQueue();  // Shutdown()
  DeliveryQueue(const DeliveryQueue&) = delete;
  DeliveryQueue& operator=(const DeliveryQueue&) = delete;

  // Queues `job` behind every earlier job of `key`. Cheap: a move under the
  // worker's mutex (and a wake-up when the worker was idle).
  void Post(uint64_t key, Job job);

  // Queues `job` like Post, but the worker sees it only at the next Flush
  // (or Post, WaitEmpty, Shutdown). No wake-up; a move under a lock.
  void Stage(uint64_t key, Job job);

  // Hands every staged job to its worker, in the order staged.
  void Flush();

  // True once every job posted before the call has run; false if `deadline`
  // passes first.
  bool WaitEmpty(absl::Time deadline);

  // Runs what is queued, then joins the workers. Idempotent; a second
  // caller returns once the first has finished.
  void Shutdown();

 private:
  struct Worker;
  static void Run(Worker* worker);

  std::vector<std::unique_ptr<Worker>> workers_;
  // std::mutex, not absl's: Stage runs once per token, and Debian's Abseil
  // pays for deadlock detection on every lock. Order: flush_mu_, then
  // staging_mu_ or a worker's mu.
  std::mutex flush_mu_;  // one Flush at a time, so staged jobs reach the workers in order
  std::mutex staging_mu_;
  std::vector<std::pair<uint64_t, Job>> staged_;    // guarded by staging_mu_
  std::vector<std::pair<uint64_t, Job>> flushing_;  // Flush's scratch, guarded by flush_mu_
  std::once_flag shutdown_once_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_DELIVERY_QUEUE_H_
