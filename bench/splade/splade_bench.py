#!/usr/bin/env python3
"""One sparse-embedding point after another: attnserve's /embed_sparse (HTTP,
one client, closed loop) then sentence-transformers' SparseEncoder.encode on
the same texts, each for --seconds after a warm-up; prints a markdown table
with the ratio, the non-zero entries per text and the largest weight
difference. Every text of a point has exactly WORDS words, so both engines
read the same tokens. See run.sh."""
import argparse
import http.client
import json
import random
import statistics
import time

WORDS = ("cat sleeps sun window afternoon market fell sharply monday kitten chase string nap lunch bird garden "
         "river bridge city train station morning coffee book table light music song dance rain cloud").split()


def timed(call, seconds):
    call()  # warm-up
    latencies = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(latencies) < 3:
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    return len(latencies), time.perf_counter() - start, statistics.median(latencies)


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
    host, port = args.url.split("//")[1].split(":")
    rng = random.Random(7)

    print(f"threads {args.threads}, torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}")
    print("| texts x words | attnserve texts/s | attnserve median call ms | SparseEncoder texts/s "
          "| SparseEncoder median call ms | ratio | non-zero per text | max abs weight diff |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for point in args.points.split(","):
        count, words = (int(x) for x in point.split("x"))
        texts = [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]
        body = json.dumps({"inputs": texts, "truncate": True})
        answer = {}

        def served():
            # A connection per call: the server closes each after its answer.
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            conn.request("POST", "/embed_sparse", body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            conn.close()
            if r.status != 200:
                raise RuntimeError(f"/embed_sparse answered {r.status}: {data[:300]!r}")
            answer["ours"] = json.loads(data)

        def peer():
            answer["peer"] = reference.encode(texts, batch_size=count, convert_to_tensor=True,
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
