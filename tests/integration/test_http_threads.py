"""The HTTP door's threads (--http-threads) against the real binary: each HTTP
request holds one thread until it is answered, so long generations must
never take the threads that probes and /metrics need, and the default must
hold more concurrent requests than a handful."""
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from conftest import REPO, ServerProcess, http_get, metric, wait_for_metric

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"  # ../shared beside the checkout
PROMPT = [1, 403, 407, 261, 378]  # BOS "Once upon a time"
# Long enough that every request is still decoding while the test looks
# (see test_http_nonstreaming_disconnect.py): 30,000 tokens over a context of
# 32,768; the requests are cancelled by closing their sockets.
MAX_NEW = 30000
LONG = {"token_ids": {"ids": PROMPT}, "sampling": {"max_new_tokens": MAX_NEW, "temperature": 0, "ignore_eos": True}}
FLAGS = (f"--decoder-model={DECODER}", "--decoder-context-length=32768", f"--max-new-tokens-limit={MAX_NEW}",
         "--threads=1")


def open_request(server, path, body):
    """Sends a POST on a raw socket and returns the socket without reading."""
    sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=30)
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    sock.sendall(head + data)
    return sock


def post(server, path, body):
    """(status, headers, parsed JSON body) of a POST; HTTP errors returned."""
    req = urllib.request.Request(server.url(path), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def wait_running(server, n):
    wait_for_metric(server, "attnserve_running_sequences", float(n), timeout=60)


def close_all(server, socks):
    for s in socks:
        s.close()
    wait_for_metric(server, "attnserve_running_sequences", 0.0, timeout=60)


def test_past_its_inference_places_the_door_refuses_at_once_and_probes_still_answer(server_factory):
    # 6 threads, 4 kept for quick requests: 2 inference calls at once.
    server = server_factory(*FLAGS, "--http-threads=6")
    held = [open_request(server, "/v1/generate", LONG) for _ in range(2)]
    try:
        wait_running(server, 2)
        status, headers, body = post(server, "/v1/completions", {"prompt": PROMPT, "max_tokens": 4})
        assert status == 429, body
        assert headers.get("Retry-After") == "1"
        assert body["error"]["code"] == "resource_exhausted"
        assert "serving 2 inference calls" in body["error"]["message"]
        assert "--http-threads" in body["error"]["message"]
        status, _, _ = post(server, "/v1/embeddings", {"input": "a"})
        assert status == 429
        # Probes, /metrics and quick routes answer beside the held requests.
        for path in ("/healthz", "/readyz", "/v1/models"):
            assert http_get(server.url(path))[0] == 200, path
        assert post(server, "/v1/tokenize", {"text": "Once"})[0] == 200
        assert metric(server, 'attnserve_rejections_total{reason="http_threads"}') == 2.0
        assert metric(server, "attnserve_running_sequences") == 2.0, "the held requests were disturbed"
    finally:
        close_all(server, held)
    # The places are free again.
    status, _, body = post(server, "/v1/completions", {"prompt": PROMPT, "max_tokens": 4})
    assert status == 200, body
    assert body["usage"]["completion_tokens"] == 4


def test_by_default_many_concurrent_requests_reach_the_scheduler_and_probes_answer(server_factory):
    # Before the door kept threads for probes its default was 8 threads: a
    # ninth request waited unseen in the listener's backlog, and so did
    # /healthz while 8 streams ran.
    server = server_factory(*FLAGS)
    n = 12
    held = [open_request(server, "/v1/generate", LONG) for _ in range(n)]
    try:
        wait_running(server, n)
        for path in ("/healthz", "/readyz", "/metrics"):
            assert http_get(server.url(path))[0] == 200, path
        assert metric(server, "attnserve_running_sequences") == float(n)
        assert metric(server, 'attnserve_rejections_total{reason="http_threads"}') == 0.0
    finally:
        close_all(server, held)
