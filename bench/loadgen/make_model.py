#!/usr/bin/env python3
"""Makes the service benchmark's decoder: a random-weight Llama big enough
that batching matters (a step costs milliseconds, mostly reading weights),
small enough for a 2-core machine: hidden 512, 8 layers, 8 heads over 4 KV
heads (head_dim 64), intermediate 1408, vocab 8192, tied embeddings, about
28 M parameters (112 MB in f32). stories260K, the default decoder, is so small
that per-request overhead dominates any measurement of batching.

The tokenizer is the tiny byte-level BPE test tokenizer
(tests/golden/decoder_models/llama_tiny) widened to the model's 8192 ids by
merges of byte pairs, so every id the random model samples detokenizes. The
load generator sends random prompt token ids; text is only streamed back.

Usage: make_model.py OUT_DIR   (skips the work when OUT_DIR/model.safetensors exists)
Never committed; bench/loadgen/run.sh writes it under .cache/.
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCAB = 8192


def widened_tokenizer():
    tok = json.loads((ROOT / "tests/golden/decoder_models/llama_tiny/tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    merges = tok["model"]["merges"]
    taken = set(vocab) | {a["content"] for a in tok["added_tokens"]}
    next_id = max(max(vocab.values()), max(a["id"] for a in tok["added_tokens"])) + 1
    # The 256 byte-level symbols (single characters in the vocabulary).
    base = sorted((t for t in vocab if len(t) == 1), key=lambda t: vocab[t])
    for a in base:
        for b in base:
            if next_id >= VOCAB:
                break
            if a + b in taken:
                continue
            vocab[a + b] = next_id
            merges.append([a, b])
            taken.add(a + b)
            next_id += 1
    assert next_id == VOCAB, next_id
    return tok


def main():
    out = pathlib.Path(sys.argv[1])
    if (out / "model.safetensors").exists():
        print(f"loadgen model already at {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(512)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=0, eos_token_id=1, initializer_range=0.02)
    model = transformers.LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "tokenizer.json").write_text(json.dumps(widened_tokenizer(), ensure_ascii=False))
    # Check the tokenizer loads and round-trips before anything relies on it.
    import tokenizers
    t = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    assert t.get_vocab_size() == VOCAB, t.get_vocab_size()
    assert t.decode(t.encode("Once upon a time").ids) == "Once upon a time"
    n = sum(p.numel() for p in model.parameters())
    print(f"loadgen model: {n / 1e6:.1f} M parameters -> {out}")


if __name__ == "__main__":
    main()
