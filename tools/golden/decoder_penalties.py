#!/usr/bin/env python3
"""Reference greedy continuations under logit bias and the penalties.

For each case (a model, a prompt, and logit_bias / repetition_penalty /
frequency_penalty / presence_penalty values) it runs the model with
transformers on CPU in float32, token by token through HF's KV cache, and
picks each token by argmax over the logits processed in vLLM's order:

  1. logit_bias: transformers' SequenceBiasLogitsProcessor with one-token
     sequences (a one-token sequence's bias is always applied);
  2. repetition_penalty: transformers' RepetitionPenaltyLogitsProcessor over
     prompt + output (its input_ids);
  0. min_tokens: transformers' MinNewTokensLengthLogitsProcessor over EOS
     and the stop token ids (vLLM applies it first; being -inf, where it
     goes does not matter);
  3. frequency_penalty and presence_penalty over the output tokens only.
     transformers has no processor for these (its server maps
     frequency_penalty onto repetition_penalty, which is another formula), so
     OpenAiPenalties below is written from OpenAI's documented formula
       mu[j] -> mu[j] - c[j] * alpha_frequency - float(c[j] > 0) * alpha_presence
     with c[j] counting token j in the output, as vLLM applies it.

Models:
  llama_tiny  the random tiny Llama of tests/golden/decoder_models/;
  stories260K the real trained model of ../shared/models/stories260K, its
              GGUF's weights put into a transformers LlamaForCausalLM by
              decoder_logits.load_gguf_weights (Q/K rows un-permuted from
              llama.cpp's order). The script first
              checks that this model reproduces run.c's greedy tokens from
              greedy_reference.json, so the conversion is known right.

Writes tests/golden/decoder_sampling/penalties.json: per case the prompt, the
parameters, the greedy tokens, and min_margin, the smallest gap between the
best and the second-best processed logit met on the way (how far from a tie
each choice was).

Usage: .cache/venv/bin/python tools/golden/decoder_penalties.py
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gguf
import numpy as np
import torch
import transformers
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinNewTokensLengthLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import decoder_logits  # noqa: E402  (llama.cpp tensor names -> transformers' Llama)

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
STORIES = ROOT.parent / "shared" / "models" / "stories260K"
OUT = ROOT / "tests" / "golden" / "decoder_sampling" / "penalties.json"


class OpenAiPenalties:
    """OpenAI's frequency and presence penalties over the output tokens."""

    def __init__(self, frequency, presence, prompt_len):
        self.frequency, self.presence, self.prompt_len = frequency, presence, prompt_len

    def __call__(self, input_ids, scores):
        out = input_ids[0, self.prompt_len:]
        counts = torch.bincount(out, minlength=scores.shape[-1]).to(scores.dtype)
        scores = scores - self.frequency * counts
        return scores - self.presence * (counts > 0).to(scores.dtype)


def processors(case, prompt_len):
    procs = LogitsProcessorList()
    if case.get("min_tokens", 0) > 0:
        # vLLM's min_tokens: EOS (2 for both models) and the stop token ids
        # cannot be chosen before the output has min_tokens tokens.
        procs.append(MinNewTokensLengthLogitsProcessor(prompt_len, case["min_tokens"],
                                                       [2] + case.get("stop_token_ids", [])))
    if case.get("logit_bias"):
        procs.append(SequenceBiasLogitsProcessor([[[int(k)], float(v)] for k, v in case["logit_bias"].items()]))
    if case.get("repetition_penalty", 1.0) != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(case["repetition_penalty"]))
    if case.get("frequency_penalty", 0.0) != 0.0 or case.get("presence_penalty", 0.0) != 0.0:
        procs.append(OpenAiPenalties(case.get("frequency_penalty", 0.0), case.get("presence_penalty", 0.0),
                                     prompt_len))
    return procs


def greedy(model, prompt, new_tokens, procs):
    ids = torch.tensor([prompt])
    out, margin = [], float("inf")
    with torch.no_grad():
        res = model(input_ids=ids, use_cache=True)
        for _ in range(new_tokens):
            scores = procs(ids, res.logits[:, -1].float())[0]
            top2 = torch.topk(scores, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            tok = int(torch.argmax(scores))
            out.append(tok)
            ids = torch.cat([ids, torch.tensor([[tok]])], dim=1)
            res = model(input_ids=torch.tensor([[tok]]), past_key_values=res.past_key_values, use_cache=True)
    return out, margin


def load_stories260k():
    reader = gguf.GGUFReader(str(STORIES / "stories260K.gguf"))
    meta = {k: f.contents() for k, f in reader.fields.items() if k.startswith("llama.")}
    t = {x.name: np.array(x.data, dtype=np.float32) for x in reader.tensors}
    cfg = transformers.LlamaConfig(
        vocab_size=t["token_embd.weight"].shape[0], hidden_size=meta["llama.embedding_length"],
        intermediate_size=meta["llama.feed_forward_length"], num_hidden_layers=meta["llama.block_count"],
        num_attention_heads=meta["llama.attention.head_count"],
        num_key_value_heads=meta["llama.attention.head_count_kv"],
        rms_norm_eps=meta["llama.attention.layer_norm_rms_epsilon"],
        max_position_embeddings=512,  # the .bin's seq_len; the GGUF says 128, rope does not depend on it
        rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(cfg).eval()
    decoder_logits.load_gguf_weights(model, t)
    # The conversion must reproduce run.c's greedy tokens before it is trusted.
    ref = json.loads((STORIES / "expected" / "greedy_reference.json").read_text())
    for c in ref["runc_cases"]:
        if len(c["prompt_ids_with_bos"]) < 2:
            continue
        got, _ = greedy(model, c["prompt_ids_with_bos"], 40, LogitsProcessorList())
        assert got == c["generated_ids"][:40], (c["name"], got, c["generated_ids"][:40])
    return model


# Prompts: stories260K's are its tokenizer's ids of "Once upon a time" and
# "The cat" (BOS first), as greedy_reference.json records them.
ONCE = [1, 403, 407, 261, 378]
CAT = [1, 291, 280, 294]
# llama_tiny's: fixed ids of its 321-token vocabulary.
TINY = [1, 45, 200, 17, 96, 311, 5]

CASES = [
    # name, model, prompt, new tokens, parameters
    ("stories_frequency", "stories260K", ONCE, 48, {"frequency_penalty": 0.8}),
    ("stories_presence", "stories260K", ONCE, 48, {"presence_penalty": 1.2}),
    ("stories_negative_frequency", "stories260K", CAT, 40, {"frequency_penalty": -0.6}),
    ("stories_both", "stories260K", CAT, 48, {"frequency_penalty": 0.5, "presence_penalty": 0.5}),
    ("stories_bias", "stories260K", ONCE, 40, {"logit_bias": {"261": -100, "280": 3.5, "13": -2.0}}),
    ("stories_all", "stories260K", ONCE, 48, {"logit_bias": {"378": -5.0, "394": 2.0},
                                              "repetition_penalty": 1.3, "frequency_penalty": 0.4,
                                              "presence_penalty": -0.3}),
    # 261 ("a") is plain greedy's 4th token after ONCE: as a stop token it
    # would end the story there; min_tokens keeps it (and EOS) out.
    ("stories_min_tokens", "stories260K", ONCE, 30, {"min_tokens": 30, "stop_token_ids": [261]}),
    ("tiny_frequency", "llama_tiny", TINY, 32, {"frequency_penalty": 1.5}),
    ("tiny_all", "llama_tiny", TINY, 32, {"logit_bias": {"200": 1.5, "17": -100}, "repetition_penalty": 0.8,
                                          "frequency_penalty": -0.4, "presence_penalty": 2.0}),
]


def main():
    torch.manual_seed(0)
    models = {
        "stories260K": load_stories260k(),
        "llama_tiny": transformers.AutoModelForCausalLM.from_pretrained(str(MODELS / "llama_tiny"),
                                                                        dtype=torch.float32).eval(),
    }
    cases = []
    for name, model_name, prompt, new_tokens, params in CASES:
        procs = processors(params, len(prompt))
        plain, _ = greedy(models[model_name], prompt, new_tokens, LogitsProcessorList())
        tokens, margin = greedy(models[model_name], prompt, new_tokens, procs)
        # A case whose parameters change nothing would not test them.
        assert tokens != plain, name
        cases.append({"name": name, "model": model_name, "prompt": prompt, "new_tokens": new_tokens,
                      **params, "tokens": tokens, "min_margin": margin})
        print(f"{name}: min margin {margin:.3e}, first difference from plain greedy at "
              f"{next(i for i, (a, b) in enumerate(zip(tokens, plain)) if a != b)}")
    doc = {
        "generator": "tools/golden/decoder_penalties.py",
        "order": "logit_bias -> repetition_penalty (prompt + output) -> frequency, presence (output only) -> argmax",
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "numpy": np.__version__,
            "gguf": getattr(gguf, "__version__", "0.19 (no __version__)"),
        },
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
