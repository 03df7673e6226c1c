#!/usr/bin/env python3
"""Automatic prefix caching, measured on a running server: the time to first
token of a prompt the cache has never seen (cold) against the same prompt
sent again after the first request ended (warm), and against a chat's next
turn (the same prompt plus new tokens). The peer is the cold request of the
same round, on the same server, just before: the ratio is what the cache
saves. Time to first token is the server's own (usage.time_to_first_token_us,
arrival to first token), so the client's HTTP costs are out of it.

Each round draws a fresh random prompt (token ids in [3, vocab)), so no
round finds another's blocks. One JSON line per case, medians over rounds.

Usage: prefix_cache.py --url http://127.0.0.1:PORT --model NAME --vocab N
         [--prompt-tokens 448] [--turn-tokens 48] [--rounds 9]
"""
import argparse
import json
import random
import statistics
import urllib.request


def ttft_us(url, ids):
    body = json.dumps({"token_ids": {"ids": ids},
                       "sampling": {"max_new_tokens": 1, "temperature": 0, "ignore_eos": True}}).encode()
    req = urllib.request.Request(url + "/v1/generate", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        out = json.loads(r.read())
    return int(out["usage"]["time_to_first_token_us"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--prompt-tokens", type=int, default=448)
    ap.add_argument("--turn-tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    rng = random.Random(20261205)
    ttft_us(a.url, [1] + [rng.randrange(3, a.vocab) for _ in range(a.prompt_tokens - 1)])  # warm-up
    cold, again, turn = [], [], []
    for _ in range(a.rounds):
        prompt = [1] + [rng.randrange(3, a.vocab) for _ in range(a.prompt_tokens - 1)]
        cold.append(ttft_us(a.url, prompt))
        again.append(ttft_us(a.url, prompt))
        turn.append(ttft_us(a.url, prompt + [rng.randrange(3, a.vocab) for _ in range(a.turn_tokens)]))
    base = statistics.median(cold)
    for case, xs in (("cold", cold), ("same_prompt_again", again), ("next_turn", turn)):
        m = statistics.median(xs)
        print(json.dumps({"bench": "prefix_cache", "model": a.model, "case": case,
                          "prompt_tokens": a.prompt_tokens + (a.turn_tokens if case == "next_turn" else 0),
                          "rounds": a.rounds, "median_ttft_ms": round(m / 1000, 3),
                          "cold_over_this": round(base / m, 2)}))


if __name__ == "__main__":
    main()
