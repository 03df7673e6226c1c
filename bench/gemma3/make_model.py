#!/usr/bin/env python3
"""Makes the Gemma 3 benchmark model: gemma-3-270m's architecture with random
weights (Gemma3ForCausalLM: hidden 640, 18 layers, 4 query heads over 1 KV
head of 256, intermediate 2048, vocab 262144, tied embeddings, a 512-token
sliding window on 5 layers of every 6 with rope base 10000, the others full
with rope_theta 1e6, query_pre_attn_scalar 256), saved as a Hugging Face
directory (config.json + model.safetensors, f32) with the tiny gemma3_tiny
tokenizer (the benchmark feeds token ids; the tokenizer only has to load).

Usage: make_model.py OUT_DIR   (skips the work when OUT_DIR/model.safetensors exists)
Never committed: ~1.1 GB. bench/gemma3/run.sh writes it under .cache/.
"""
import os
import pathlib
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    out = pathlib.Path(sys.argv[1])
    if (out / "model.safetensors").exists():
        print(f"bench model already at {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(270)
    layers = 18
    config = transformers.Gemma3TextConfig(
        vocab_size=262144, hidden_size=640, intermediate_size=2048, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256, max_position_embeddings=32768,
        rms_norm_eps=1e-6, query_pre_attn_scalar=256, sliding_window=512,
        layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        tie_word_embeddings=True, bos_token_id=2, eos_token_id=1, pad_token_id=0, initializer_range=0.02)
    model = transformers.Gemma3ForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    shutil.copy(ROOT / "tests/golden/decoder_models/gemma3_tiny/tokenizer.json", out / "tokenizer.json")
    n = sum(p.numel() for p in model.parameters())
    print(f"bench model: {n / 1e6:.1f} M parameters -> {out}")


if __name__ == "__main__":
    main()
