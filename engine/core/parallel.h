// Parallel regions that are only entered when the work is worth it.
//
// `#pragma omp parallel if (false)` still calls into libgomp (GOMP_parallel
// with a team of one), and libgomp then makes futex system calls on every
// call. On stories260K, where every per-step op is tiny, that was about a
// sixth of the scheduler thread's time (perf, 2026-12-03: libgomp's futex
// path 16 % of the thread's samples with no region actually parallel). These
// helpers run the body inline below the threshold, never touching libgomp.
#ifndef ATTNSERVE_ENGINE_CORE_PARALLEL_H_
#define ATTNSERVE_ENGINE_CORE_PARALLEL_H_

#include <omp.h>

#include <cstdint>

namespace attnserve {

// Work (multiply-adds, or elements touched) below which a parallel region
// costs more than it saves: its fork and join, and on a busy machine a
// barrier waiting for a descheduled thread.
inline constexpr int64_t kParallelMinMacs = int64_t{1} << 18;

// body(i) for i in [0, n): statically split over the OpenMP threads when
// `parallel`, else a plain loop on this thread.
template <typename Body>
void ParallelFor(int64_t n, bool parallel, Body&& body) {
  if (!parallel || n <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// body(thread, threads) once per OpenMP thread when `parallel`, else
// body(0, 1) on this thread.
template <typename Body>
void ParallelRegion(bool parallel, Body&& body) {
  if (!parallel) {
    body(0, 1);
    return;
  }
#pragma omp parallel
  body(omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_PARALLEL_H_
