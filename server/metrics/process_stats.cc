#include "server/metrics/process_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace attnserve
