"""A real Prometheus server (Debian's `prometheus`, run inside the build
environment) scrapes the real binary under Generate traffic; we then query it
through its HTTP API for the time-to-first-token quantile, KV blocks and the
engine thread's CPU time."""
import json
import shutil
import subprocess
import threading
import time
import urllib.parse

import grpc
import pytest

from conftest import DEV, REPO, ServerProcess, free_port, http_get
from test_grpc_models import GGUF, collect, greedy


def prom_query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    status, body = http_get(url)
    assert status == 200, body
    data = json.loads(body)
    assert data["status"] == "success", data
    return data["data"]["result"]


def test_prometheus_scrapes_ttft_and_kv_blocks(pb, tmp_path_factory):
    from attnserve.v1 import inference_pb2_grpc

    server = ServerProcess(f"--decoder-model={GGUF}", "--threads=1")
    # Prometheus runs inside the build root, which sees the repository but not /tmp.
    work = REPO / ".cache" / "tmp" / f"prometheus-{server.http_port}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: attnserve\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{server.http_port}']\n")
    prom_port = free_port()
    prom = subprocess.Popen([str(DEV), "exec", "prometheus", f"--config.file={work / 'prometheus.yml'}",
                             f"--storage.tsdb.path={work / 'data'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if http_get(f"http://127.0.0.1:{prom_port}/-/ready", timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail("prometheus did not become ready")
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = inference_pb2_grpc.InferenceStub(channel)
            # stories260K is tiny and fast (a 100-token request takes a few
            # milliseconds), so a 1 s scrape can fall between requests: keep
            # several streams going until Prometheus has seen KV blocks in use
            # (or 60 s pass), rather than for a fixed time.
            stop = threading.Event()

            def load():
                while not stop.is_set():
                    collect(stub.Generate(greedy(pb, text="Once upon a time", max_new=100), timeout=60))
            threads = [threading.Thread(target=load) for _ in range(4)]
            for t in threads:
                t.start()
            try:
                deadline = time.monotonic() + 60
                blocks = 0.0
                while time.monotonic() < deadline:
                    result = prom_query(prom_port, "max_over_time(attnserve_kv_cache_blocks_used[1m])")
                    blocks = float(result[0]["value"][1]) if result else 0.0
                    if blocks > 0:
                        break
                    time.sleep(0.5)
            finally:
                stop.set()
                for t in threads:
                    t.join()
        assert blocks > 0, "Prometheus never saw KV blocks in use"
        capacity = prom_query(prom_port, "attnserve_kv_cache_capacity_blocks")
        assert capacity and float(capacity[0]["value"][1]) >= blocks
        deadline = time.monotonic() + 20
        quantile = []
        while time.monotonic() < deadline:
            quantile = prom_query(prom_port, "histogram_quantile(0.5, sum by (le) "
                                             "(attnserve_time_to_first_token_seconds_bucket))")
            if quantile and quantile[0]["value"][1] not in ("NaN", "0"):
                break
            time.sleep(0.5)
        assert quantile, "no time-to-first-token series"
        ttft = float(quantile[0]["value"][1])
        assert 0 < ttft < 60, ttft
        # The engine thread's CPU time (its schedstat, read at each scrape):
        # the streams above ran hundreds of steps on it, milliseconds at least.
        running = prom_query(prom_port, 'attnserve_scheduler_thread_cpu_seconds_total{state="running"}')
        assert running and float(running[0]["value"][1]) > 0.001, running
        assert prom_query(prom_port, 'attnserve_scheduler_thread_cpu_seconds_total{state="waiting"}')
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        server.close()
        shutil.rmtree(work, ignore_errors=True)
