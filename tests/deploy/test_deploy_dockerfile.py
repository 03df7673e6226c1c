"""The Dockerfile (no Docker engine here, so it is read, not built): same
package list and build commands as ./dev, a runtime stage with runtime
libraries only, a non-root user, health check, ports and a writable volume."""
import json
import re
import subprocess

import pytest

from conftest import BIN, REPO, run_in_root
import dockerfile_parse

PACKAGE_LIST = REPO / "deploy" / "debian-packages.txt"


def packages(role):
    out = []
    for line in PACKAGE_LIST.read_text().splitlines():
        fields = line.split()
        if line.startswith("#") or len(fields) < 2:
            continue
        if fields[0] == role:
            out.append(fields[1])
    return out


@pytest.fixture(scope="module")
def stages():
    _, parsed = dockerfile_parse.parse((REPO / "Dockerfile").read_text())
    return parsed


def stage_named(stages, name):
    found = [s for s in stages if s.name == name]
    assert found, f"no stage named {name!r} in the Dockerfile (stages: {[s.name for s in stages]})"
    return found[0]


def installed_by(stage):
    """Runs the stage's own package-selection awk program on the real list."""
    copies = [c for c in stage.all("COPY") if "debian-packages.txt" in c]
    assert copies, f"stage {stage.name} does not COPY deploy/debian-packages.txt"
    src, dst = copies[0].split()[-2:]
    assert src == "deploy/debian-packages.txt", copies[0]
    runs = [r for r in stage.all("RUN") if "apt-get install" in r]
    assert len(runs) == 1, f"stage {stage.name}: expected one apt-get install RUN, got {runs}"
    m = re.search(r"awk\s+'([^']*)'\s+(\S+)", runs[0])
    assert m, f"stage {stage.name}: the apt-get install is not fed by awk over the package list: {runs[0]}"
    assert m.group(2) == dst, f"awk reads {m.group(2)}, the list was copied to {dst}"
    assert re.search(r"\|\s*xargs\s+(env\s+\S+\s+)?apt-get install", runs[0]), runs[0]
    out = subprocess.run(["awk", m.group(1), str(PACKAGE_LIST)], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_both_stages_are_debian_trixie_slim(stages):
    assert len(stages) >= 2
    for s in stages:
        assert s.image == "debian:trixie-slim", f"stage {s.name} is FROM {s.image}"


def test_build_stage_installs_exactly_the_build_packages(stages):
    assert installed_by(stage_named(stages, "build")) == packages("build")


def test_runtime_stage_installs_exactly_the_runtime_packages(stages):
    runtime = stages[-1]
    got = installed_by(runtime)
    assert got == packages("runtime")
    toolchain = {"g++", "gcc", "cmake", "ninja-build", "make", "pkg-config", "protobuf-compiler"}
    assert not [p for p in got if p.endswith("-dev") or p in toolchain], "build tools in the runtime stage"


def dev_build_commands():
    """The cmake commands of `./dev build release`, from cmd_build in ./dev."""
    body = re.search(r"^cmd_build\(\) \{\n(.*?)^\}", (REPO / "dev").read_text(), re.S | re.M)
    assert body, "cmd_build not found in ./dev"
    cmds = re.findall(r"in_root (cmake .*)$", body.group(1), re.M)
    assert len(cmds) == 2, cmds
    subst = {'"$preset"': "release", '"$bdir"': "build/release"}
    out = []
    for c in cmds:
        for k, v in subst.items():
            c = c.replace(k, v)
        out.append(" ".join(c.split()))
    return out


def test_build_stage_runs_the_same_commands_as_dev(stages):
    build = stage_named(stages, "build")
    commands = [c for r in build.all("RUN") for c in dockerfile_parse.shell_commands(r) if c.startswith("cmake")]
    assert commands == dev_build_commands()
    # The build sees the whole source tree (the presets and CMake files).
    assert any(c.split() == [".", "."] for c in build.all("COPY"))


def test_runtime_stage_user_is_not_root(stages):
    runtime = stages[-1]
    users = runtime.all("USER")
    assert users, "the runtime stage sets no USER (it would run as root)"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    uid = int(user) if user.isdigit() else None
    created = " ".join(runtime.all("RUN"))
    if uid is not None:
        assert re.search(rf"useradd\b[^&]*--uid {uid}\b", created), f"UID {uid} is never created"
    else:
        assert re.search(rf"useradd\b[^&]*\b{user}\b", created)


def test_runtime_stage_ships_only_the_binary_with_health_ports_and_volume(stages):
    runtime = stages[-1]
    copies = runtime.all("COPY")
    from_build = [c for c in copies if c.startswith("--from=")]
    assert from_build == ["--from=build /src/build/release/attnserve /usr/local/bin/attnserve"]
    assert sorted(" ".join(runtime.all("EXPOSE")).split()) == ["50051", "8080"]
    hc = runtime.all("HEALTHCHECK")
    assert len(hc) == 1
    cmd = json.loads(hc[0][hc[0].index("CMD") + 3:].strip())
    assert cmd == ["/usr/local/bin/attnserve", "healthcheck", "--http-port", "8080"]
    volumes = [v for arg in runtime.all("VOLUME") for v in json.loads(arg)]
    assert volumes == ["/var/lib/attnserve"]
    envs = " ".join(runtime.all("ENV"))
    assert "TMPDIR=/var/lib/attnserve" in envs, "temporary files must go to the declared volume"
    assert json.loads(runtime.all("ENTRYPOINT")[0]) == ["/usr/local/bin/attnserve"]
    assert "/models" in " ".join(runtime.all("RUN")), "the documented model mount point is not created"


def test_dockerignore_keeps_caches_and_builds_out():
    entries = {l.strip() for l in (REPO / ".dockerignore").read_text().splitlines()
               if l.strip() and not l.startswith("#")}
    for must in (".git", ".cache", "build"):
        assert must in entries, f".dockerignore does not exclude {must}"


def test_runtime_packages_cover_every_library_the_binary_loads():
    """Each shared library of the built binary comes from a runtime package, one
    of their dependencies, or a package every Debian image has (Priority: required)."""
    if not BIN.exists():
        pytest.fail(f"{BIN} is not built")
    ldd = run_in_root("ldd", str(BIN))
    assert ldd.returncode == 0, ldd.stderr.decode()
    # Debian 13 is /usr-merged: dpkg records /usr/lib, the loader prints /lib.
    paths = [re.sub(r"^/lib", "/usr/lib", p) for p in re.findall(r"=> (/\S+)", ldd.stdout.decode())]
    assert paths and "not found" not in ldd.stdout.decode()
    owners = run_in_root("dpkg", "-S", *paths)
    assert owners.returncode == 0, owners.stderr.decode()
    owner_of = {}
    for line in owners.stdout.decode().splitlines():
        pkg, _, path = line.partition(": ")
        owner_of[path.strip()] = pkg.split(":")[0]
    db = run_in_root("dpkg-query", "-W", "-f", "${Package}\t${Priority}\t${Depends}, ${Pre-Depends}\n")
    assert db.returncode == 0
    depends, required = {}, set()
    for line in db.stdout.decode().splitlines():
        name, prio, deps = line.split("\t")
        if prio == "required":
            required.add(name)
        depends[name] = {alt.split()[0].split(":")[0] for d in deps.split(",") for alt in d.split("|") if alt.strip()}
    closure, todo = set(), list(packages("runtime"))
    while todo:
        p = todo.pop()
        if p not in closure:
            closure.add(p)
            todo.extend(depends.get(p, ()))
    missing = {}
    for path in paths:
        pkg = owner_of.get(path, "?")
        if pkg not in closure and pkg not in required:
            missing[path] = pkg
    assert not missing, f"libraries not provided by the runtime packages: {missing}"


def test_the_healthcheck_command_works_against_a_real_server(stages, server_factory):
    """The image's HEALTHCHECK CMD, run as written (port and binary path
    mapped to this machine): 0 against a serving server, non-zero when
    nothing answers."""
    from conftest import DEV, free_port
    hc = stages[-1].all("HEALTHCHECK")[0]
    cmd = json.loads(hc[hc.index("CMD") + 3:].strip())
    server = server_factory()

    def run(port):
        argv = [str(BIN) if a == "/usr/local/bin/attnserve" else (str(port) if a == "8080" else a) for a in cmd]
        return subprocess.run([str(DEV), "exec", *argv], capture_output=True, timeout=60, cwd=REPO)

    ok = run(server.http_port)
    assert ok.returncode == 0, ok.stderr.decode()
    bad = run(free_port())
    assert bad.returncode != 0


def test_every_run_is_valid_shell(stages):
    """Each RUN (shell form, under the stage's SHELL bash) parses: `bash -n`."""
    for s in stages:
        assert s.all("SHELL") == ['["/bin/bash", "-o", "pipefail", "-c"]'], f"stage {s.name}: no pipefail shell"
        for run in s.all("RUN"):
            check = subprocess.run(["bash", "-n", "-c", run], capture_output=True, text=True)
            assert check.returncode == 0, f"stage {s.name}: {run}\n{check.stderr}"
