// Reads this process's memory and start time from /proc.
#ifndef ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_
#define ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_

#include <cstdint>

namespace attnserve {

struct ProcessStats {
  int64_t resident_bytes = 0;
  int64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // Unix time the process started
};

// Thread-safe; reads /proc/self/statm and /proc/self/stat. Fields it cannot
// read stay 0.
ProcessStats ReadProcessStats();

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_METRICS_PROCESS_STATS_H_
