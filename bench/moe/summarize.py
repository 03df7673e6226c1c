#!/usr/bin/env python3
"""Table of bench/moe/run.sh's results: attnserve against llama.cpp (f32
and q8_0 weights, F32 and Q8_0 files) and transformers (f32) on the same
Qwen3-MoE weights, decode tokens/s at 1, 4 and 16 sequences and prefill
512 tokens/s, with the ratios.

Usage: summarize.py moe_results.jsonl
"""
import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    ours, llama, torch, meta = {}, {}, {}, {}
    for r in rows:
        b = r.get("bench")
        if b == "machine":
            meta = r
        elif b == "peer" and r.get("peer") == "llama.cpp":
            meta["llama.cpp"] = r.get("version")
        elif b == "peer_failed":
            print(f"llama.cpp {r.get('model')} failed (exit {r.get('exit')}; see {r.get('log')})")
        elif b in ("decode", "prefill"):
            key = (b, r.get("batch", 1) if b == "decode" else 512)
            if r.get("peer") == "llama.cpp":
                llama[(r["model"], key)] = r["tok_s"]
            elif r.get("peer") == "torch":
                torch[key] = r["tok_s"]
                meta["transformers"] = r.get("transformers", meta.get("transformers"))
            else:
                ours[(r["dtype"], key)] = r["tok_s"]
    print(f"# {meta.get('cpu')}, {meta.get('cores')} cores, {meta.get('threads')} threads, {meta.get('date')}, "
          f"load {meta.get('load')}; llama-cpp-python {meta.get('llama.cpp')}, transformers {meta.get('transformers')}")
    print("| measure | attnserve f32 | llama.cpp F32 | ratio | transformers f32 | ratio | attnserve q8_0 "
          "| llama.cpp Q8_0 | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    rat = lambda a, p: "-" if a is None or not p else f"{a / p:.2f}x"
    for key in [("decode", 1), ("decode", 4), ("decode", 16), ("prefill", 512)]:
        name = f"decode, {key[1]} seq" if key[0] == "decode" else "prefill 512"
        a32, l32, t32 = ours.get(("f32", key)), llama.get(("f32", key)), torch.get(key)
        a8, l8 = ours.get(("q8_0", key)), llama.get(("q8_0", key))
        print(f"| {name} | {fmt(a32)} | {fmt(l32)} | {rat(a32, l32)} | {fmt(t32)} | {rat(a32, t32)} | {fmt(a8)} | "
              f"{fmt(l8)} | {rat(a8, l8)} |")


if __name__ == "__main__":
    main()
