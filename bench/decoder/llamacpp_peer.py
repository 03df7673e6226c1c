#!/usr/bin/env python3
"""llama.cpp peer for the decoder benchmark (bench/decoder/run.sh), through
llama-cpp-python's low-level API (tools/python/bench-requirements.txt).

Measures exactly what decoder_bench measures for attnserve, on the same
weights converted to GGUF (make_gguf.py), with the same thread count:
  decode  at 1/4/8/16 parallel sequences (seq ids 0..B-1 in one llama_batch
          per step): each sequence prefills a 16-token prompt, then STEPS
          decode steps are timed; each step reads every sequence's logits and
          feeds back its argmax (greedy, as attnserve's step samples);
          aggregate tokens/s, median of 3 runs;
  prefill one 512-token prompt in one llama_decode (logits of the last
          token only), tokens/s, median of 3 runs.
Flash attention on (llama.cpp's fast path for batched decode).
--context N prefills N tokens instead of 16 before the timed decode steps
(bench/gemma3: where sliding windows matter); --batches picks the sequence
counts; --no-prefill skips the prefill measure.

Usage: llamacpp_peer.py MODEL.gguf [--threads N] [--steps N] [--label NAME]
                        [--batches 1,4,8,16] [--context N] [--no-prefill]
Prints JSON lines like decoder_bench's, with "peer":"llama.cpp".
"""
import argparse
import json
import statistics
import time

import llama_cpp as L
import numpy as np

PROMPT = 16


def prompt(n, vocab, salt):
    # The same ids decoder_bench feeds (Prompt() there).
    return [2 + (i * 7919 + salt * 104729) % (vocab - 2) for i in range(n)]


class Peer:
    def __init__(self, path, threads, n_ctx=4096):
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise SystemExit(f"llama.cpp could not load {path}")
        self.vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = 512
        cp.n_ubatch = 512
        cp.n_seq_max = 16
        cp.n_threads = threads
        cp.n_threads_batch = threads
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
        cp.kv_unified = True
        cp.no_perf = True
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise SystemExit("llama.cpp could not create a context")
        self.batch = L.llama_batch_init(512, 0, 1)

    def clear(self):
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)

    def decode(self, items):
        """items: list of (token, pos, seq, want_logits)."""
        b = self.batch
        for i, (tok, pos, seq, out) in enumerate(items):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = 1 if out else 0
        b.n_tokens = len(items)
        rc = L.llama_decode(self.ctx, b)
        if rc != 0:
            raise SystemExit(f"llama_decode returned {rc}")

    def argmax(self, i):
        p = L.llama_get_logits_ith(self.ctx, i)
        return int(np.ctypeslib.as_array(p, shape=(self.vocab,)).argmax())

    def run_decode(self, batch, steps, rep, context=PROMPT):
        self.clear()
        nxt = []
        for s in range(batch):  # prefill (untimed), one sequence at a time, 512-token llama_decode calls
            toks = prompt(context, self.vocab, s + 100 * rep)
            for c in range(0, context, 512):
                self.decode([(t, p, s, p == context - 1) for p, t in enumerate(toks) if c <= p < c + 512])
            nxt.append(self.argmax((context - 1) % 512))
        t0 = time.perf_counter()
        for step in range(steps):
            self.decode([(nxt[s], context + step, s, True) for s in range(batch)])
            nxt = [self.argmax(s) for s in range(batch)]
        return batch * steps / (time.perf_counter() - t0)

    def run_prefill(self, n, rep):
        self.clear()
        toks = prompt(n, self.vocab, rep)
        t0 = time.perf_counter()
        self.decode([(t, p, 0, p == n - 1) for p, t in enumerate(toks)])
        self.argmax(n - 1)
        return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--label", default="")
    ap.add_argument("--batches", default="1,4,8,16")
    ap.add_argument("--context", type=int, default=PROMPT)
    ap.add_argument("--no-prefill", action="store_true")
    a = ap.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    # Every sequence's prompt and steps in the one (unified) cache.
    peer = Peer(a.model, a.threads, n_ctx=max(4096, max(batches) * (a.context + a.steps + 4)))
    label = a.label or a.model
    print(json.dumps({"bench": "peer", "peer": "llama.cpp", "version": L.__version__,
                      "model": label, "threads": a.threads,
                      "system_info": L.llama_print_system_info().decode()}), flush=True)
    peer.run_decode(1, 4, 99)  # warm-up
    for batch in batches:
        rates = [peer.run_decode(batch, a.steps, rep, a.context) for rep in range(3)]
        print(json.dumps({"bench": "decode", "peer": "llama.cpp", "model": label, "batch": batch,
                          "context": a.context, "tok_s": round(statistics.median(rates), 1)}), flush=True)
    if not a.no_prefill:
        rates = [peer.run_prefill(512, rep) for rep in range(3)]
        print(json.dumps({"bench": "prefill", "peer": "llama.cpp", "model": label, "tokens": 512,
                          "tok_s": round(statistics.median(rates), 1)}), flush=True)
    L.llama_batch_free(peer.batch)
    L.llama_free(peer.ctx)
    L.llama_model_free(peer.model)


if __name__ == "__main__":
    main()
