"""--threads=0 on the real binary: the engine runs as many threads as the
process may use, its CPU affinity capped by a cgroup CPU quota (a container's
CPU limit), not the node's core count; OMP_NUM_THREADS, when set, wins.

The quota test makes a real cgroup (v1 `cpu` hierarchy or v2 with the cpu
controller) with a quota of one CPU and starts the server inside it. That
needs root and a writable cgroup mount; where either is missing it is skipped
with the reason, and the unit tests (tests/server/cpu_budget_test.cc) still
cover the quota's discovery over fake cgroup folders."""
import os
import re
import time

import pytest

from conftest import ServerProcess, http_get

PERIOD_US = 100_000


def engine_threads(server) -> int:
    _, body = http_get(server.url("/metrics"))
    m = re.search(r'^attnserve_build_info\{[^}]*threads="(\d+)"', body.decode(), re.M)
    assert m, "attnserve_build_info has no threads label"
    return int(m.group(1))


def cgroup_mounts():
    """(v1 cpu hierarchy mount point or None, cgroup2 mount point or None)."""
    v1 = v2 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            fstype, superopts = fields[dash + 1], fields[dash + 3].split(",")
            if fstype == "cgroup" and "cpu" in superopts:
                v1 = fields[4]
            elif fstype == "cgroup2":
                v2 = fields[4]
    return v1, v2


class CpuQuotaCgroup:
    """A fresh cgroup with a CPU quota of `cpus`; removed on close()."""

    def __init__(self, cpus: float):
        v1, v2 = cgroup_mounts()
        name = f"attnserve-test-{os.getpid()}-{time.monotonic_ns()}"
        try:
            if v1:
                self.dir = os.path.join(v1, name)
                os.mkdir(self.dir)
                self._write("cpu.cfs_period_us", str(PERIOD_US))
                self._write("cpu.cfs_quota_us", str(int(cpus * PERIOD_US)))
            elif v2:
                with open(os.path.join(v2, "cgroup.controllers")) as f:
                    if "cpu" not in f.read().split():
                        pytest.skip("cgroup v2 here has no cpu controller: cannot set a CPU quota")
                with open(os.path.join(v2, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu")
                self.dir = os.path.join(v2, name)
                os.mkdir(self.dir)
                self._write("cpu.max", f"{int(cpus * PERIOD_US)} {PERIOD_US}")
            else:
                pytest.skip("no cgroup mount with the cpu controller: cannot set a CPU quota")
        except PermissionError as e:
            pytest.skip(f"cannot create a cgroup with a CPU quota here (needs root and a writable cgroup mount): {e}")
        except OSError as e:
            pytest.skip(f"cannot create a cgroup with a CPU quota here: {e}")

    def _write(self, file: str, text: str):
        with open(os.path.join(self.dir, file), "w") as f:
            f.write(text)

    def enter(self):
        """For Popen's preexec_fn: moves the child into this cgroup before exec."""
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def close(self):
        # The server has exited; its cgroup empties once the kernel has reaped it.
        for _ in range(100):
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.05)
        os.rmdir(self.dir)


@pytest.fixture
def one_cpu_cgroup():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU in the affinity mask: a quota of one CPU would not change the thread count")
    cgroup = CpuQuotaCgroup(1.0)
    yield cgroup
    cgroup.close()


def test_threads_follow_a_cgroup_cpu_quota(one_cpu_cgroup):
    server = ServerProcess(env_drop=("OMP_NUM_THREADS",), preexec_fn=one_cpu_cgroup.enter)
    try:
        assert engine_threads(server) == 1
        assert "engine threads for a CPU quota of 1 CPUs" in server.output()
    finally:
        server.close()


def test_omp_num_threads_wins_over_the_quota(one_cpu_cgroup):
    server = ServerProcess(env={"OMP_NUM_THREADS": "2"}, preexec_fn=one_cpu_cgroup.enter)
    try:
        assert engine_threads(server) == 2
    finally:
        server.close()


def test_threads_flag_wins_over_the_quota(one_cpu_cgroup):
    server = ServerProcess("--threads=2", env_drop=("OMP_NUM_THREADS",), preexec_fn=one_cpu_cgroup.enter)
    try:
        assert engine_threads(server) == 2
    finally:
        server.close()


def test_threads_without_a_quota_are_the_affinity_mask():
    # This test's own process is outside any quota the tests made; where the
    # machine itself sets one (a container), the quota counts instead.
    server = ServerProcess(env_drop=("OMP_NUM_THREADS",))
    try:
        log = server.output()
        threads = engine_threads(server)
        if "no cgroup CPU quota" in log:
            assert threads == len(os.sched_getaffinity(0))
        else:
            assert "engine threads for a CPU quota" in log
            assert 1 <= threads <= len(os.sched_getaffinity(0))
    finally:
        server.close()
