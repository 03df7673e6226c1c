// The container's limits as the kernel enforces them (cgroup CPU quota and
// memory limit), for the default engine thread count (--threads=0) and the
// start-up check that the weights and the KV cache fit in memory.
//
// Why the CPU quota: OpenMP's default is the CPUs in the process's affinity
// mask, which in a container is usually the whole node: a pod limited to 2
// CPUs on a 64-core node would run 64 compute threads on a quota of 2, and the
// kernel stops the whole pod for the rest of each 100 ms period once the quota
// is spent (2 threads on a quota of one CPU cost the 28M Llama 13-31 % of its
// tokens/s, docs/operations.md "CPU"). Container runtimes set the limit as a
// cgroup CPU quota, not as an affinity mask, so the quota is read here (as
// Hugging Face TEI does through Rust's num_cpus, and as the JVM and Go's
// automaxprocs do). A cpuset limit needs nothing here: it shows in the
// affinity mask.
//
// Why the memory limit: the KV cache's pool is reserved at start but its pages
// are touched only as sequences fill it, so a pool larger than the container's
// memory runs fine until load grows and then the kernel kills the process
// mid-stream. Checked at start instead, the same mistake is an error that
// names the flag.
//
// Both limits are the tightest on the way from the process's own cgroup up to
// the top of the hierarchy that is visible. cgroup v2: `cpu.max` ("QUOTA
// PERIOD" or "max PERIOD") and `memory.max` (bytes or "max"). cgroup v1: the
// `cpu` hierarchy's `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`,
// and the `memory` hierarchy's `memory.limit_in_bytes` (a value near 2^63 for
// none). Where both versions are mounted (a hybrid host) the tighter counts.
#ifndef ATTNSERVE_SERVER_CGROUP_LIMITS_H_
#define ATTNSERVE_SERVER_CGROUP_LIMITS_H_

#include <optional>
#include <string>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace attnserve {

struct CgroupLimit {
  double value = 0;  // CPUs (quota / period, e.g. 1.5) or bytes
  std::string file;  // the file the binding limit came from, for messages
};

// The tightest CPU quota / memory limit of the cgroup that /proc/self/cgroup's
// contents name, located through /proc/self/mountinfo's contents (which give
// the mount points and, for a container's namespaced view, the part of the
// hierarchy mounted there); the limit files themselves are read from those
// mount points. nullopt when no limit is set or nothing can be read (no
// error: an unlimited or unknown limit leaves the decision to the caller).
std::optional<CgroupLimit> FindCgroupCpuQuota(absl::string_view proc_self_cgroup,
                                              absl::string_view proc_self_mountinfo);
std::optional<CgroupLimit> FindCgroupMemoryLimit(absl::string_view proc_self_cgroup,
                                                 absl::string_view proc_self_mountinfo);

// The same from this process's own /proc/self files.
std::optional<CgroupLimit> ReadCgroupCpuQuota();
std::optional<CgroupLimit> ReadCgroupMemoryLimit();

// CPUs in this thread's affinity mask (sched_getaffinity), at least 1.
int AffinityCpuCount();

// Threads for a CPU budget: the affinity count, capped by the quota rounded
// down (1.5 CPUs run 1 thread, so the threads never outrun the quota and the
// fraction is left to the server's other threads), at least 1.
int ThreadsForCpuBudget(int affinity_cpus, std::optional<double> quota_cpus);

// OK when the weights and the KV cache's pool fit under the memory limit (or
// there is none); else RESOURCE_EXHAUSTED naming --kv-cache-bytes, both sizes
// and the limit's file. Only a sure failure is refused: the process itself
// and the activations need more on top, which the operator sizes
// (docs/operations.md "Sizing").
absl::Status CheckWeightsAndKvFit(int64_t weight_bytes, int64_t kv_cache_bytes,
                                  const std::optional<CgroupLimit>& memory_limit);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CGROUP_LIMITS_H_
