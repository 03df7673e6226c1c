#!/usr/bin/env python3
"""One rerank point after another: attnserve's /rerank (HTTP, one client,
closed loop) then sentence-transformers' CrossEncoder.predict on the same
pairs, each for --seconds after a warm-up; prints a markdown table with the
ratio. Every document of a point has exactly WORDS words, so the pairs of
both engines have the same tokens. See run.sh."""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from closed_loop import post, texts, timed  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--points", default="1x16,8x16,32x16,8x128,32x128")
    args = p.parse_args()

    import sentence_transformers
    import torch
    torch.set_num_threads(args.threads)
    reference = sentence_transformers.CrossEncoder(args.model, device="cpu")
    rng = random.Random(7)
    query = "how do cats spend the afternoon in the city?"

    print(f"threads {args.threads}, torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}")
    print("| documents x words | attnserve pairs/s | attnserve median call ms | CrossEncoder pairs/s "
          "| CrossEncoder median call ms | ratio | max abs score diff |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for point in args.points.split(","):
        count, words = (int(x) for x in point.split("x"))
        docs = texts(count, words, rng)
        body = json.dumps({"query": query, "texts": docs, "truncate": True})
        answer = {}

        def served():
            answer["ranks"] = post(args.url, "/rerank", body)

        pairs = [(query, d) for d in docs]

        def peer():
            answer["peer"] = reference.predict(pairs, batch_size=count, show_progress_bar=False)

        n_ours, s_ours, med_ours = timed(served, args.seconds)
        n_peer, s_peer, med_peer = timed(peer, args.seconds)
        ours = {r["index"]: r["score"] for r in answer["ranks"]}
        diff = max(abs(ours[i] - float(answer["peer"][i])) for i in range(count))
        rate_ours = n_ours * count / s_ours
        rate_peer = n_peer * count / s_peer
        print(f"| {count} x {words} | {rate_ours:.1f} | {med_ours * 1e3:.2f} | {rate_peer:.1f} | "
              f"{med_peer * 1e3:.2f} | {rate_ours / rate_peer:.2f}x | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
