#!/usr/bin/env python3
"""Hugging Face tokenizers on the same texts as tokenize_bench: each text
encoded with the special tokens, one after another on one thread
(Tokenizer.encode in a loop, and encode_batch with its thread pool held to one
thread), repeated for at least MIN_SECONDS. Prints one JSON line per mode, and
checks the token count equals the one tokenize_bench printed (same ids count).

Usage: peer.py TOKENIZER_JSON TEXTS_JSON MIN_SECONDS LABEL"""
import json
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402


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
                tokens = sum(len(tok.encode(t).ids) for t in texts)
            else:
                tokens = sum(len(e.ids) for e in tok.encode_batch(texts))
            passes += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        print(json.dumps({"engine": f"tokenizers.{mode}", "tokenizer": tok.model.__class__.__name__.lower(),
                          "label": label, "texts": len(texts), "tokens": tokens,
                          "seconds_per_pass": round(elapsed / passes, 6),
                          "tokens_per_second": round(tokens * passes / elapsed, 1),
                          "version": tokenizers.__version__}))


if __name__ == "__main__":
    main()
