#!/usr/bin/env python3
"""Makes the decoder benchmark model: SmolLM-135M's architecture with random
weights (LlamaForCausalLM: hidden 576, 30 layers, 9 heads over 3 KV heads,
intermediate 1536, vocab 49152, tied embeddings, rope_theta 10000), saved as
a Hugging Face directory (config.json + model.safetensors, f32) with the tiny
test tokenizer (the benchmark feeds token ids; the tokenizer only has to load).

Usage: make_model.py OUT_DIR   (skips the work when OUT_DIR/model.safetensors exists)
Never committed: ~540 MB. bench/decoder/run.sh writes it under .cache/.
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
    torch.manual_seed(135)
    config = transformers.LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=0, eos_token_id=1, initializer_range=0.02)
    model = transformers.LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    shutil.copy(ROOT / "tests/golden/decoder_models/llama_tiny/tokenizer.json", out / "tokenizer.json")
    n = sum(p.numel() for p in model.parameters())
    print(f"bench model: {n / 1e6:.1f} M parameters -> {out}")


if __name__ == "__main__":
    main()
