#!/usr/bin/env python3
"""Table of a decoder benchmark run (bench/decoder/run.sh's results.jsonl):
attnserve vs llama.cpp at the same precision (f32 vs F32; bf16 weights vs
F16, the half-precision-weights pair; bf16 weights with bf16 products vs
BF16, whose activations llama.cpp also rounds to bf16; q8_0 weights vs
Q8_0, llama.cpp rounding activations to 8 bits where ours stay f32),
decode tok/s at 1/4/8/16 sequences and prefill 512, the
ratios, and batch-1 decode against the bandwidth bound (weight bytes per
token / the in-run STREAM read GB/s, on 2 MiB pages as the weights are; the
read on default pages is shown beside it).

Usage: summarize.py results.jsonl
"""
import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    ours, peer, bound, meta = {}, {}, {}, {}
    dtype = None
    for r in rows:
        b = r.get("bench")
        if b == "machine":
            meta = r
        elif b == "stream_read":
            meta["gbps"] = r["gbps"]
            meta["gbps_default_pages"] = r.get("gbps_default_pages")
        elif b == "load":
            dtype = r["dtype"]
            bound[dtype] = (r["weight_bytes"], r["bound_tok_s"])
        elif b == "peer_failed":
            print(f"llama.cpp {r['model']} failed (exit {r['exit']}; see {r['log']})")
        elif b in ("decode", "prefill"):
            key = (b, r.get("batch", r.get("tokens")))
            if r.get("peer") == "llama.cpp":
                peer[(r["model"], key)] = r["tok_s"]
            else:
                ours[(r["dtype"], key)] = r["tok_s"]
    print(f"# {meta.get('cpu')}, {meta.get('cores')} cores, {meta.get('threads')} threads, "
          f"{meta.get('date')}, load {meta.get('load')}; STREAM read {meta.get('gbps')} GB/s on 2 MiB pages "
          f"({meta.get('gbps_default_pages')} on default pages)")
    keys = [("decode", 1), ("decode", 4), ("decode", 8), ("decode", 16), ("prefill", 512)]
    print("| measure | attnserve f32 | llama.cpp F32 | ratio | attnserve bf16 | llama.cpp F16 | ratio "
          "| attnserve bf16, bf16 products | llama.cpp BF16 | ratio | attnserve q8_0 | llama.cpp Q8_0 | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in keys:
        name = f"decode, {k[1]} seq" if k[0] == "decode" else "prefill 512"
        a32, p32 = ours.get(("f32", k)), peer.get(("f32", k))
        a16, p16 = ours.get(("bf16", k)), peer.get(("f16", k))
        abf, pbf = ours.get(("bf16-bf16mm", k)), peer.get(("bf16", k))
        a8, q8 = ours.get(("q8_0", k)), peer.get(("q8_0", k))
        fmt = lambda v: "-" if v is None else f"{v:.1f}"
        rat = lambda a, p: "-" if a is None or not p else f"{a / p:.2f}x"
        print(f"| {name} | {fmt(a32)} | {fmt(p32)} | {rat(a32, p32)} | {fmt(a16)} | {fmt(p16)} | "
              f"{rat(a16, p16)} | {fmt(abf)} | {fmt(pbf)} | {rat(abf, pbf)} | {fmt(a8)} | {fmt(q8)} | {rat(a8, q8)} |")
    for d, (wb, tok_s) in bound.items():
        got = ours.get((d, ("decode", 1)))
        frac = f"{got / tok_s:.0%}" if got else "-"
        print(f"bound {d}: {wb / 1e6:.0f} MB of weights per token -> {tok_s:.1f} tok/s at the "
              f"STREAM read; batch-1 decode {got} tok/s = {frac} of it")


if __name__ == "__main__":
    main()
