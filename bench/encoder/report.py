#!/usr/bin/env python3
"""Turns bench/encoder results.jsonl into the markdown table of docs/benchmarks.md."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
meta = [r for r in rows if "peer_versions" in r]
data = {(r["engine"], r["batch"], r["seq_len"]): r for r in rows if "batch" in r}
engines = [e for e in ("attnserve-f32", "attnserve-bf16", "attnserve-f32-bf16mm", "attnserve-bf16-bf16mm",
                       "sentence-transformers",
                       "onnxruntime", "sentence-transformers-bf16")
           if any(k[0] == e for k in data)]
shapes = sorted({(k[1], k[2]) for k in data}, key=lambda s: (s[1], s[0]))
if meta:
    print(f"peers: {meta[0]['peer_versions']}, threads {meta[0]['threads']}")
print("| batch x tokens | " + " | ".join(f"{e} sent/s (tok/s)" for e in engines)
      + " | f32 vs torch | f32 vs ORT | best bf16mm vs torch-bf16 | best bf16mm vs torch |")
print("|---|" + "---|" * (len(engines) + 4))
for b, n in shapes:
    cells = []
    for e in engines:
        r = data.get((e, b, n))
        cells.append(f"{r['sentences_per_s']:.1f} ({r['tokens_per_s']:.0f})" if r else "-")
    def ratio(mine, peer):
        a, p = data.get((mine, b, n)), data.get((peer, b, n))
        return f"{a['sentences_per_s'] / p['sentences_per_s']:.2f}x" if a and p else "-"
    # The faster of our two bf16-product variants (f32 or bf16 weights) at this shape.
    bf16mm = [e for e in ("attnserve-f32-bf16mm", "attnserve-bf16-bf16mm") if (e, b, n) in data]
    best = max(bf16mm, key=lambda e: data[(e, b, n)]["sentences_per_s"]) if bf16mm else "-"
    print(f"| {b} x {n} | " + " | ".join(cells)
          + f" | {ratio('attnserve-f32', 'sentence-transformers')} | {ratio('attnserve-f32', 'onnxruntime')}"
          + f" | {ratio(best, 'sentence-transformers-bf16')}"
          + f" | {ratio(best, 'sentence-transformers')} |")
print()
print("single-sentence latency (ms): " + "; ".join(
    f"{n} tokens: " + ", ".join(f"{e} {data[(e, 1, n)]['latency_ms']:.2f}" for e in engines if (e, 1, n) in data)
    for n in sorted({k[2] for k in data if k[1] == 1})))
roof = [r for r in rows if r.get("engine") == "gemm-roofline"]
ours = data.get(("attnserve-f32", 32, 128))
if roof and ours:
    achieved = ours["tokens_per_s"] * 22e6 / 1e9  # ~22 MFLOP per token at 128 tokens
    best = max(r["gflops"] for r in roof)  # measured once per shape; the best is the ceiling
    print(f"f32 GEMM roofline (oneDNN, [4096,384]x[384,1536], best run): {best:.1f} GFLOP/s; "
          f"attnserve f32 at 32 x 128: {achieved:.1f} GFLOP/s = {100 * achieved / best:.0f}% of it")
