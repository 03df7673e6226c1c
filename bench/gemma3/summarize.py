#!/usr/bin/env python3
"""Table of bench/gemma3/run.sh's results: attnserve against
transformers and llama.cpp on the same Gemma 3 weights, decode tokens/s per
(sequences, context) and prefill 512 tokens/s, with the ratios.

Usage: summarize.py gemma3_results.jsonl
"""
import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    ours, peer, llama, meta = {}, {}, {}, {}
    for r in rows:
        b = r.get("bench")
        if b == "machine":
            meta = r
        elif b == "stream_read":
            meta["gbps"] = r["gbps"]
        elif b in ("decode", "prefill"):
            key = (b, r.get("batch", 1), r.get("context", 512 if b == "prefill" else 16))
            {"torch": peer, "llama.cpp": llama}.get(r.get("peer"), ours)[key] = r["tok_s"]
            if r.get("peer") == "torch":
                meta["torch"] = r.get("torch", meta.get("torch"))
                meta["transformers"] = r.get("transformers", meta.get("transformers"))
        elif b == "peer" and r.get("peer") == "llama.cpp":
            meta["llama.cpp"] = r.get("version")
        elif b == "peer_failed":
            meta["llama.cpp"] = f"failed (exit {r.get('exit')}, {r.get('log')})"
    print(f"# {meta.get('cpu')}, {meta.get('cores')} cores, {meta.get('threads')} threads, {meta.get('date')}, "
          f"load {meta.get('load')}; STREAM read {meta.get('gbps')} GB/s; torch {meta.get('torch')}, "
          f"transformers {meta.get('transformers')}, llama-cpp-python {meta.get('llama.cpp')}")
    print("| measure | attnserve f32 tok/s | transformers f32 tok/s | ratio | llama.cpp f32 tok/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(ours, key=lambda k: (k[0] != "decode", k[2], k[1])):
        kind, batch, context = key
        name = f"decode, {batch} seq, context {context}" if kind == "decode" else "prefill 512"
        cells = []
        for table in (peer, llama):
            theirs = table.get(key)
            cells += [f"{theirs}" if theirs else "n/a", f"{ours[key] / theirs:.2f}x" if theirs else "n/a"]
        print(f"| {name} | {ours[key]:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
