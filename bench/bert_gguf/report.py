#!/usr/bin/env python3
"""bench/bert_gguf results.jsonl as the markdown table of docs/benchmarks.md."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
info = [r for r in rows if r.get("engine") == "llama.cpp-info"]
data = {(r["engine"], r["batch"], r["seq_len"]): r for r in rows if "batch" in r}
pairs = [("attnserve-f32", "llama.cpp-f16", "f16 file"), ("attnserve-q8_0", "llama.cpp-q8_0", "q8_0 file")]
if info:
    print(f"llama-cpp-python {info[0]['version']}, threads {info[0]['threads']}; {info[0]['system_info']}")
print("| batch x tokens | " + " | ".join(f"{what}: attnserve sent/s | llama.cpp sent/s | ratio" for _, _, what in pairs)
      + " |")
print("|---|" + "---:|---:|---:|" * len(pairs))
for b, n in sorted({(k[1], k[2]) for k in data}, key=lambda s: (s[1], s[0])):
    cells = []
    for ours, peer, _ in pairs:
        a, p = data.get((ours, b, n)), data.get((peer, b, n))
        cells += [f"{a['sentences_per_s']:.1f}" if a else "-", f"{p['sentences_per_s']:.1f}" if p else "-",
                  f"{a['sentences_per_s'] / p['sentences_per_s']:.2f}x" if a and p else "-"]
    print(f"| {b} x {n} | " + " | ".join(cells) + " |")
