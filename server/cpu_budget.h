// How many CPUs this process may use, for the default engine thread count
// (--threads=0).
//
// Why: OpenMP's default is the CPUs in the process's affinity mask, which in a
// container is usually the whole node: a pod limited to 2 CPUs on a 64-core
// node would run 64 compute threads on a quota of 2, and the kernel stops the
// whole pod for the rest of each 100 ms period once the quota is spent (2
// threads on a quota of one CPU cost the 28M Llama 13-31 % of its tokens/s,
// docs/operations.md "CPU"). Container runtimes set the
// limit as a cgroup CPU quota, not as an affinity mask, so the quota is read
// here (as Hugging Face TEI does through Rust's num_cpus, and as the JVM and Go's
// automaxprocs do).
//
// The quota is the tightest one on the way from the process's own cgroup up to
// the top of the hierarchy that is visible: cgroup v2's `cpu.max`
// ("QUOTA PERIOD" or "max PERIOD"), or on a cgroup v1 `cpu` hierarchy
// `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`. Where both are
// mounted (a hybrid host) the tighter counts. A cpuset limit needs nothing
// here: it shows in the affinity mask.
#ifndef ATTNSERVE_SERVER_CPU_BUDGET_H_
#define ATTNSERVE_SERVER_CPU_BUDGET_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace attnserve {

struct CgroupCpuQuota {
  double cpus = 0;   // quota / period, e.g. 1.5
  std::string file;  // the file the binding quota came from, for the log
};

// The tightest CPU quota of the cgroup that /proc/self/cgroup's contents name,
// located through /proc/self/mountinfo's contents (which give the mount points
// and, for a container's namespaced view, the part of the hierarchy mounted
// there); the quota files themselves are read from those mount points.
// nullopt when no quota is set or nothing can be read (no error: an unlimited
// or unknown quota leaves the affinity mask to decide).
std::optional<CgroupCpuQuota> FindCgroupCpuQuota(absl::string_view proc_self_cgroup,
                                                 absl::string_view proc_self_mountinfo);

// The same from this process's own /proc/self files.
std::optional<CgroupCpuQuota> ReadCgroupCpuQuota();

// CPUs in this thread's affinity mask (sched_getaffinity), at least 1.
int AffinityCpuCount();

// Threads for a CPU budget: the affinity count, capped by the quota rounded
// down (1.5 CPUs run 1 thread, so the threads never outrun the quota and the
// fraction is left to the server's other threads), at least 1.
int ThreadsForCpuBudget(int affinity_cpus, std::optional<double> quota_cpus);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CPU_BUDGET_H_
