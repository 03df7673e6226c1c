#include "server/cgroup_limits.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

// Where a limit lives: the controller's name (its v1 hierarchy is the one
// mounted with that option), the file that holds it in each version, and how
// to read one folder's value (nullopt: no limit set there).
struct Controller {
  absl::string_view name;
  absl::string_view v2_file;
  absl::string_view v1_file;
  std::optional<double> (*read_v2)(const std::string& dir);
  std::optional<double> (*read_v1)(const std::string& dir);
};

std::optional<int64_t> ReadInt(const std::string& path) {
  const std::optional<std::string> text = ReadSmallFile(path);
  int64_t value = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) return std::nullopt;
  return value;
}

// cpu.max: "QUOTA PERIOD", or "max PERIOD" for no limit.
std::optional<double> CpuMax(const std::string& dir) {
  const std::optional<std::string> text = ReadSmallFile(dir + "/cpu.max");
  if (!text) return std::nullopt;
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &quota) || !absl::SimpleAtoi(parts[1], &period)) {
    return std::nullopt;
  }
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

// cpu.cfs_quota_us (-1: no limit) over cpu.cfs_period_us.
std::optional<double> CfsQuota(const std::string& dir) {
  const std::optional<int64_t> quota = ReadInt(dir + "/cpu.cfs_quota_us");
  const std::optional<int64_t> period = ReadInt(dir + "/cpu.cfs_period_us");
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

// memory.max: bytes, or "max" for no limit.
std::optional<double> MemoryMax(const std::string& dir) {
  const std::optional<int64_t> bytes = ReadInt(dir + "/memory.max");
  if (!bytes || *bytes <= 0) return std::nullopt;
  return static_cast<double>(*bytes);
}

// memory.limit_in_bytes: v1 writes "no limit" as the largest page-aligned
// value (9223372036854771712 on x86-64), so anything from 2^62 up is none.
std::optional<double> MemoryLimitInBytes(const std::string& dir) {
  const std::optional<int64_t> bytes = ReadInt(dir + "/memory.limit_in_bytes");
  if (!bytes || *bytes <= 0 || *bytes >= (int64_t{1} << 62)) return std::nullopt;
  return static_cast<double>(*bytes);
}

constexpr Controller kCpu{"cpu", "cpu.max", "cpu.cfs_quota_us", &CpuMax, &CfsQuota};
constexpr Controller kMemory{"memory", "memory.max", "memory.limit_in_bytes", &MemoryMax, &MemoryLimitInBytes};

// The mount of the cgroup v2 hierarchy (v2), or of the v1 hierarchy that
// carries `controller`.
std::optional<CgroupMount> FindMount(absl::string_view mountinfo, bool v2, absl::string_view controller) {
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const absl::string_view fstype = dash[1];
    bool match = false;
    if (v2) {
      match = fstype == "cgroup2";
    } else if (fstype == "cgroup") {
      for (absl::string_view option : absl::StrSplit(dash[3], ',')) match = match || option == controller;
    }
    if (match) return CgroupMount{UnescapeMountPath(fields[3]), UnescapeMountPath(fields[4])};
  }
  return std::nullopt;
}

// The tightest limit from the process's cgroup folder up to the mount point.
std::optional<CgroupLimit> TightestIn(const CgroupMount& mount, absl::string_view cgroup_path,
                                      const Controller& controller, bool v2) {
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

  std::optional<CgroupLimit> best;
  std::string dir = top + relative;
  for (;;) {
    const std::optional<double> value = v2 ? controller.read_v2(dir) : controller.read_v1(dir);
    if (value && (!best || *value < best->value)) {
      best = CgroupLimit{*value, absl::StrCat(dir, "/", v2 ? controller.v2_file : controller.v1_file)};
    }
    if (dir.size() <= top.size()) break;
    dir.resize(dir.rfind('/'));
    if (dir.size() < top.size()) dir = top;
  }
  return best;
}

std::optional<CgroupLimit> FindLimit(absl::string_view proc_self_cgroup, absl::string_view proc_self_mountinfo,
                                     const Controller& controller) {
  std::optional<CgroupLimit> best;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // ID:CONTROLLERS:PATH; the path may itself hold colons.
    const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    bool v2 = parts[0] == "0" && parts[1].empty();
    bool v1 = false;
    for (absl::string_view c : absl::StrSplit(parts[1], ',')) v1 = v1 || c == controller.name;
    if (!v1 && !v2) continue;
    const std::optional<CgroupMount> mount = FindMount(proc_self_mountinfo, v2, controller.name);
    if (!mount) continue;
    std::optional<CgroupLimit> limit = TightestIn(*mount, parts[2], controller, v2);
    if (limit && (!best || limit->value < best->value)) best = std::move(limit);
  }
  return best;
}

std::optional<CgroupLimit> ReadLimit(const Controller& controller) {
  const std::optional<std::string> cgroup = ReadSmallFile("/proc/self/cgroup");
  const std::optional<std::string> mountinfo = ReadSmallFile("/proc/self/mountinfo");
  if (!cgroup || !mountinfo) return std::nullopt;
  return FindLimit(*cgroup, *mountinfo, controller);
}

}  // namespace

std::optional<CgroupLimit> FindCgroupCpuQuota(absl::string_view proc_self_cgroup,
                                              absl::string_view proc_self_mountinfo) {
  return FindLimit(proc_self_cgroup, proc_self_mountinfo, kCpu);
}

std::optional<CgroupLimit> FindCgroupMemoryLimit(absl::string_view proc_self_cgroup,
                                                 absl::string_view proc_self_mountinfo) {
  return FindLimit(proc_self_cgroup, proc_self_mountinfo, kMemory);
}

std::optional<CgroupLimit> ReadCgroupCpuQuota() { return ReadLimit(kCpu); }
std::optional<CgroupLimit> ReadCgroupMemoryLimit() { return ReadLimit(kMemory); }

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

absl::Status CheckWeightsAndKvFit(int64_t weight_bytes, int64_t kv_cache_bytes,
                                  const std::optional<CgroupLimit>& memory_limit) {
  if (!memory_limit) return absl::OkStatus();
  const int64_t needed = weight_bytes + kv_cache_bytes;
  const auto limit = static_cast<int64_t>(memory_limit->value);
  if (needed < limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "memory: the weights (", weight_bytes, " bytes) and the KV cache (", kv_cache_bytes,
      " bytes, --kv-cache-bytes) need ", needed, " bytes, not less than the memory limit of ", limit, " bytes (",
      memory_limit->file, "), before the process's own memory and the activations; lower --kv-cache-bytes or "
      "raise the memory limit"));
}

}  // namespace attnserve
