#!/usr/bin/env python3
"""attnserve load generator (gRPC).

Closed loop: --concurrency N clients, each sending its next request when the
previous one finishes. Open loop: --rate R requests/s with Poisson arrivals
(exponential gaps), whatever the server's speed, for --duration seconds.

Reports p50/p95/p99 of queue time (server-reported), time to first token,
inter-token latency and end-to-end latency, plus throughput and errors, as
text and (with --json) as one JSON object.

  loadgen.py --target 127.0.0.1:50051 --rpc generate --concurrency 16 --requests 64
  loadgen.py --target 127.0.0.1:50051 --rpc encode --rate 50 --duration 20
"""
import argparse
import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np

PROMPTS = ["Once upon a time", "The cat", "Lily wanted to", "One day, a big dog", "The sun was hot and"]
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A short one.",
             "Embeddings turn sentences into vectors that can be compared with cosine similarity.",
             "How many tokens does this sentence have when WordPiece splits it?"]


def load_stubs(proto_dir):
    import importlib
    sys.path.insert(0, proto_dir)
    return importlib.import_module("attnserve.v1.inference_pb2"), importlib.import_module("attnserve.v1.inference_pb2_grpc")


def generate_once(stub, pb, args, rng):
    request = pb.GenerateRequest(text=rng.choice(PROMPTS), sampling=pb.SamplingParams(
        max_new_tokens=args.max_new_tokens, temperature=0.0))
    start = time.perf_counter()
    times, usage = [], None
    for msg in stub.Generate(request, timeout=args.timeout):
        now = time.perf_counter()
        times.extend([now] * len(msg.token_ids))
        if msg.HasField("usage"):
            usage = msg.usage
    end = time.perf_counter()
    return {"e2e": end - start, "ttft": (times[0] - start) if times else None,
            "itl": list(np.diff(times)) if len(times) > 1 else [], "tokens": len(times),
            "queue": usage.queue_time_us / 1e6 if usage else None}


def encode_once(stub, pb, args, rng):
    request = pb.EncodeRequest(inputs=[pb.EncodeInput(text=rng.choice(SENTENCES)) for _ in range(args.batch)])
    start = time.perf_counter()
    response = stub.Encode(request, timeout=args.timeout)
    return {"e2e": time.perf_counter() - start, "ttft": None, "itl": [], "tokens": response.usage.prompt_tokens,
            "queue": response.usage.queue_time_us / 1e6}


def pct(values, q):
    values = [v for v in values if v is not None]
    return float(np.percentile(values, q)) if values else float("nan")


def run(args):
    pb, pb_grpc = load_stubs(args.proto_dir)
    channel = grpc.insecure_channel(args.target)
    stub = pb_grpc.InferenceStub(channel)
    once = generate_once if args.rpc == "generate" else encode_once
    results, errors = [], {}
    lock = threading.Lock()

    def one(seed):
        rng = random.Random(seed)
        try:
            r = once(stub, pb, args, rng)
            with lock:
                results.append(r)
        except grpc.RpcError as e:
            with lock:
                errors[e.code().name] = errors.get(e.code().name, 0) + 1

    start = time.perf_counter()
    if args.rate:
        rng = random.Random(1)
        with ThreadPoolExecutor(max_workers=256) as pool:
            t = start
            i = 0
            while t - start < args.duration:
                t += rng.expovariate(args.rate)
                time.sleep(max(0.0, t - time.perf_counter()))
                pool.submit(one, i)
                i += 1
    else:
        counter = iter(range(args.requests))
        counter_lock = threading.Lock()

        def client():
            while True:
                with counter_lock:
                    i = next(counter, None)
                if i is None:
                    return
                one(i)
        threads = [threading.Thread(target=client) for _ in range(args.concurrency)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    wall = time.perf_counter() - start
    itl = [x for r in results for x in r["itl"]]
    report = {
        "rpc": args.rpc, "mode": f"open {args.rate}/s" if args.rate else f"closed x{args.concurrency}",
        "requests": len(results), "errors": errors, "wall_s": wall,
        "requests_per_s": len(results) / wall, "tokens_per_s": sum(r["tokens"] for r in results) / wall,
    }
    for name, values in (("queue", [r["queue"] for r in results]), ("ttft", [r["ttft"] for r in results]),
                         ("itl", itl), ("e2e", [r["e2e"] for r in results])):
        for q in (50, 95, 99):
            report[f"{name}_p{q}_ms"] = pct(values, q) * 1e3
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--proto-dir", required=True, help="folder with generated attnserve/v1/*_pb2*.py")
    parser.add_argument("--rpc", choices=["generate", "encode"], default="generate")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--rate", type=float, default=0.0, help="open loop: requests/s (Poisson)")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch", type=int, default=1, help="encode inputs per request")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(args)
    print(json.dumps(report) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))


if __name__ == "__main__":
    main()
