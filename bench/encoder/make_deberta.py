#!/usr/bin/env python3
"""Writes a random-weight DeBERTa-v3 encoder for the encoder benchmark at
deberta-v3-base's widths (no trained one is available offline; the cost of
a forward does not depend on the weights' values): hidden 768, 12 layers,
12 heads, intermediate 3072, vocabulary 128,100, 512 positions, 256
position buckets, shared key projections, a normed relative table, no
position table (relative_attention, pos_att_type p2c / c2p), with
transformers' own initialisation (seed 0), mean pooling + Normalize, and
the golden fixture's tokenizer (the benchmark feeds token ids).

Usage: python bench/encoder/make_deberta.py REPO OUT_DIR
"""
import sys

from bench_model_dir import save_with_fixture_tokenizer, write_pooling


def main():
    repo, out = sys.argv[1], sys.argv[2]
    import torch
    from transformers import DebertaV2Config, DebertaV2Model

    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
        max_position_embeddings=512, relative_attention=True, position_buckets=256, max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
        type_vocab_size=0, pad_token_id=0, layer_norm_eps=1e-7, attn_implementation="eager")
    model = DebertaV2Model(config).eval()
    save_with_fixture_tokenizer(model, repo, out, "deberta_v3_tiny")
    write_pooling(repo, out, 768, 512, "mean")


if __name__ == "__main__":
    main()
