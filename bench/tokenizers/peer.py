#!/usr/bin/env python3
"""Hugging Face tokenizers on the same texts as tokenize_bench: each text
encoded with the special tokens, one after another on one thread
(Tokenizer.encode in a loop, and encode_batch with its thread pool held to one
thread), repeated for at least MIN_SECONDS. Prints one JSON line per mode with
the token count and tokenize_bench's hash of every id (run.sh checks both
agree with tokenize_bench's).

Usage: peer.py TOKENIZER_JSON TEXTS_JSON MIN_SECONDS LABEL"""
import json
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402


def ids_hash(encodings):
    # tokenize_bench's: FNV-1a 64 over each id's value.
    h = 1469598103934665603
    for e in encodings:
        for i in e.ids:
            h = ((h ^ i) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    path, texts_path, min_seconds, label = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    tok = tokenizers.Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    texts = json.load(open(texts_path, encoding="utf-8"))
    for mode in ("encode", "encode_batch"):
        passes, start, tokens = 0, time.perf_counter(), 0
        while True:
            if mode == "encode":
                encodings = [tok.encode(t) for t in texts]
            else:
                encodings = tok.encode_batch(texts)
            tokens = sum(len(e.ids) for e in encodings)
            passes += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        print(json.dumps({"engine": f"tokenizers.{mode}", "tokenizer": tok.model.__class__.__name__.lower(),
                          "label": label, "texts": len(texts), "tokens": tokens, "ids_hash": ids_hash(encodings),
                          "seconds_per_pass": round(elapsed / passes, 6),
                          "tokens_per_second": round(tokens * passes / elapsed, 1),
                          "version": tokenizers.__version__}))


if __name__ == "__main__":
    main()
