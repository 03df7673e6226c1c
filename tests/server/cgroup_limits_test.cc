// The container limits behind --threads=0 and the start-up memory check:
// cgroup v1 and v2 CPU quotas and memory limits found through
// /proc/self/cgroup and /proc/self/mountinfo, over fake cgroup folders.
#include "server/cgroup_limits.h"

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test standing in for /sys/fs/cgroup.
class CgroupLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            absl::StrCat("cgroup_limits_", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                         getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes `text` to root_/relative, making its folders.
  void Write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string Dir(const std::string& relative) const { return (root_ / relative).string(); }

  // A mountinfo line for a cgroup2 mount of hierarchy part `root` at `mountpoint`.
  static std::string V2Mount(const std::string& root, const std::string& mountpoint) {
    return absl::StrCat("35 24 0:30 ", root, " ", mountpoint,
                        " rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n");
  }
  static std::string V1Mount(const std::string& root, const std::string& mountpoint, const std::string& controllers) {
    return absl::StrCat("32 31 0:29 ", root, " ", mountpoint, " rw,relatime - cgroup cgroup rw,", controllers, "\n");
  }
  static constexpr char kProcMount[] = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n";

  // `limit` was found, with `value`, in root_/`relative_file`.
  void ExpectLimit(const std::optional<CgroupLimit>& limit, double value, const std::string& relative_file) const {
    ASSERT_TRUE(limit.has_value());
    EXPECT_DOUBLE_EQ(limit->value, value);
    EXPECT_EQ(limit->file, Dir(relative_file));
  }

  fs::path root_;
};

TEST_F(CgroupLimitsTest, V2QuotaOfTheProcessCgroup) {
  Write("v2/kubepods/pod1/cpu.max", "150000 100000\n");
  const auto quota = FindCgroupCpuQuota("0::/kubepods/pod1\n", absl::StrCat(kProcMount, V2Mount("/", Dir("v2"))));
  ExpectLimit(quota, 1.5, "v2/kubepods/pod1/cpu.max");
}

TEST_F(CgroupLimitsTest, V2TightestAncestorWins) {
  Write("v2/cpu.max", "max 100000\n");
  Write("v2/kubepods/cpu.max", "200000 100000\n");
  Write("v2/kubepods/pod1/cpu.max", "max 100000\n");
  Write("v2/kubepods/pod1/ctr/cpu.max", "400000 100000\n");
  const auto quota = FindCgroupCpuQuota("0::/kubepods/pod1/ctr\n", V2Mount("/", Dir("v2")));
  ExpectLimit(quota, 2.0, "v2/kubepods/cpu.max");
}

TEST_F(CgroupLimitsTest, V2NoQuotaAnywhere) {
  Write("v2/a/cpu.max", "max 100000\n");
  EXPECT_FALSE(FindCgroupCpuQuota("0::/a\n", V2Mount("/", Dir("v2"))).has_value());
  // A cgroup without a cpu.max at all (the cpu controller not enabled there).
  fs::create_directories(root_ / "v2" / "b");
  EXPECT_FALSE(FindCgroupCpuQuota("0::/b\n", V2Mount("/", Dir("v2"))).has_value());
}

TEST_F(CgroupLimitsTest, V2NamespacedContainerSeesItsOwnCgroupAtTheMountPoint) {
  // Inside a container with a cgroup namespace: the process is at "/" and
  // the mount point is its own cgroup.
  Write("v2/cpu.max", "100000 100000\n");
  const auto quota = FindCgroupCpuQuota("0::/\n", V2Mount("/", Dir("v2")));
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(quota->value, 1.0);
}

TEST_F(CgroupLimitsTest, V1CpuHierarchyMountedFromAContainerRoot) {
  // Docker on cgroup v1 without a namespace: /proc/self/cgroup names the
  // host path, and the mount shows that path at the mount point.
  Write("cpu/cpu.cfs_quota_us", "50000\n");
  Write("cpu/cpu.cfs_period_us", "100000\n");
  const auto quota = FindCgroupCpuQuota("5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
                                        V1Mount("/docker/abc", Dir("cpu"), "cpu,cpuacct"));
  ExpectLimit(quota, 0.5, "cpu/cpu.cfs_quota_us");
}

TEST_F(CgroupLimitsTest, V1NoLimitIsMinusOne) {
  Write("cpu/job/cpu.cfs_quota_us", "-1\n");
  Write("cpu/job/cpu.cfs_period_us", "100000\n");
  Write("cpu/cpu.cfs_quota_us", "-1\n");
  Write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(FindCgroupCpuQuota("1:cpu:/job\n", V1Mount("/", Dir("cpu"), "cpu")).has_value());
}

TEST_F(CgroupLimitsTest, HybridHostTakesTheV1CpuQuota) {
  // The layout of this project's development VM: v1 controllers, and a v2
  // hierarchy at /sys/fs/cgroup/unified with no cpu controller.
  Write("cpu/job/cpu.cfs_quota_us", "300000\n");
  Write("cpu/job/cpu.cfs_period_us", "100000\n");
  fs::create_directories(root_ / "unified");
  const std::string mountinfo = absl::StrCat(kProcMount, V1Mount("/", Dir("cpu"), "cpu"),
                                             V1Mount("/", Dir("cpuacct"), "cpuacct"), V2Mount("/", Dir("unified")));
  const auto quota = FindCgroupCpuQuota("9:name=systemd:/\n2:cpuacct:/\n1:cpu:/job\n0::/\n", mountinfo);
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(quota->value, 3.0);
}

TEST_F(CgroupLimitsTest, ACpuacctOnlyHierarchyIsNotTheCpuOne) {
  Write("acct/cpu.cfs_quota_us", "100000\n");
  Write("acct/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(FindCgroupCpuQuota("2:cpuacct:/\n", V1Mount("/", Dir("acct"), "cpuacct")).has_value());
}

TEST_F(CgroupLimitsTest, EscapedMountPointAndMalformedFiles) {
  Write("with space/cpu.max", "250000 100000\n");
  const std::string escaped = Dir("with\\040space");
  const auto quota = FindCgroupCpuQuota("0::/\n", V2Mount("/", escaped));
  ASSERT_TRUE(quota.has_value());
  EXPECT_DOUBLE_EQ(quota->value, 2.5);

  Write("bad/cpu.max", "lots 100000\n");
  EXPECT_FALSE(FindCgroupCpuQuota("0::/\n", V2Mount("/", Dir("bad"))).has_value());
  Write("zero/cpu.max", "100000 0\n");
  EXPECT_FALSE(FindCgroupCpuQuota("0::/\n", V2Mount("/", Dir("zero"))).has_value());
  // Nothing mounted, or lines that are not cgroup lines.
  EXPECT_FALSE(FindCgroupCpuQuota("0::/\n", kProcMount).has_value());
  EXPECT_FALSE(FindCgroupCpuQuota("garbage\n\n", V2Mount("/", Dir("bad"))).has_value());
}

TEST_F(CgroupLimitsTest, V2MemoryMaxTightestUpTheHierarchy) {
  Write("v2/kubepods/memory.max", "671088640\n");
  Write("v2/kubepods/pod1/memory.max", "max\n");
  const auto limit = FindCgroupMemoryLimit("0::/kubepods/pod1\n", V2Mount("/", Dir("v2")));
  ExpectLimit(limit, 671088640.0, "v2/kubepods/memory.max");
  // The CPU quota of the same tree is unset.
  EXPECT_FALSE(FindCgroupCpuQuota("0::/kubepods/pod1\n", V2Mount("/", Dir("v2"))).has_value());
}

TEST_F(CgroupLimitsTest, V1MemoryLimitAndItsNoLimitValue) {
  Write("mem/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  Write("mem/job/memory.limit_in_bytes", "268435456\n");
  const std::string mountinfo = absl::StrCat(V1Mount("/", Dir("cpu"), "cpu"), V1Mount("/", Dir("mem"), "memory"));
  const auto limit = FindCgroupMemoryLimit("4:memory:/job\n1:cpu:/\n0::/\n", mountinfo);
  ExpectLimit(limit, 268435456.0, "mem/job/memory.limit_in_bytes");
  EXPECT_FALSE(FindCgroupMemoryLimit("4:memory:/\n", mountinfo).has_value());
}

TEST(CheckWeightsAndKvFitTest, RefusesOnlyWhatCanNeverFit) {
  const CgroupLimit limit{1000.0, "/sys/fs/cgroup/memory.max"};
  EXPECT_TRUE(CheckWeightsAndKvFit(300, 600, limit).ok());
  EXPECT_TRUE(CheckWeightsAndKvFit(1LL << 40, 1LL << 40, std::nullopt).ok());  // no limit
  const absl::Status s = CheckWeightsAndKvFit(300, 700, limit);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  for (const char* part : {"--kv-cache-bytes", "300 bytes", "700 bytes", "1000 bytes", "/sys/fs/cgroup/memory.max"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " not in: " << s.message();
  }
}

TEST(CgroupCpuThreadsTest, QuotaRoundsDownAndCapsTheAffinity) {
  EXPECT_EQ(ThreadsForCpuBudget(64, 2.0), 2);
  EXPECT_EQ(ThreadsForCpuBudget(64, 1.5), 1);
  EXPECT_EQ(ThreadsForCpuBudget(64, 0.25), 1);  // never zero threads
  EXPECT_EQ(ThreadsForCpuBudget(2, 8.0), 2);    // a quota above the CPUs it may run on
  EXPECT_EQ(ThreadsForCpuBudget(8, std::nullopt), 8);
  EXPECT_EQ(ThreadsForCpuBudget(0, std::nullopt), 1);
}

TEST(CgroupCpuThreadsTest, AffinityCountIsThisProcessMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(AffinityCpuCount(), CPU_COUNT(&set));
}

}  // namespace
}  // namespace attnserve
