#!/usr/bin/env python3
"""Writes a random-weight ModernBERT for the encoder benchmark: ModernBERT-base's
widths (hidden 768, 12 heads, intermediate 1152, vocabulary 50,368, 8,192
positions, local_attention 128, thetas 160000 / 10000, no biases) with 6 of
its 22 layers (0 and 3 global, the rest local, as every third layer is),
transformers' own initialisation (seed 0), sentence-transformers mean pooling
+ Normalize (modernbert-embed's modules), and the golden ModernBERT fixture's
tokenizer (the benchmark feeds token ids). No trained ModernBERT is available
offline; the cost of a forward does not depend on the weights' values.

Usage: python bench/encoder/make_modernbert.py REPO OUT_DIR
"""
import sys

from bench_model_dir import save_with_fixture_tokenizer, write_pooling


def main():
    repo, out = sys.argv[1], sys.argv[2]
    import torch
    from transformers import ModernBertConfig, ModernBertModel

    torch.manual_seed(0)
    config = ModernBertConfig(vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=6,
                              num_attention_heads=12, max_position_embeddings=8192, local_attention=128,
                              pad_token_id=50283, attn_implementation="sdpa")
    model = ModernBertModel(config).eval()
    save_with_fixture_tokenizer(model, repo, out, "modernbert_tiny")
    write_pooling(repo, out, 768, 8192, "mean")


if __name__ == "__main__":
    main()
