#!/usr/bin/env python3
"""Writes a SPLADE model of splade-cocondenser's kind at all-MiniLM-L6-v2's
size (6 layers, hidden 384, 12 heads, the 30,522-piece uncased vocabulary,
512 positions): MiniLM's trained encoder with a seeded masked-language-model
head (transform N(0, 0.05), its LayerNorm 1 / 0, the decoder tied to MiniLM's
word embeddings as BertForMaskedLM ties it, decoder bias -3.5 so most entries
are zero), saved by sentence-transformers' SparseEncoder (MLMTransformer +
SpladePooling max + relu) with MiniLM's tokenizer files. No trained SPLADE
model is available offline; this one has a real model's shapes, vocabulary
and head cost for the SPLADE benchmark.

Usage: python tools/python/minilm_splade.py MINILM_DIR OUT_DIR
"""
import pathlib
import shutil
import sys

SEED = 20261207


def write_minilm_splade(minilm: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    import torch
    import transformers
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    shutil.rmtree(out, ignore_errors=True)
    raw = out.with_name(out.name + ".raw")
    shutil.rmtree(raw, ignore_errors=True)
    config = transformers.BertConfig.from_pretrained(str(minilm), architectures=["BertForMaskedLM"])
    torch.manual_seed(SEED)
    model = transformers.BertForMaskedLM.from_pretrained(str(minilm), config=config)
    with torch.no_grad():
        head = model.cls.predictions
        head.transform.dense.weight.normal_(0, 0.05)
        head.transform.dense.bias.zero_()
        head.transform.LayerNorm.weight.fill_(1.0)
        head.transform.LayerNorm.bias.zero_()
        head.bias.fill_(-3.5)
    model.save_pretrained(str(raw), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm / name, raw / name)
    encoder = SparseEncoder(modules=[MLMTransformer(str(raw), max_seq_length=256),
                                     SpladePooling(pooling_strategy="max", activation_function="relu")],
                            device="cpu")
    encoder.save(str(out))
    shutil.rmtree(raw)
    (out / "README.md").unlink(missing_ok=True)
    return out


if __name__ == "__main__":
    write_minilm_splade(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
