#!/usr/bin/env python3
"""One sparse-embedding point after another: attnserve's /embed_sparse (HTTP,
one client, closed loop) then sentence-transformers' SparseEncoder.encode on
the same texts, each for --seconds after a warm-up; prints a markdown table
with the ratio, the non-zero entries per text and the largest weight
difference. Every text of a point has exactly WORDS words, so both engines
read the same tokens. See run.sh."""
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
    reference = sentence_transformers.SparseEncoder(args.model, device="cpu")
    rng = random.Random(7)

    print(f"threads {args.threads}, torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}")
    print("| texts x words | attnserve texts/s | attnserve median call ms | SparseEncoder texts/s "
          "| SparseEncoder median call ms | ratio | non-zero per text | max abs weight diff |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for point in args.points.split(","):
        count, words = (int(x) for x in point.split("x"))
        batch = texts(count, words, rng)
        body = json.dumps({"inputs": batch, "truncate": True})
        answer = {}

        def served():
            answer["ours"] = post(args.url, "/embed_sparse", body)

        def peer():
            answer["peer"] = reference.encode(batch, batch_size=count, convert_to_tensor=True,
                                              show_progress_bar=False).to_dense()

        n_ours, s_ours, med_ours = timed(served, args.seconds)
        n_peer, s_peer, med_peer = timed(peer, args.seconds)
        diff = 0.0
        nonzero = 0
        for entries, row in zip(answer["ours"], answer["peer"]):
            ours = torch.zeros_like(row)
            for e in entries:
                ours[e["index"]] = e["value"]
            diff = max(diff, float((ours - row).abs().max()))
            nonzero += len(entries)
        rate_ours = n_ours * count / s_ours
        rate_peer = n_peer * count / s_peer
        print(f"| {count} x {words} | {rate_ours:.1f} | {med_ours * 1e3:.2f} | {rate_peer:.1f} | "
              f"{med_peer * 1e3:.2f} | {rate_ours / rate_peer:.2f}x | {nonzero / count:.0f} | {diff:.1e} |",
              flush=True)


if __name__ == "__main__":
    main()
