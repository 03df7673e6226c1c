#!/usr/bin/env python3
"""The peer of sampling_bench: the same cases in transformers' logits
processors and torch (softmax + multinomial, or argmax), one thread, on a
row and history made the same way (not the same numbers: the cost does not
depend on them). min_tokens is MinNewTokensLengthLogitsProcessor, logit
bias SequenceBiasLogitsProcessor, frequency/presence the OpenAI formula
over the output (tools/golden/decoder_penalties.OpenAiPenalties).

Usage: hf_peer.py --vocab N --output N --iters N --rounds N
"""
import argparse
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers.generation.logits_process import (
    LogitsProcessorList, MinNewTokensLengthLogitsProcessor, MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "golden"))
from decoder_penalties import OpenAiPenalties  # noqa: E402


def cases(prompt_len):
    penalties = [RepetitionPenaltyLogitsProcessor(1.1), OpenAiPenalties(0.5, 0.5, prompt_len)]
    return {
        "greedy": (LogitsProcessorList(), False),
        "greedy_penalties": (LogitsProcessorList(penalties), False),
        "temperature": (LogitsProcessorList([TemperatureLogitsWarper(0.8)]), True),
        "temperature_top_p": (LogitsProcessorList([TemperatureLogitsWarper(0.8), TopPLogitsWarper(0.9)]), True),
        "everything": (LogitsProcessorList(
            [MinNewTokensLengthLogitsProcessor(prompt_len, 1 << 30, [2]),
             SequenceBiasLogitsProcessor([[[100 + 37 * i], 2.0 if i % 2 else -2.0] for i in range(10)]),
             *penalties, TemperatureLogitsWarper(0.8), TopKLogitsWarper(50), TopPLogitsWarper(0.9),
             MinPLogitsWarper(0.05)]), True),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--output", type=int, default=256)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)  # SampleToken runs on one thread
    g = torch.Generator().manual_seed(20261205)
    logits = torch.randn(1, a.vocab, generator=g) * 3.0
    history = torch.randint(0, a.vocab, (1, 256 + a.output), generator=g)
    for name, (procs, sample) in cases(256).items():
        per_token = []
        with torch.no_grad():
            for _ in range(a.rounds):
                start = time.perf_counter()
                for _ in range(a.iters):
                    scores = procs(history, logits.clone())
                    if sample:
                        torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=g)
                    else:
                        torch.argmax(scores, dim=-1)
                per_token.append((time.perf_counter() - start) * 1e6 / a.iters)
        per_token.sort()
        print(json.dumps({"bench": "sampling", "impl": "transformers", "case": name, "vocab": a.vocab,
                          "output": a.output, "us_per_token": round(per_token[len(per_token) // 2], 2),
                          "min_us": round(per_token[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
