#!/usr/bin/env python3
"""Writes a random-weight rotary BERT-family encoder for the encoder
benchmark, at its published base widths (no trained one is available
offline; the cost of a forward does not depend on the weights' values),
with transformers' own initialisation (seed 0), sentence-transformers
modules, and the golden fixture's tokenizer (the benchmark feeds token ids):

  nomic_bert  nomic-embed-text-v1.5's: hidden 768, 12 layers, 12 heads,
              SwiGLU 3072, rotary base 1000, 8,192 positions, vocabulary
              30,528; mean pooling + Normalize
  gte         gte-base-en-v1.5's: hidden 768, 12 layers, 12 heads, GeGLU
              3072, biased attention, rotary base 500,000, 8,192 positions,
              vocabulary 30,528, no token-type table; CLS pooling +
              Normalize (the NTK scaling of the hub's config only changes
              the angle table, which transformers' layout has no key for)

Both are saved in transformers 5's layout (NomicBertModel / GteModel), which
sentence-transformers and ONNX Runtime (the benchmark's peers) run natively.

Usage: python bench/encoder/make_rotary_encoder.py KIND REPO OUT_DIR
"""
import sys

from bench_model_dir import save_with_fixture_tokenizer, write_pooling


def main():
    kind, repo, out = sys.argv[1], sys.argv[2], sys.argv[3]
    import torch
    from transformers import GteConfig, GteModel, NomicBertConfig, NomicBertModel

    torch.manual_seed(0)
    widths = dict(vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                  intermediate_size=3072, max_position_embeddings=8192, attn_implementation="sdpa")
    if kind == "nomic_bert":
        model = NomicBertModel(NomicBertConfig(rope_parameters={"rope_type": "default", "rope_theta": 1000.0},
                                               **widths))
        fixture, pooling = "nomic_bert_tiny", "mean"
    elif kind == "gte":
        model = GteModel(GteConfig(type_vocab_size=0, pad_token_id=0,
                                   rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, **widths))
        fixture, pooling = "gte_tiny", "cls"
    else:
        raise SystemExit(f"unknown kind {kind} (nomic_bert, gte)")
    model = model.eval()
    save_with_fixture_tokenizer(model, repo, out, fixture)
    write_pooling(repo, out, 768, 8192, pooling)

if __name__ == "__main__":
    main()
