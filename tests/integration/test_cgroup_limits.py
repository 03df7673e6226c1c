"""Container limits on the real binary.

- --threads=0: the engine runs as many threads as the process may use, its
  CPU affinity capped by a cgroup CPU quota (a container's CPU limit), not the
  node's core count; OMP_NUM_THREADS or --threads, when set, win.
- Start-up: weights plus a KV cache pool that cannot fit under the cgroup
  memory limit are refused with an error naming --kv-cache-bytes, instead of
  running until the pool fills and the kernel kills the process.

The tests make real cgroups (cgroup v1 hierarchies, or v2 with the controller
enabled) and start the server inside them. That needs root and a writable
cgroup mount; where either is missing they are skipped with the reason, and
the unit tests (tests/server/cgroup_limits_test.cc) still cover finding the
limits over fake cgroup folders."""
import os
import re
import subprocess
import time

import pytest

from conftest import BIN, DEV, REPO, ServerProcess, free_port, http_get

PERIOD_US = 100_000
DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"


def engine_threads(server) -> int:
    _, body = http_get(server.url("/metrics"))
    m = re.search(r'^attnserve_build_info\{[^}]*threads="(\d+)"', body.decode(), re.M)
    assert m, "attnserve_build_info has no threads label"
    return int(m.group(1))


def cgroup_mounts(controller: str):
    """(the v1 hierarchy mount carrying `controller` or None, the cgroup2 mount or None)."""
    v1 = v2 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            fstype, superopts = fields[dash + 1], fields[dash + 3].split(",")
            if fstype == "cgroup" and controller in superopts:
                v1 = fields[4]
            elif fstype == "cgroup2":
                v2 = fields[4]
    return v1, v2


class LimitedCgroup:
    """A fresh cgroup with one limit of `controller` ("cpu": `value` CPUs;
    "memory": `value` bytes); removed on close()."""

    def __init__(self, controller: str, value: float):
        v1, v2 = cgroup_mounts(controller)
        name = f"attnserve-test-{os.getpid()}-{time.monotonic_ns()}"
        try:
            if v1:
                self.dir = os.path.join(v1, name)
                os.mkdir(self.dir)
                if controller == "cpu":
                    self._write("cpu.cfs_period_us", str(PERIOD_US))
                    self._write("cpu.cfs_quota_us", str(int(value * PERIOD_US)))
                else:
                    self._write("memory.limit_in_bytes", str(int(value)))
            elif v2:
                with open(os.path.join(v2, "cgroup.controllers")) as f:
                    if controller not in f.read().split():
                        pytest.skip(f"cgroup v2 here has no {controller} controller: cannot set the limit")
                with open(os.path.join(v2, "cgroup.subtree_control"), "w") as f:
                    f.write(f"+{controller}")
                self.dir = os.path.join(v2, name)
                os.mkdir(self.dir)
                if controller == "cpu":
                    self._write("cpu.max", f"{int(value * PERIOD_US)} {PERIOD_US}")
                else:
                    self._write("memory.max", str(int(value)))
            else:
                pytest.skip(f"no cgroup mount with the {controller} controller: cannot set the limit")
        except PermissionError as e:
            pytest.skip(f"cannot create a cgroup with a {controller} limit here (needs root and a writable cgroup "
                        f"mount): {e}")
        except OSError as e:
            pytest.skip(f"cannot create a cgroup with a {controller} limit here: {e}")

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
    cgroup = LimitedCgroup("cpu", 1.0)
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


@pytest.fixture
def memory_cgroup_256mib():
    cgroup = LimitedCgroup("memory", 256 << 20)
    yield cgroup
    cgroup.close()


def test_a_kv_cache_past_the_memory_limit_is_refused_at_start(memory_cgroup_256mib):
    cmd = [str(DEV), "exec", str(BIN), f"--grpc-port={free_port()}", f"--http-port={free_port()}",
           "--listen-address=127.0.0.1", f"--decoder-model={DECODER}", "--threads=1",
           f"--kv-cache-bytes={1 << 30}"]
    done = subprocess.run(cmd, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                          preexec_fn=memory_cgroup_256mib.enter)
    out = (done.stdout + done.stderr).decode(errors="replace")
    assert done.returncode != 0, out[-5000:]
    assert "--kv-cache-bytes" in out and f"memory limit of {256 << 20} bytes" in out, out[-5000:]


def test_a_kv_cache_under_the_memory_limit_serves(memory_cgroup_256mib):
    server = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", f"--kv-cache-bytes={64 << 20}",
                           preexec_fn=memory_cgroup_256mib.enter)
    try:
        assert http_get(server.url("/readyz"))[0] == 200
        assert f"of the {256 << 20}-byte limit" in server.output()
    finally:
        server.close()
