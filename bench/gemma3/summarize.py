#!/usr/bin/env python3
"""Table of bench/gemma3/run.sh's results: attnserve against
transformers on the same Gemma 3 weights, decode tokens/s per (sequences,
context) and prefill 512 tokens/s, with the ratio.

Usage: summarize.py gemma3_results.jsonl
"""
import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    ours, peer, meta = {}, {}, {}
    for r in rows:
        b = r.get("bench")
        if b == "machine":
            meta = r
        elif b == "stream_read":
            meta["gbps"] = r["gbps"]
        elif b in ("decode", "prefill"):
            key = (b, r.get("batch", 1), r.get("context", 512 if b == "prefill" else 16))
            (peer if r.get("peer") == "torch" else ours)[key] = r["tok_s"]
            if r.get("peer") == "torch":
                meta["torch"] = r.get("torch", meta.get("torch"))
                meta["transformers"] = r.get("transformers", meta.get("transformers"))
    print(f"# {meta.get('cpu')}, {meta.get('cores')} cores, {meta.get('threads')} threads, {meta.get('date')}, "
          f"load {meta.get('load')}; STREAM read {meta.get('gbps')} GB/s; torch {meta.get('torch')}, "
          f"transformers {meta.get('transformers')}")
    print("| measure | attnserve f32 tok/s | transformers f32 tok/s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for key in sorted(ours, key=lambda k: (k[0] != "decode", k[2], k[1])):
        kind, batch, context = key
        name = f"decode, {batch} seq, context {context}" if kind == "decode" else "prefill 512"
        theirs = peer.get(key)
        ratio = f"{ours[key] / theirs:.2f}x" if theirs else "n/a"
        print(f"| {name} | {ours[key]:.1f} | {theirs if theirs else 'n/a'} | {ratio} |")


if __name__ == "__main__":
    main()
