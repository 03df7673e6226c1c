#!/usr/bin/env python3
"""torch SDPA on the attention benchmark's shapes; prints one JSON object per line.

Usage: torch_sdpa_peer.py [--threads N] [--min-time SECONDS]
Runs on the host venv's torch (CPU). Threads default to OMP_NUM_THREADS or 2.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

# name: (B, Hq, Hkv, Nq, Nk, d, causal, kv dtype) - the same names as attention_benchmark.
SHAPES = {
    "minilm_b32_h12_n128_d32": (32, 12, 12, 128, 128, 32, False, torch.float32),
    "bert_b8_h12_n512_d64": (8, 12, 12, 512, 512, 64, False, torch.float32),
    "causal_b1_hq32_hkv8_n2048_d128": (1, 32, 8, 2048, 2048, 128, True, torch.float32),
    "decode_b32_hq32_hkv8_nk1024_d128_f32": (32, 32, 8, 1, 1024, 128, False, torch.float32),
    # torch SDPA needs one dtype for q, k, v: the bf16 peer runs entirely in bf16.
    "decode_b32_hq32_hkv8_nk1024_d128_bf16": (32, 32, 8, 1, 1024, 128, False, torch.bfloat16),
}


def bench(fn, min_time):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 3:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name, (b, hq, hkv, nq, nk, d, causal, dt) in SHAPES.items():
        q = torch.randn(b, hq, nq, d).to(dt)
        k = torch.randn(b, hkv, nk, d).to(dt)
        v = torch.randn(b, hkv, nk, d).to(dt)
        with torch.inference_mode():
            sec = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                               enable_gqa=hq != hkv),
                        args.min_time)
        flops = 4.0 * b * hq * nq * nk * d
        kv_bytes = 2.0 * b * hkv * nk * d * (2 if dt == torch.bfloat16 else 4)
        print(json.dumps({"name": name, "ms": sec * 1e3, "gflops": flops / sec * 1e-9,
                          "gbps": kv_bytes / sec * 1e-9, "torch": torch.__version__,
                          "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
