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
import os
import shutil
import sys


def main():
    repo, out = sys.argv[1], sys.argv[2]
    import torch
    from transformers import ModernBertConfig, ModernBertModel

    torch.manual_seed(0)
    config = ModernBertConfig(vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=6,
                              num_attention_heads=12, max_position_embeddings=8192, local_attention=128,
                              pad_token_id=50283, attn_implementation="sdpa")
    model = ModernBertModel(config).eval()
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    tiny = os.path.join(repo, "tests/golden/encoder_models/modernbert_tiny")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tiny, name), os.path.join(out, name))
    # sentence-transformers' modules as the golden scripts write them.
    sys.path.insert(0, os.path.join(repo, "tools/golden"))
    from encoder_golden_util import write_mean_pooling_modules
    write_mean_pooling_modules(out, 768, 8192, normalize=True)


if __name__ == "__main__":
    main()
