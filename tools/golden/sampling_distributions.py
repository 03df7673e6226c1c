#!/usr/bin/env python3
"""Reference sampling distributions: what a token is drawn from.

For a logits row and sampling parameters, the probabilities transformers'
logits processors leave, in the order transformers' generate() applies
them (and vLLM's for the bias and penalties):

  SequenceBiasLogitsProcessor (one-token sequences: OpenAI's logit_bias)
  -> RepetitionPenaltyLogitsProcessor (prompt + output)
  -> frequency / presence penalties over the output (OpenAI's formula; HF
     has no processor for them: decoder_penalties.OpenAiPenalties)
  -> TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper
  -> MinPLogitsWarper -> TypicalLogitsWarper -> softmax.

Rows: the real stories260K's next-token logits after "Once upon a time"
(the model as decoder_penalties.py builds it and checks against run.c), and
a seeded random row of 96 values. Every case records `cut_margin`, how far
the kept set was from changing: the smallest distance of a top-p
cumulative sum from 1 - top_p, of a probability from the min-p floor, of a
typical-p cumulative sum from typical_p and of the last kept token's
distance from the entropy from the next one's, relative to those
thresholds, so a float32 (here) against float64 (the engine) difference
cannot move a token across.

Writes tests/golden/decoder_sampling/distributions.json.

Usage: .cache/venv/bin/python tools/golden/sampling_distributions.py
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import transformers
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import decoder_penalties  # noqa: E402  (the stories260K conversion and OpenAI's penalties)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "decoder_sampling" / "distributions.json"
SEED = 20261205


def processors(p, prompt_len):
    procs = LogitsProcessorList()
    if p.get("logit_bias"):
        procs.append(SequenceBiasLogitsProcessor([[[int(k)], float(v)] for k, v in p["logit_bias"].items()]))
    if p.get("repetition_penalty", 1.0) != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(p["repetition_penalty"]))
    if p.get("frequency_penalty", 0.0) != 0.0 or p.get("presence_penalty", 0.0) != 0.0:
        procs.append(decoder_penalties.OpenAiPenalties(p.get("frequency_penalty", 0.0),
                                                       p.get("presence_penalty", 0.0), prompt_len))
    procs.append(TemperatureLogitsWarper(p["temperature"]))
    if p.get("top_k", 0) > 0:
        procs.append(TopKLogitsWarper(p["top_k"]))
    if p.get("top_p", 1.0) < 1.0:
        procs.append(TopPLogitsWarper(p["top_p"]))
    if p.get("min_p", 0.0) > 0.0:
        procs.append(MinPLogitsWarper(p["min_p"]))
    if p.get("typical_p", 1.0) < 1.0:
        procs.append(TypicalLogitsWarper(p["typical_p"]))
    return procs


def cut_margin(logits, history, prompt_len, p):
    """How far from the top-p and min-p thresholds the kept set was."""
    margin = float("inf")
    before_top_p = {k: v for k, v in p.items() if k not in ("top_p", "min_p", "typical_p")}
    scores = processors(before_top_p, prompt_len)(history, logits.clone())
    if p.get("top_p", 1.0) < 1.0:
        cum = torch.sort(scores, descending=False)[0].softmax(dim=-1).cumsum(dim=-1)[0]
        cut = 1.0 - p["top_p"]
        margin = min(margin, float((cum - cut).abs().min()) / cut)
    if p.get("typical_p", 1.0) < 1.0:
        before = {k: v for k, v in p.items() if k != "typical_p"}
        normalized = processors(before, prompt_len)(history, logits.clone()).log_softmax(dim=-1)[0]
        live = torch.isfinite(normalized)
        ent = float(-(normalized[live] * normalized[live].exp()).sum())
        shifted = (-normalized[live] - ent).abs()
        order = torch.argsort(shifted)
        cum = normalized[live].exp()[order].cumsum(dim=-1)
        mass = p["typical_p"]
        margin = min(margin, float((cum - mass).abs().min()) / mass)
        last = min(int((cum < mass).sum()), len(order) - 1)
        ranked = shifted[order]
        if last + 1 < len(ranked):
            margin = min(margin, float(ranked[last + 1] - ranked[last]) / max(float(ranked[last]), 1e-30))
    if p.get("min_p", 0.0) > 0.0:
        without_min_p = {k: v for k, v in p.items() if k not in ("min_p", "typical_p")}
        probs = processors(without_min_p, prompt_len)(history, logits.clone()).softmax(dim=-1)[0]
        floor = p["min_p"] * float(probs.max())
        live = probs[probs > 0]
        margin = min(margin, float((live - floor).abs().min()) / floor)
    return margin


def main():
    torch.manual_seed(0)
    model = decoder_penalties.load_stories260k()
    # The prefix: "Once upon a time" and the start of its greedy story, cut
    # where the next token is least certain (highest entropy among the first
    # 40), so the truncations below keep more than one token.
    story, _ = decoder_penalties.greedy(model, decoder_penalties.ONCE, 40, LogitsProcessorList())
    with torch.no_grad():
        all_logits = model(input_ids=torch.tensor([decoder_penalties.ONCE + story])).logits[0].float()
    n0 = len(decoder_penalties.ONCE)
    entropy = [float(-(row.log_softmax(-1).exp() * row.log_softmax(-1)).sum()) for row in all_logits[n0 - 1:]]
    cut = int(np.argmax(entropy))
    once = decoder_penalties.ONCE + story[:cut]
    real = all_logits[n0 - 1 + cut]
    rng = np.random.default_rng(SEED)
    random_row = torch.tensor(rng.normal(0.0, 3.0, size=96), dtype=torch.float32)

    # name, row, history (prompt + output), output tokens, parameters
    real_hist = once + once[1:6]  # an "output" that repeats prompt ids
    rand_hist = [3, 3, 17, 40, 40, 40, 95, 3, 61]
    cases = [
        ("real_temperature", "stories260K", once, 0, {"temperature": 0.7}),
        ("real_top_k", "stories260K", once, 0, {"temperature": 1.0, "top_k": 20}),
        ("real_top_p", "stories260K", once, 0, {"temperature": 1.3, "top_p": 0.8}),
        ("real_min_p", "stories260K", once, 0, {"temperature": 1.0, "min_p": 0.05}),
        ("real_k_p_min_p", "stories260K", once, 0, {"temperature": 0.9, "top_k": 50, "top_p": 0.95,
                                                    "min_p": 0.02}),
        ("real_everything", "stories260K", real_hist, 5, {
            "temperature": 0.8, "top_k": 100, "top_p": 0.9, "min_p": 0.01, "repetition_penalty": 1.2,
            "frequency_penalty": 0.6, "presence_penalty": 0.3, "logit_bias": {"403": -3.0, "280": 2.0}}),
        ("random_min_p_only", "random", rand_hist, 4, {"temperature": 2.0, "min_p": 0.2}),
        ("random_penalties", "random", rand_hist, 4, {
            "temperature": 1.0, "repetition_penalty": 0.7, "frequency_penalty": -0.5, "presence_penalty": 1.5,
            "logit_bias": {"3": 4.0, "95": -100.0, "0": 1.25}}),
        ("random_top_p_min_p", "random", rand_hist, 9, {"temperature": 3.0, "top_p": 0.6, "min_p": 0.1,
                                                        "frequency_penalty": 0.25}),
        ("real_typical_p", "stories260K", once, 0, {"temperature": 1.0, "typical_p": 0.5}),
        ("real_top_k_typical_p", "stories260K", once, 0, {"temperature": 0.8, "top_k": 30, "typical_p": 0.9}),
        ("random_typical_p", "random", rand_hist, 0, {"temperature": 2.5, "typical_p": 0.3}),
        ("random_min_p_typical_p", "random", rand_hist, 4, {"temperature": 1.5, "min_p": 0.05, "typical_p": 0.7,
                                                            "repetition_penalty": 1.3}),
    ]
    out = []
    for name, row_name, history, output_tokens, p in cases:
        logits = (real if row_name == "stories260K" else random_row)[None].clone()
        ids = torch.tensor([history])
        prompt_len = len(history) - output_tokens
        probs = processors(p, prompt_len)(ids, logits.clone()).softmax(dim=-1)[0]
        margin = cut_margin(logits, ids, prompt_len, p)
        assert margin > 1e-4, (name, margin)
        kept = int((probs > 0).sum())
        print(f"{name}: {kept} of {probs.numel()} tokens kept, cut margin {margin:.2e}")
        out.append({"name": name, "row": row_name, "history": history, "output_tokens": output_tokens, **p,
                    "probs": [float(x) for x in probs], "kept": kept,
                    "cut_margin": margin if np.isfinite(margin) else None})  # None: nothing was cut
    doc = {
        "generator": "tools/golden/sampling_distributions.py",
        "seed": SEED,
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "numpy": np.__version__},
        "stories260K_prefix": once,
        "rows": {"stories260K": [float(x) for x in real], "random": [float(x) for x in random_row]},
        "cases": out,
    }
    OUT.write_text(json.dumps(doc, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
