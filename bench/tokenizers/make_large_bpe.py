#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json of about RoBERTa's size (its 50,265
entries) for the benchmark: roberta_tiny's tokenizer.json (RoBERTa's
pre-tokenizer, post-processor, decoder and specials) with a vocabulary and
merges trained by Hugging Face tokenizers' BpeTrainer on seeded sentences of
MiniLM's 30,522 words, so that most English words end as one token after many
merges, as they do in RoBERTa's. The merges are not RoBERTa's: the work per
byte is what is measured (and the token counts of both engines are checked
equal).

Usage: make_large_bpe.py REPO MINILM_DIR OUT"""
import json
import os
import random
import sys
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"

from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def main():
    repo, minilm, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    src = json.loads((repo / "tests/golden/encoder_models/roberta_tiny/tokenizer.json").read_text())
    words = [w for w in (minilm / "vocab.txt").read_text().split() if not w.startswith("[")]
    words = [w[2:] if w.startswith("##") else w for w in words]
    rng = random.Random(3)
    sentences = [" ".join(rng.choice(words) for _ in range(16)) for _ in range(60000)]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=50264, min_frequency=2, show_progress=False, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(sentences, trainer)
    trained = json.loads(bpe.to_str())["model"]
    src["model"]["vocab"] = trained["vocab"]
    src["model"]["merges"] = trained["merges"]
    mask_id = len(trained["vocab"])
    for added in src["added_tokens"]:
        if added["content"] == "<mask>":
            added["id"] = mask_id
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(src, ensure_ascii=False))
    print(f"{out}: {mask_id + 1} entries, {len(trained['merges'])} merges")


if __name__ == "__main__":
    main()
