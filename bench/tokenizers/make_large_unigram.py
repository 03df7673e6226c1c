#!/usr/bin/env python3
"""Writes a Unigram tokenizer.json of XLM-R's size (250,002 entries) for the
benchmark: the XLM-R fixture's tokenizer (its specials, 1,002 trained pieces,
the real nmt_nfkc charsmap, its template) with 249,000 seeded synthetic
pieces added at low scores — "▁" + prefixes of MiniLM's words, word
suffixes, and runs of Cyrillic and CJK characters — so that the trie has
about the depth and width of the real one. The pieces are not trained: the
segmentations differ from XLM-R's, the work per byte is what is measured
(and the token counts of both engines are checked equal).

Usage: make_large_unigram.py REPO MINILM_DIR OUT"""
import json
import random
import sys
from pathlib import Path


def main():
    repo, minilm, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    src = json.loads((repo / "tests/golden/encoder_models/xlmr_tiny/tokenizer.json").read_text())
    vocab = src["model"]["vocab"]
    existing = {piece for piece, _ in vocab}
    words = [w for w in (minilm / "vocab.txt").read_text().split() if w.isalpha()]
    letters = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя" + "".join(chr(c) for c in range(0x4E00, 0x4E00 + 3000))
    rng = random.Random(1)
    extra = []
    while len(extra) < 249000:
        r = rng.random()
        if r < 0.4:
            w = rng.choice(words)
            piece = "▁" + w[:rng.randint(1, len(w))]
        elif r < 0.7:
            w = rng.choice(words)
            piece = w[rng.randint(0, len(w) - 1):]
        else:
            piece = ("▁" if rng.random() < 0.5 else "") + "".join(
                rng.choice(letters) for _ in range(rng.randint(1, 4)))
        if piece not in existing:
            existing.add(piece)
            extra.append([piece, -8.0 - 10.0 * rng.random()])
    src["model"]["vocab"] = vocab[:-1] + extra + [vocab[-1]]  # <mask> stays last
    for added in src["added_tokens"]:
        if added["content"] == "<mask>":
            added["id"] = len(src["model"]["vocab"]) - 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(src, ensure_ascii=False))


if __name__ == "__main__":
    main()
