"""A client that disconnects while its non-streaming HTTP request waits is
noticed at once (not when the answer would be written): the request is
cancelled and its KV blocks, read from /metrics, return to their idle value
while the generation would still have had seconds to run."""
import json
import socket
import time

import pytest

from conftest import REPO, ServerProcess, metric, wait_for_metric

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"  # ../shared beside the checkout
PROMPT = [1, 403, 407, 261, 378]  # BOS "Once upon a time" (any valid ids would do)
# Long enough that the request is certainly still decoding when the client
# leaves: 3,500 tokens took only ~2 s on one thread, short enough that a slow
# poll of /metrics before the close let the request finish first (seen in a
# full-suite run); 30,000 tokens over a context of 32,768 take ~20 s. The KV
# cache this needs is 30,005 x 1,280 bytes = 38 MB, within the default budget.
MAX_NEW = 30000


@pytest.fixture(scope="module")
def server():
    # The llama2 chat template for the chat-path routes (Responses, Messages).
    s = ServerProcess(f"--decoder-model={DECODER}", "--decoder-context-length=32768", "--max-new-tokens-limit=30000",
                      "--threads=1", "--chat-template=llama2")
    yield s
    s.close()


def open_request(server, path, body):
    """Sends a POST on a raw socket and returns the socket without reading."""
    sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=30)
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    sock.sendall(head + data)
    return sock


def wait_until(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("path,body", [
    ("/v1/generate", {"token_ids": {"ids": PROMPT},
                      "sampling": {"max_new_tokens": MAX_NEW, "temperature": 0, "ignore_eos": True}}),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_NEW, "temperature": 0, "ignore_eos": True}),
    # vLLM's ignore_eos passes through the Responses and Messages rewrites.
    ("/v1/responses", {"input": "Tell me a story.", "max_output_tokens": MAX_NEW, "temperature": 0,
                       "ignore_eos": True}),
    ("/v1/messages", {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": MAX_NEW,
                      "temperature": 0, "ignore_eos": True}),
])
def test_disconnect_while_waiting_cancels_and_frees_kv_blocks(server, path, body):
    blocks = "attnserve_kv_cache_blocks_used"
    cancelled = 'attnserve_requests_total{code="cancelled",rpc="Generate"}'
    decode_cancels = 'attnserve_cancellations_total{phase="decode"}'
    ok = 'attnserve_requests_total{code="ok",rpc="Generate"}'
    wait_for_metric(server, "attnserve_running_sequences", 0.0)
    idle = metric(server, blocks)
    before_cancelled = metric(server, cancelled, default=0.0)
    before_decode = metric(server, decode_cancels, default=0.0)
    before_ok = metric(server, ok, default=0.0)
    unanswered = f'attnserve_http_requests_total{{route="{path}",status="none"}}'
    before_unanswered = metric(server, unanswered, default=0.0)

    sock = open_request(server, path, body)
    # Decoding: it holds KV blocks beyond the idle value and has streamed tokens.
    wait_until(lambda: metric(server, "attnserve_running_sequences") == 1.0 and metric(server, blocks) > idle,
               "the request to start decoding")
    assert metric(server, ok, default=0.0) == before_ok, "the request finished before the client left"
    sock.close()

    # Noticed while the answer was still being computed: the gateway counts
    # the request cancelled (not ok), the scheduler cancels it in decode on
    # its next pass, and the blocks go back to idle.
    wait_for_metric(server, cancelled, before_cancelled + 1)
    wait_for_metric(server, decode_cancels, before_decode + 1)
    wait_for_metric(server, blocks, idle)
    wait_for_metric(server, "attnserve_running_sequences", 0.0)
    assert metric(server, ok, default=0.0) == before_ok
    # The route's own count: a request the client left unanswered.
    wait_for_metric(server, unanswered, before_unanswered + 1)


def test_client_that_stays_gets_its_answer(server):
    """The connection check must not mistake a waiting client for a gone one."""
    sock = open_request(server, "/v1/generate", {"token_ids": {"ids": PROMPT},
                                                 "sampling": {"max_new_tokens": 300, "temperature": 0,
                                                              "ignore_eos": True}})
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")))
    while len(rest) < length:
        rest += sock.recv(65536)
    sock.close()
    answer = json.loads(rest)
    assert len(answer["token_ids"]) == 300
