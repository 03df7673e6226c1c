// Reads this process's memory and start time, and one thread's scheduler
// statistics, from /proc.
#ifndef ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_
#define ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace attnserve {

struct ProcessStats {
  int64_t resident_bytes = 0;
  int64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // Unix time the process started
};

// Thread-safe; reads /proc/self/statm and /proc/self/stat. Fields it cannot
// read stay 0.
ProcessStats ReadProcessStats();

// A thread's time on a CPU, and time it was runnable but waited for a CPU
// (the kernel's run-queue delay: other threads or processes had the cores,
// or a cgroup quota was spent).
struct ThreadSchedStats {
  double cpu_seconds = 0;
  double wait_seconds = 0;
};

// From the text of /proc/<pid>/task/<tid>/schedstat ("RUN_NS WAIT_NS
// SLICES"); nullopt if it is not that.
std::optional<ThreadSchedStats> ParseSchedstat(absl::string_view text);

// Thread `tid` of this process; nullopt where the kernel has no schedstat
// (built without CONFIG_SCHED_INFO) or the thread is gone.
std::optional<ThreadSchedStats> ReadThreadSchedStats(int tid);

// The calling thread's kernel id (gettid).
int CurrentThreadId();

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_
