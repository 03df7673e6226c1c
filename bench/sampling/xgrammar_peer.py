#!/usr/bin/env python3
"""Peer for json_mask_bench: xgrammar (the constrained-decoding engine vLLM
uses for response_format json_object) filling the next-token bitmask of
its built-in JSON grammar at each step of the same token sequence over the
same vocabulary, one thread. One JSON line like json_mask_bench's.

Usage: xgrammar_peer.py DIR [--rounds N]   (DIR from json_vocab.py)
"""
import argparse
import json
import pathlib
import statistics
import time
from importlib import metadata

import xgrammar as xgr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    d = pathlib.Path(args.dir)
    vocab = [bytes.fromhex(line) for line in (d / "vocab.hex").read_text().splitlines()]
    doc = json.loads((d / "doc.json").read_text())
    ids = doc["ids"]
    # Byte 0x00 stands in for EOS, as in json_mask_bench.
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[0])
    name = doc.get("name", "story")
    for mode in ("json_object", "json_schema"):
        t0 = time.perf_counter()
        compiler = xgr.GrammarCompiler(info, max_threads=1)
        if mode == "json_object":
            compiled = compiler.compile_builtin_json_grammar()
        else:
            compiled = compiler.compile_json_schema(doc["schema"], any_whitespace=False)
        compile_s = time.perf_counter() - t0
        measure(compiled, compile_s, ids, info, vocab, mode, args.rounds, name)


def measure(compiled, compile_s, ids, info, vocab, mode, rounds, name):
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    per_step = []
    for _ in range(rounds + 1):
        matcher = xgr.GrammarMatcher(compiled)
        t0 = time.perf_counter()
        for token in ids:
            matcher.fill_next_token_bitmask(bitmask)
            assert matcher.accept_token(token), token
        matcher.fill_next_token_bitmask(bitmask)
        per_step.append((time.perf_counter() - t0) / (len(ids) + 1))
    print(json.dumps({"bench": "json_mask", "mode": mode, "impl": "xgrammar " + metadata.version("xgrammar"),
                      "vocab": len(vocab),
                      "steps": len(ids) + 1, "us_per_step": round(statistics.median(per_step[1:]) * 1e6, 2),
                      "first_us_per_step": round(per_step[0] * 1e6, 2),
                      "setup_ms": round(compile_s * 1e3, 1), "doc": name}))


if __name__ == "__main__":
    main()
