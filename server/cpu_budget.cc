#include "server/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace attnserve {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// mountinfo escapes a space, tab, newline and backslash in paths as \ooo.
std::string UnescapeMountPath(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const absl::string_view digits = s.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

struct CgroupMount {
  std::string root;        // the part of the hierarchy mounted here ("/" unless namespaced or bind-mounted)
  std::string mountpoint;  // where it is mounted
};

enum class Hierarchy { kV2, kV1Cpu };

// The mount of the cgroup v2 hierarchy, or of the v1 hierarchy that carries
// the cpu controller.
std::optional<CgroupMount> FindMount(absl::string_view mountinfo, Hierarchy which) {
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const absl::string_view fstype = dash[1];
    bool match = false;
    if (which == Hierarchy::kV2) {
      match = fstype == "cgroup2";
    } else if (fstype == "cgroup") {
      for (absl::string_view option : absl::StrSplit(dash[3], ',')) match = match || option == "cpu";
    }
    if (match) return CgroupMount{UnescapeMountPath(fields[3]), UnescapeMountPath(fields[4])};
  }
  return std::nullopt;
}

// The quota in CPUs from one cgroup folder, if it sets one.
std::optional<double> QuotaIn(const std::string& dir, Hierarchy which) {
  if (which == Hierarchy::kV2) {
    const std::optional<std::string> text = ReadSmallFile(dir + "/cpu.max");
    if (!text) return std::nullopt;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
    int64_t quota = 0, period = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &quota) || !absl::SimpleAtoi(parts[1], &period)) {
      return std::nullopt;  // "max PERIOD" (no limit) or unreadable
    }
    if (quota <= 0 || period <= 0) return std::nullopt;
    return static_cast<double>(quota) / static_cast<double>(period);
  }
  const std::optional<std::string> quota_text = ReadSmallFile(dir + "/cpu.cfs_quota_us");
  const std::optional<std::string> period_text = ReadSmallFile(dir + "/cpu.cfs_period_us");
  int64_t quota = 0, period = 0;
  if (!quota_text || !period_text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*quota_text), &quota) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(*period_text), &period)) {
    return std::nullopt;
  }
  if (quota <= 0 || period <= 0) return std::nullopt;  // -1: no limit
  return static_cast<double>(quota) / static_cast<double>(period);
}

// The tightest quota from the process's cgroup folder up to the mount point.
std::optional<CgroupCpuQuota> TightestQuota(const CgroupMount& mount, absl::string_view cgroup_path,
                                            Hierarchy which) {
  // The process's path is relative to the hierarchy's top; the mount shows
  // the hierarchy from `root` down. Outside that part (a view that does not
  // show the process's own cgroup), only the mount point's own folder is known.
  std::string relative;
  if (mount.root == "/") {
    relative = std::string(cgroup_path);
  } else if (absl::StartsWith(cgroup_path, mount.root) &&
             (cgroup_path.size() == mount.root.size() || cgroup_path[mount.root.size()] == '/')) {
    relative = std::string(cgroup_path.substr(mount.root.size()));
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  std::string top = mount.mountpoint;
  while (top.size() > 1 && top.back() == '/') top.pop_back();

  std::optional<CgroupCpuQuota> best;
  std::string dir = top + relative;
  for (;;) {
    if (std::optional<double> cpus = QuotaIn(dir, which); cpus && (!best || *cpus < best->cpus)) {
      best = CgroupCpuQuota{*cpus, dir + (which == Hierarchy::kV2 ? "/cpu.max" : "/cpu.cfs_quota_us")};
    }
    if (dir.size() <= top.size()) break;
    dir.resize(dir.rfind('/'));
    if (dir.size() < top.size()) dir = top;
  }
  return best;
}

}  // namespace

std::optional<CgroupCpuQuota> FindCgroupCpuQuota(absl::string_view proc_self_cgroup,
                                                 absl::string_view proc_self_mountinfo) {
  std::optional<CgroupCpuQuota> best;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // ID:CONTROLLERS:PATH; the path may itself hold colons.
    const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    std::optional<Hierarchy> which;
    if (parts[0] == "0" && parts[1].empty()) which = Hierarchy::kV2;
    for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
      if (controller == "cpu") which = Hierarchy::kV1Cpu;
    }
    if (!which) continue;
    const std::optional<CgroupMount> mount = FindMount(proc_self_mountinfo, *which);
    if (!mount) continue;
    std::optional<CgroupCpuQuota> quota = TightestQuota(*mount, parts[2], *which);
    if (quota && (!best || quota->cpus < best->cpus)) best = std::move(quota);
  }
  return best;
}

std::optional<CgroupCpuQuota> ReadCgroupCpuQuota() {
  const std::optional<std::string> cgroup = ReadSmallFile("/proc/self/cgroup");
  const std::optional<std::string> mountinfo = ReadSmallFile("/proc/self/mountinfo");
  if (!cgroup || !mountinfo) return std::nullopt;
  return FindCgroupCpuQuota(*cgroup, *mountinfo);
}

int AffinityCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int ThreadsForCpuBudget(int affinity_cpus, std::optional<double> quota_cpus) {
  int threads = std::max(1, affinity_cpus);
  if (quota_cpus) threads = std::min(threads, static_cast<int>(std::floor(*quota_cpus)));
  return std::max(1, threads);
}

}  // namespace attnserve
