#!/usr/bin/env python3
"""Writes a BERT cross-encoder of ms-marco-MiniLM-L-6-v2's shape (6 layers,
hidden 384, 12 heads, the 30,522-piece uncased vocabulary, 512 positions):
all-MiniLM-L6-v2's trained encoder and pooler under a seeded random one-label
classifier (weight N(0, 0.5), bias N(0, 0.1)), saved by transformers'
save_pretrained with MiniLM's tokenizer files. No trained cross-encoder is
available offline; this one has a real model's shapes and vocabulary for the
integration test and the rerank benchmark.

Usage: python tools/python/minilm_cross_encoder.py MINILM_DIR OUT_DIR
"""
import pathlib
import shutil
import sys

SEED = 20261206


def write_minilm_cross_encoder(minilm: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    import torch
    import transformers

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = transformers.BertConfig.from_pretrained(str(minilm), num_labels=1,
                                                     architectures=["BertForSequenceClassification"])
    torch.manual_seed(SEED)
    model = transformers.BertForSequenceClassification.from_pretrained(str(minilm), config=config)
    with torch.no_grad():
        model.classifier.weight.normal_(0, 0.5)
        model.classifier.bias.normal_(0, 0.1)
    model.save_pretrained(str(out), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm / name, out / name)
    return out


if __name__ == "__main__":
    write_minilm_cross_encoder(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
