"""The real binary: gRPC health + reflection, HTTP health and metrics, drain on
SIGTERM, start-up failures that name the culprit, and the healthcheck mode."""
import http.client
import json
import re
import signal
import socket
import subprocess
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from conftest import BIN, DEV, REPO, assert_no_sanitizer_report, free_port, http_get, run_in_root


def test_grpc_health_is_serving(server_factory):
    server = server_factory()
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        response = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_inference_service(server_factory):
    server = server_factory()
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                              timeout=10)
        names = [s.name for r in responses for s in r.list_services_response.service]
    assert "attnserve.v1.Inference" in names
    assert "grpc.health.v1.Health" in names


def test_http_health_ready_and_metrics_pass_promtool(server_factory):
    server = server_factory()
    assert http_get(server.url("/healthz"))[0] == 200
    assert http_get(server.url("/readyz"))[0] == 200
    status, body = http_get(server.url("/metrics"))
    assert status == 200
    text = body.decode()
    for name in ("attnserve_process_resident_memory_bytes", "attnserve_process_start_time_seconds",
                 "attnserve_build_info", 'attnserve_scheduler_thread_cpu_seconds_total{state="running"}'):
        assert f"\n{name}" in "\n" + text, f"{name} missing from /metrics"
    rss = [float(l.split()[-1]) for l in text.splitlines() if l.startswith("attnserve_process_resident_memory_bytes")]
    assert rss and rss[0] > 1e6
    check = run_in_root("promtool", "check", "metrics", input_bytes=body)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    assert http_get(server.url("/nope"))[0] == 404
    assert http_get(server.url("/health"))[0] == 200
    assert http_get(server.url("/ping"))[0] == 200
    assert urllib.request.urlopen(urllib.request.Request(server.url("/ping"), data=b"", method="POST")).status == 200
    status, body = http_get(server.url("/version"))
    assert status == 200 and json.loads(body)["version"]


def test_sigterm_drains_and_exits_zero(server_factory):
    server = server_factory("--drain-timeout=5s")
    server.proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    rc = server.proc.wait(timeout=30)
    assert rc == 0, server.output()
    assert time.monotonic() - started < 20  # the 5 s drain deadline plus start-up slack; never a hang
    assert "draining" in server.output()


def test_readiness_is_off_while_a_stream_drains(server_factory):
    """SIGTERM with a long stream in flight: /readyz, /health and /ping answer 503
    while it drains (the HTTP door still serves the stream), then exit 0."""
    gguf = REPO.parent / "shared/models/stories260K/stories260K.gguf"
    # 4,000 tokens take 1-2 s here alone, but tens of seconds when the
    # machine is busy with other work (seen: 10 ms a token); the drain
    # timeout leaves room for that.
    server = server_factory(f"--decoder-model={gguf}", "--threads=1", "--decoder-context-length=4096",
                            "--drain-timeout=120s")
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=150)
    conn.request("POST", "/v1/generate_stream", headers={"Content-Type": "application/json"},
                 body=json.dumps({"text": "Once upon a time",
                                  "sampling": {"max_new_tokens": 4000, "temperature": 0, "ignore_eos": True}}))
    r = conn.getresponse()
    assert r.status == 200 and r.fp.readline()
    server.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    seen = set()
    while time.monotonic() < deadline and seen != {"/readyz", "/health", "/ping"}:
        for path in ("/readyz", "/health", "/ping"):
            try:
                if http_get(server.url(path), timeout=2)[0] == 503:
                    seen.add(path)
            except OSError:
                break
        time.sleep(0.005)
    assert seen == {"/readyz", "/health", "/ping"}, "readiness never went off while draining"
    last = b""
    while line := r.fp.readline():  # raw chunked body, to the end of the stream
        if line.startswith(b"data: "):
            last = line
    conn.close()
    assert b"FINISH_REASON_LENGTH" in last, last  # served to its end, not cut off
    assert server.proc.wait(timeout=150) == 0, server.output()


def test_healthcheck_mode(server_factory):
    server = server_factory()
    ok = subprocess.run([str(DEV), "exec", str(BIN), "healthcheck", f"--http-port={server.http_port}"],
                        capture_output=True, timeout=60, cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    port = free_port()  # nothing listens there
    bad = subprocess.run([str(DEV), "exec", str(BIN), "healthcheck", f"--http-port={port}", "--probe-timeout=2s"],
                         capture_output=True, timeout=60, cwd=REPO)
    assert bad.returncode != 0
    assert str(port).encode() in bad.stderr
    for probe in (ok, bad):
        assert_no_sanitizer_report(probe.stderr.decode(errors="replace"))


def start_failure(*flags):
    result = subprocess.run([str(DEV), "exec", str(BIN), *flags], capture_output=True, timeout=60, cwd=REPO,
                            stdin=subprocess.DEVNULL)
    out = result.stderr.decode(errors="replace") + result.stdout.decode(errors="replace")
    assert_no_sanitizer_report(out)  # a failed start must still exit cleanly, not by a sanitizer abort
    return result.returncode, out


def test_unknown_flag_fails_naming_it():
    rc, out = start_failure("--grpc-port=0", "--http-port=0", "--no-such-flag=3")
    assert rc != 0
    assert "--no-such-flag" in out


def test_missing_model_path_fails_naming_flag_and_path():
    rc, out = start_failure("--grpc-port=0", "--http-port=0", "--encoder-model=/does/not/exist")
    assert rc != 0
    assert "--encoder-model" in out and "/does/not/exist" in out


@pytest.mark.parametrize("which", ["grpc", "http"])
def test_port_in_use_fails_naming_port(which):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        other = free_port()
        ports = (port, other) if which == "grpc" else (other, port)
        rc, out = start_failure(f"--grpc-port={ports[0]}", f"--http-port={ports[1]}", "--listen-address=127.0.0.1")
    assert rc != 0
    assert str(port) in out
    assert f"--{which}-port" in out


def test_readme_documents_every_flag_the_binary_takes():
    """README's flag table lists exactly the serving flags `attnserve --help`
    prints (written with dashes), and the healthcheck flags appear in README's
    healthcheck line: a flag added or renamed without its documentation, or a
    documented flag that no longer exists, fails here."""
    result = subprocess.run([str(DEV), "exec", str(BIN), "--help"], capture_output=True, timeout=60, cwd=REPO,
                            stdin=subprocess.DEVNULL)
    text = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
    section = text.split("Flags from ", 1)[1]
    section = section.split("main.cc:", 1)[1].split("Flags from ", 1)[0]  # our flags only, not Abseil's
    flags = {f.replace("_", "-") for f in re.findall(r"^\s{4}--([a-z0-9_]+)", section, re.MULTILINE)}
    assert "grpc-port" in flags and "log-requests" in flags, section[:500]
    probe = {f for f in flags if f.startswith("probe-")}
    readme = (REPO / "README.md").read_text()
    table = set(re.findall(r"^\| `--([a-z0-9-]+)` \|", readme, re.MULTILINE))
    assert table == flags - probe, {"undocumented": sorted(flags - probe - table), "unknown": sorted(table - flags)}
    healthcheck_line = next(line for line in readme.splitlines() if line.startswith("`attnserve healthcheck ["))
    assert all(f"--{f}" in healthcheck_line for f in probe), (sorted(probe), healthcheck_line)
