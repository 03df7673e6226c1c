#!/usr/bin/env python3
"""The transformers (PyTorch, CPU, f32, eager model calls with its KV cache)
peer of decoder_bench on the same Hugging Face directory: decode tokens/s at
the given batch sizes after a prompt of --context tokens (greedy, each step
one forward of the batch's newest tokens through the cache, as
model.generate's loop does), and prefill tokens/s of one 512-token prompt;
medians over --reps runs. JSON lines shaped like decoder_bench's, with
"peer": "torch".

Usage: torch_peer.py MODEL_DIR --threads N [--steps 16] [--context 16] [--batches 1,4] [--reps 3]
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers


def decode_rate(model, batch, context, steps, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (batch, context), generator=g)
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for _ in range(steps):
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        return batch * steps / (time.perf_counter() - t0)


def prefill_rate(model, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (1, 512), generator=g)
    with torch.inference_mode():
        t0 = time.perf_counter()
        model(input_ids=ids, use_cache=True, logits_to_keep=1)
        return 512 / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--context", type=int, default=16)
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-prefill", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    decode_rate(model, 1, 16, 2, vocab, 0)  # warm-up
    for b in [int(x) for x in a.batches.split(",") if x]:
        rate = statistics.median(decode_rate(model, b, a.context, a.steps, vocab, r) for r in range(a.reps))
        print(json.dumps({"bench": "decode", "peer": "torch", "batch": b, "context": a.context,
                          "tok_s": round(rate, 1), "torch": torch.__version__,
                          "transformers": transformers.__version__}), flush=True)
    if not a.no_prefill:
        rate = statistics.median(prefill_rate(model, vocab, r) for r in range(a.reps))
        print(json.dumps({"bench": "prefill", "peer": "torch", "tokens": 512, "tok_s": round(rate, 1)}), flush=True)


if __name__ == "__main__":
    main()
