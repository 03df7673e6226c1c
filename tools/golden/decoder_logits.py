#!/usr/bin/env python3
"""Reference logits and greedy continuations for the tiny decoder models.

Reads the tiny Hugging Face models in tests/golden/decoder_models/ (made by
decoder_make_models.py), runs them with transformers on CPU in float32 and
writes tests/golden/decoder_logits/<model>.json:

  prompts:  token-id prompts (fixed seed), of several lengths
  logits:   last-position logits of each prompt ([vocab] floats)
  all_logits_prompt0: logits at every position of prompt 0 ([len, vocab])
  greedy:   64 greedy tokens after each prompt (argmax, EOS ignored)
  margin:   the smallest top1 - top2 logit gap met during greedy decoding
            (how robust the token comparison is to float rounding)

Usage: .cache/venv/bin/python tools/golden/decoder_logits.py
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
OUT = ROOT / "tests" / "golden" / "decoder_logits"
SEED = 20260
NEW_TOKENS = 64
PROMPT_LENGTHS = [1, 5, 17, 40]


def greedy(model, prompt):
    ids = torch.tensor([prompt])
    out = []
    margin = float("inf")
    with torch.no_grad():
        res = model(input_ids=ids, use_cache=True)
        past = res.past_key_values
        logits = res.logits[0, -1]
        for _ in range(NEW_TOKENS):
            top2 = torch.topk(logits, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            tok = int(torch.argmax(logits))
            out.append(tok)
            res = model(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = res.past_key_values
            logits = res.logits[0, -1]
    return out, margin


def main():
    torch.manual_seed(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for name in ["llama_tiny", "qwen2_tiny", "gpt2_tiny"]:
        path = MODELS / name
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        model.eval()
        vocab = model.config.vocab_size
        prompts = [[int(x) for x in rng.integers(2, vocab, size=n)] for n in PROMPT_LENGTHS]
        logits, conts, margins = [], [], []
        with torch.no_grad():
            for p in prompts:
                logits.append([float(x) for x in model(input_ids=torch.tensor([p])).logits[0, -1]])
                g, m = greedy(model, p)
                conts.append(g)
                margins.append(m)
            all0 = model(input_ids=torch.tensor([prompts[-1]])).logits[0]
        doc = {
            "model": name,
            "generator": "tools/golden/decoder_logits.py",
            "seed": SEED,
            "versions": {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "numpy": np.__version__,
            },
            "vocab_size": vocab,
            "prompts": prompts,
            "logits": logits,
            "all_logits_last_prompt": [[float(x) for x in row] for row in all0],
            "greedy_new_tokens": NEW_TOKENS,
            "greedy": conts,
            "greedy_min_margin": margins,
        }
        (OUT / f"{name}.json").write_text(json.dumps(doc))
        print(name, "min margins", [f"{m:.2e}" for m in margins])


if __name__ == "__main__":
    main()
