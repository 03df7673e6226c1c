#include "server/metrics/process_stats.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace attnserve {
namespace {

// Boot time from /proc/stat ("btime <unix seconds>").
double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double btime = 0;
      in >> btime;
      return btime;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  const long page = sysconf(_SC_PAGESIZE);
  {
    std::ifstream statm("/proc/self/statm");
    int64_t size_pages = 0, resident_pages = 0;
    if (statm >> size_pages >> resident_pages) {
      stats.virtual_bytes = size_pages * page;
      stats.resident_bytes = resident_pages * page;
    }
  }
  {
    std::ifstream stat("/proc/self/stat");
    std::string line;
    std::getline(stat, line);
    // Field 2 (comm) may hold spaces; parse after the last ')'. starttime is
    // field 22, i.e. the 20th field after comm.
    const size_t close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(line.substr(close + 2));
      std::string field;
      unsigned long long start_ticks = 0;
      for (int i = 3; i <= 22 && rest >> field; ++i) {
        if (i == 22) start_ticks = std::stoull(field);
      }
      const long hz = sysconf(_SC_CLK_TCK);
      if (hz > 0) stats.start_time_seconds = BootTimeSeconds() + static_cast<double>(start_ticks) / hz;
    }
  }
  return stats;
}

std::optional<ThreadSchedStats> ParseSchedstat(absl::string_view text) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  uint64_t run_ns = 0, wait_ns = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[0], &run_ns) || !absl::SimpleAtoi(fields[1], &wait_ns)) {
    return std::nullopt;
  }
  return ThreadSchedStats{static_cast<double>(run_ns) * 1e-9, static_cast<double>(wait_ns) * 1e-9};
}

std::optional<ThreadSchedStats> ReadThreadSchedStats(int tid) {
  std::ifstream in(absl::StrCat("/proc/self/task/", tid, "/schedstat"));
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return ParseSchedstat(line);
}

int CurrentThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

}  // namespace attnserve
