"""What the one-client HTTP benchmarks (bench/rerank, bench/splade) share: a
fixed word list for texts of an exact word count, a closed-loop timer, and
one POST per call on its own connection."""
import http.client
import json
import statistics
import time

WORDS = ("cat sleeps sun window afternoon market fell sharply monday kitten chase string nap lunch bird garden "
         "river bridge city train station morning coffee book table light music song dance rain cloud").split()


def texts(count, words, rng):
    """`count` texts of exactly `words` words from WORDS."""
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def timed(call, seconds):
    """(calls, seconds spent, median call) of `call` run back to back for at
    least `seconds` and 3 calls, after one warm-up call."""
    call()  # warm-up
    latencies = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(latencies) < 3:
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    return len(latencies), time.perf_counter() - start, statistics.median(latencies)


def post(url, path, body):
    """POSTs the JSON `body` (bytes) to url + path on a new connection (the
    server closes each after its answer); the parsed answer, or raises on a
    status other than 200."""
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status != 200:
        raise RuntimeError(f"{path} answered {r.status}: {data[:300]!r}")
    return json.loads(data)
