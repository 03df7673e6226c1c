#!/usr/bin/env python3
"""attnserve load generator (gRPC, asyncio).

Closed loop: --concurrency N streams, each sending its next request when the
previous one finishes, until --requests are done. Open loop: --rate R
requests/s with Poisson arrivals (exponential gaps), whatever the server's
speed, for --duration seconds.

The work is split over --processes worker processes, each running one
asyncio event loop on its own grpc.aio channel, so the client is not the
bottleneck (no GIL shared by every stream, no thread per stream). Each worker
reports its CPU time; `client_cpu_max` (the busiest worker's CPU time / wall
time) near 1.0 means the client, not the server, was the limit. With
--metrics-url the server's own counters are read before and after, and the
report gives the server-side generated tokens (to check against the client's
count) and the scheduler overhead ratio over the run.

Reports p50/p95/p99 of queue time (server-reported), time to first token,
inter-token latency and end-to-end latency, plus throughput and errors, as
text and (with --json) as one JSON object.

  loadgen.py --target 127.0.0.1:50051 --proto-dir GEN --rpc generate --concurrency 16 --requests 64
  loadgen.py --target 127.0.0.1:50051 --proto-dir GEN --rpc encode --rate 50 --duration 20
"""
import argparse
import asyncio
import json
import multiprocessing as mp
import random
import re
import sys
import time
import urllib.request

import numpy as np

PROMPTS = ["Once upon a time", "The cat", "Lily wanted to", "One day, a big dog", "The sun was hot and"]
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A short one.",
             "Embeddings turn sentences into vectors that can be compared with cosine similarity.",
             "How many tokens does this sentence have when WordPiece splits it?"]


def load_stubs(proto_dir):
    import importlib
    sys.path.insert(0, proto_dir)
    return importlib.import_module("attnserve.v1.inference_pb2"), importlib.import_module("attnserve.v1.inference_pb2_grpc")


def generate_request(pb, args, rng):
    sampling = pb.SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0, ignore_eos=args.ignore_eos)
    if args.prompt_tokens:
        # Random ids (>= 3 skips the usual special tokens): for models whose
        # tokenizer is a stand-in.
        ids = [rng.randrange(3, args.vocab) for _ in range(args.prompt_tokens)]
        return pb.GenerateRequest(token_ids=pb.TokenIds(ids=ids), sampling=sampling)
    return pb.GenerateRequest(text=rng.choice(PROMPTS), sampling=sampling)


async def generate_once(stub, pb, args, rng):
    request = generate_request(pb, args, rng)
    start = time.perf_counter()
    times, usage = [], None
    async for msg in stub.Generate(request, timeout=args.timeout):
        now = time.perf_counter()
        times.extend([now] * len(msg.token_ids))
        if msg.HasField("usage"):
            usage = msg.usage
    end = time.perf_counter()
    return {"e2e": end - start, "ttft": (times[0] - start) if times else None,
            "itl": np.diff(times).tolist() if len(times) > 1 else [], "tokens": len(times),
            "queue": usage.queue_time_us / 1e6 if usage else None}


async def encode_once(stub, pb, args, rng):
    request = pb.EncodeRequest(inputs=[pb.EncodeInput(text=rng.choice(SENTENCES)) for _ in range(args.batch)])
    start = time.perf_counter()
    response = await stub.Encode(request, timeout=args.timeout)
    return {"e2e": time.perf_counter() - start, "ttft": None, "itl": [], "tokens": response.usage.prompt_tokens,
            "queue": response.usage.queue_time_us / 1e6}


async def worker_main(args, share, seed):
    """One process: `share` is (concurrency, requests) closed loop or a rate open loop."""
    import grpc
    pb, pb_grpc = load_stubs(args.proto_dir)
    once = generate_once if args.rpc == "generate" else encode_once
    results, errors = [], {}
    async with grpc.aio.insecure_channel(args.target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        await channel.channel_ready()

        async def one(i):
            rng = random.Random(seed * 1_000_003 + i)
            try:
                results.append(await once(stub, pb, args, rng))
            except grpc.aio.AioRpcError as e:
                errors[e.code().name] = errors.get(e.code().name, 0) + 1

        start = time.perf_counter()
        cpu0 = time.process_time()
        if args.rate:
            rng = random.Random(seed)
            tasks, t, i = [], start, 0
            while True:
                t += rng.expovariate(share)
                if t - start >= args.duration:
                    break
                await asyncio.sleep(max(0.0, t - time.perf_counter()))
                tasks.append(asyncio.ensure_future(one(i)))
                i += 1
            await asyncio.gather(*tasks)
        else:
            concurrency, requests = share
            counter = iter(range(requests))

            async def client():
                for i in counter:
                    await one(i)
            await asyncio.gather(*(client() for _ in range(concurrency)))
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
    return {"results": results, "errors": errors, "start": start, "wall": wall, "cpu": cpu}


def worker_entry(args, share, seed, queue):
    queue.put(asyncio.run(worker_main(args, share, seed)))


def pct(values, q):
    values = [v for v in values if v is not None]
    return float(np.percentile(values, q)) if values else float("nan")


METRIC_LINE = re.compile(r'^([a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$')


def scrape(url):
    """The server's counters and histogram sums/counts, keyed by name+labels."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def server_delta(before, after):
    d = lambda k: after.get(k, 0.0) - before.get(k, 0.0)
    overhead = d("attnserve_scheduler_overhead_seconds_sum")
    engine = (d('attnserve_engine_step_duration_seconds_sum{kind="generate"}') +
              d('attnserve_engine_step_duration_seconds_sum{kind="encode"}'))
    passes = d("attnserve_scheduler_overhead_seconds_count")
    running = d('attnserve_scheduler_thread_cpu_seconds_total{state="running"}')
    waiting = d('attnserve_scheduler_thread_cpu_seconds_total{state="waiting"}')
    return {
        "server_generated_tokens": d('attnserve_tokens_processed_total{kind="generated"}'),
        "server_encode_tokens": d('attnserve_tokens_processed_total{kind="encode"}'),
        "server_engine_s": engine,
        "server_sched_overhead_s": overhead,
        "server_sched_passes": passes,
        # Overhead as a share of the time the loop was doing work.
        "server_sched_overhead_ratio": overhead / (overhead + engine) if overhead + engine > 0 else float("nan"),
        "server_sched_overhead_per_pass_us": overhead / passes * 1e6 if passes else float("nan"),
        # Share of the engine thread's runnable time it waited for a CPU: the
        # part of the (wall-time) overhead that is the machine, not the work.
        "server_engine_thread_cpu_wait_share": waiting / (running + waiting) if running + waiting > 0 else float("nan"),
    }


def split(total, parts):
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def run(args):
    before = scrape(args.metrics_url) if args.metrics_url else None
    if args.rate:
        procs = max(1, args.processes)
        shares = [args.rate / procs] * procs
    else:
        procs = max(1, min(args.processes, args.concurrency))
        shares = list(zip(split(args.concurrency, procs), split(args.requests, procs)))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=worker_entry, args=(args, shares[i], i + 1, queue)) for i in range(procs)]
    for w in workers:
        w.start()
    parts = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    after = scrape(args.metrics_url) if args.metrics_url else None

    results = [r for p in parts for r in p["results"]]
    errors = {}
    for p in parts:
        for k, v in p["errors"].items():
            errors[k] = errors.get(k, 0) + v
    # Wall: from the first worker's start to the last one's end.
    wall = max(p["start"] + p["wall"] for p in parts) - min(p["start"] for p in parts)
    itl = [x for r in results for x in r["itl"]]
    report = {
        "rpc": args.rpc, "mode": f"open {args.rate}/s" if args.rate else f"closed x{args.concurrency}",
        "processes": procs, "requests": len(results), "errors": errors, "wall_s": wall,
        "requests_per_s": len(results) / wall, "tokens_per_s": sum(r["tokens"] for r in results) / wall,
        "client_tokens": sum(r["tokens"] for r in results),
        "client_cpu_max": max(p["cpu"] / p["wall"] for p in parts if p["wall"] > 0),
    }
    for name, values in (("queue", [r["queue"] for r in results]), ("ttft", [r["ttft"] for r in results]),
                         ("itl", itl), ("e2e", [r["e2e"] for r in results])):
        for q in (50, 95, 99):
            report[f"{name}_p{q}_ms"] = pct(values, q) * 1e3
    if before is not None:
        report.update(server_delta(before, after))
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
    parser.add_argument("--processes", type=int, default=2, help="worker processes, one event loop each")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--ignore-eos", action="store_true", help="generate exactly max_new_tokens")
    parser.add_argument("--prompt-tokens", type=int, default=0,
                        help="send this many random token ids as the prompt instead of text")
    parser.add_argument("--vocab", type=int, default=256, help="token ids are drawn from [3, vocab)")
    parser.add_argument("--batch", type=int, default=1, help="encode inputs per request")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--metrics-url", default="", help="the server's /metrics, read before and after")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(args)
    print(json.dumps(report) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))


if __name__ == "__main__":
    main()
