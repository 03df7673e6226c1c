#!/usr/bin/env python3
"""Writes a random-weight decoder-based embedder for the encoder benchmark:
Qwen3-Embedding-0.6B's widths (hidden 1024, 16 query heads and 8 KV heads of
128, intermediate 3072, q/k norms, rope theta 1e6) with 6 of its 28 layers
and a 32,000-entry vocabulary (the benchmark's ids stay below it; the table's
size does not change a forward's cost), transformers' own initialisation
(seed 0), saved as the bare Qwen3Model with Qwen3-Embedding's modules
(last-token pooling, Normalize) and the golden Qwen3-pipeline tokenizer (the
benchmark feeds token ids). No trained Qwen3-Embedding is available offline;
the cost of a forward does not depend on the weights' values.

Usage: python bench/encoder/make_causal_embedder.py REPO OUT_DIR
"""
import json
import os
import shutil
import sys

from bench_model_dir import save_with_fixture_tokenizer


def main():
    repo, out = sys.argv[1], sys.argv[2]
    import torch
    from transformers import Qwen3Config, Qwen3Model

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=32000, hidden_size=1024, intermediate_size=3072, num_hidden_layers=6,
                         num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=32768,
                         rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                         attn_implementation="sdpa")
    model = Qwen3Model(config).eval()
    tiny = save_with_fixture_tokenizer(model, repo, out, "qwen3_embedding_tiny")
    shutil.copytree(os.path.join(tiny, "1_Pooling"), os.path.join(out, "1_Pooling"))
    with open(os.path.join(out, "1_Pooling/config.json")) as f:
        pooling = json.load(f)
    pooling["word_embedding_dimension"] = 1024
    with open(os.path.join(out, "1_Pooling/config.json"), "w") as f:
        json.dump(pooling, f)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 32768, "do_lower_case": False}, f)
    shutil.copy(os.path.join(tiny, "modules.json"), os.path.join(out, "modules.json"))


if __name__ == "__main__":
    main()
