// OpenMP keeps its state per thread, which matters in a server that runs the
// engine on threads it starts itself:
//
// - omp_set_num_threads() (SetEngineThreads) sets only the calling thread's
//   count. A thread started with std::thread begins at OMP_NUM_THREADS or all
//   cores, whatever the main thread set; so every thread that runs engine
//   work calls SetEngineThreads itself (the scheduler thread does at start).
// - A thread that enters a parallel region keeps a pool of OpenMP workers
//   until it exits. Once two threads have pools (the main thread's from
//   loading the models, the scheduler thread's), libgomp counts more of its
//   threads than cores and stops spinning between regions, so every region
//   waits for a futex wake-up of its workers: about 57 µs more per region
//   on the 2-core development VM, and the 28M Llama's one-sequence step in
//   the server took up to twice as long as the engine alone (8.8-9.2
//   against 4.3-5.0 ms, 2026-12-04; docs/benchmarks.md). Work done once,
//   like loading, therefore runs on a thread that ends
//   (RunOnShortLivedThread), and its pool ends with it.
#ifndef ATTNSERVE_ENGINE_CORE_ENGINE_THREAD_H_
#define ATTNSERVE_ENGINE_CORE_ENGINE_THREAD_H_

#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "engine/core/build_info.h"

namespace attnserve {

// Runs fn() on a new thread that uses `threads` OpenMP threads (0 = the
// runtime default), waits for it, and returns what fn returned. The thread,
// and with it any OpenMP worker pool fn's parallel regions made, is gone
// when this returns.
template <typename Fn>
std::invoke_result_t<Fn&> RunOnShortLivedThread(int threads, Fn&& fn) {
  std::optional<std::invoke_result_t<Fn&>> result;
  std::thread worker([&] {
    SetEngineThreads(threads);
    result.emplace(fn());
  });
  worker.join();
  return std::move(*result);
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_ENGINE_THREAD_H_
