#!/usr/bin/env python3
"""Writes the benchmark's texts (a JSON list) to OUT: the golden fixtures'
sentences (MiniLM's English sentences, the XLM-R fixture's multilingual ones)
as short texts, and paragraphs of them joined as long texts (about 128 and
400 tokens).

Usage: make_texts.py REPO OUT_SHORT OUT_LONG"""
import json
import sys
from pathlib import Path


def main():
    repo, out_short, out_long = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    minilm = json.loads((repo / "tests/golden/encoder/minilm_golden.json").read_text())
    xlmr = json.loads((repo / "tests/golden/encoder/xlmr_golden.json").read_text())
    english = [s["text"] for s in minilm["sentences"] if s["text"]]
    multilingual = [c["text"] for c in xlmr["tokenizer"]["legacy"] if c["text"]]
    short = english + multilingual
    assert len(short) >= 40, len(short)
    long_texts = []
    for i in range(0, len(short), 8):
        long_texts.append(" ".join(short[i:i + 8]))
        long_texts.append(" ".join(short[i:i + 24]))
    Path(out_short).write_text(json.dumps(short, ensure_ascii=False))
    Path(out_long).write_text(json.dumps(long_texts, ensure_ascii=False))


if __name__ == "__main__":
    main()
