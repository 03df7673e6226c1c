#!/usr/bin/env python3
"""Markdown table of linear_bench JSON lines: GFLOP/s per kernel and M.

Usage: linear_bench ... > out.jsonl; linear_table.py out.jsonl
Rows: M; per kernel, the median over the decoder projection shapes (o, qkv,
up, gate_up, down) and, separately, over MiniLM's three; the LM head at
small M as weight-read GB/s (its GEMV is bound by memory).
"""
import json
import statistics
import sys

DECODER = {"o", "qkv", "up", "gate_up", "down"}
MINILM = {"minilm_qkv1", "minilm_up", "minilm_down"}
KERNELS = [("packed_f32", "packed f32"), ("dnnl_fixed", "oneDNN fixed-M, BA16a32b"),
           ("dnnl_fixed_any", "oneDNN fixed-M, any"), ("dnnl_runtime", "oneDNN run-time M"),
           ("linear_f32", "Linear f32 (chosen)"), ("packed_bf16", "packed bf16")]


def main(path):
    rows = [json.loads(l) for l in open(path) if l.startswith("{\"shape\"")]
    for label, group in (("decoder projections", DECODER), ("MiniLM", MINILM)):
        sel = [r for r in rows if r["shape"] in group]
        if not sel:
            continue
        print(f"\n{label} ({', '.join(sorted(group))}): median GFLOP/s over the shapes\n")
        print("| M | " + " | ".join(k[1] for k in KERNELS) + " | f32 kernel chosen |")
        print("|---:|" + "---:|" * len(KERNELS) + "---|")
        for m in sorted({r["m"] for r in sel}):
            at = [r for r in sel if r["m"] == m]
            cells = [f"{statistics.median(r[k] for r in at):.0f}" for k, _ in KERNELS]
            chosen = at[0]["f32_kernel"].split(":")[0]
            print(f"| {m} | " + " | ".join(cells) + f" | {chosen} |")
    lm = [r for r in rows if r["shape"] == "lm_head"]
    if lm:
        print("\nLM head 49152x576 (113 MB f32, 57 MB bf16), weight-read GB/s:\n")
        print("| M | Linear f32 | packed bf16 | oneDNN fixed-M f32 | oneDNN run-time M f32 |")
        print("|---:|---:|---:|---:|---:|")
        for r in lm:
            gb = 4.0 * r["n"] * r["k"] / 1e9
            flop = 2.0 * r["m"] * r["n"] * r["k"] / 1e9
            to_gbps = lambda gf: gb / (flop / gf) if gf > 0 else 0.0
            print(f"| {r['m']} | {r['linear_f32_weight_gbps']:.1f} | {r['packed_bf16_weight_gbps']:.1f} "
                  f"| {to_gbps(r['dnnl_fixed']):.1f} | {to_gbps(r['dnnl_runtime']):.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
