#!/usr/bin/env python3
"""Makes a decoder benchmark model with random weights, saved as a Hugging
Face directory (config.json + model.safetensors, f32) with a tiny test
tokenizer of the same layout (the benchmarks feed token ids; the tokenizer
only has to load):

  smollm (default)  SmolLM-135M's architecture (LlamaForCausalLM: hidden 576,
                    30 layers, 9 heads over 3 KV heads, intermediate 1536,
                    vocab 49152, tied embeddings, rope_theta 10000);
                    bench/decoder/run.sh.
  gemma3            gemma-3-270m's (Gemma3ForCausalLM: hidden 640, 18 layers,
                    4 query heads over 1 KV head of 256, intermediate 2048,
                    vocab 262144, tied embeddings, a 512-token sliding window
                    on 5 layers of every 6 with rope base 10000, the others
                    full with rope_theta 1e6, query_pre_attn_scalar 256);
                    bench/gemma3/run.sh.
  qwen3moe          a Qwen3-MoE scaled down from Qwen3-30B-A3B's shape
                    (Qwen3MoeForCausalLM: hidden 512, 8 layers, 8 query heads
                    over 4 KV heads of 64, q/k norms, every layer 32 experts
                    of 256 with the top 4 per token renormalised, vocab
                    32000, untied, rope_theta 1e6; 140 M parameters, of
                    which a token reads about 35 M, the LM head included);
                    bench/moe/run.sh.

Usage: make_model.py OUT_DIR [--arch smollm|gemma3|qwen3moe]   (skips the
work when OUT_DIR/model.safetensors exists). Never committed: ~540 MB /
~1.1 GB / ~565 MB; the run scripts write them under .cache/.
"""
import argparse
import os
import pathlib
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENIZERS = ROOT / "tests/golden/decoder_models"


def smollm():
    torch.manual_seed(135)
    config = transformers.LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=0, eos_token_id=1, initializer_range=0.02)
    return transformers.LlamaForCausalLM(config), TOKENIZERS / "llama_tiny/tokenizer.json"


def gemma3():
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
    return transformers.Gemma3ForCausalLM(config), TOKENIZERS / "gemma3_tiny/tokenizer.json"


def qwen3moe():
    torch.manual_seed(30)
    config = transformers.Qwen3MoeConfig(
        vocab_size=32000, hidden_size=512, intermediate_size=1536, moe_intermediate_size=256, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=4096,
        rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        num_experts=32, num_experts_per_tok=4, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, initializer_range=0.02)
    return transformers.Qwen3MoeForCausalLM(config), TOKENIZERS / "llama_tiny/tokenizer.json"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--arch", choices=["smollm", "gemma3", "qwen3moe"], default="smollm")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    if (out / "model.safetensors").exists():
        print(f"bench model already at {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = {"smollm": smollm, "gemma3": gemma3, "qwen3moe": qwen3moe}[a.arch]()
    model = model.to(torch.float32).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    shutil.copy(tokenizer, out / "tokenizer.json")
    n = sum(p.numel() for p in model.parameters())
    print(f"bench model: {n / 1e6:.1f} M parameters -> {out}")


if __name__ == "__main__":
    main()
