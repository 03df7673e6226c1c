#!/usr/bin/env python3
"""llama.cpp peer for bench/bert_gguf: a BERT GGUF file's mean-pooled,
L2-normalised sentence embeddings through llama-cpp-python's low-level API
(tools/python/bench-requirements.txt), measured as encoder_bench measures
attnserve's: B sequences of exactly N token ids ([CLS] + random ordinary
word pieces + [SEP]; tokenization excluded), as llama.cpp's server batches
them: whole sequences into calls of at most its default 512-token ubatch
(a longer sequence alone), one sequence id each, every token an output
(as llama-cpp-python's embed() submits them), through llama_encode
(llama_decode's path for an encoder); the pooled vectors read back and
normalised. A call attends over all its tokens with a mask between
sequences, so one call for all B x N tokens would cost llama.cpp a
(B x N)^2 attention the server never runs. One warm-up,
then repeats until MIN_SECONDS have passed (at least 3), the median run.

Usage: llamacpp_embed_peer.py MODEL.gguf LABEL THREADS MIN_SECONDS SHAPES(BxN,...)
Prints one JSON line per shape, like encoder_bench's.
"""
import ctypes
import json
import statistics
import sys
import time

import llama_cpp as L
import numpy as np


@L.llama_log_callback
def quiet(level, text, user_data):
    pass


UBATCH = 512  # llama.cpp's default n_ubatch (and the server's embedding batch)


def main():
    path, label, threads, min_seconds, shapes = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), \
        [tuple(int(x) for x in s.split("x")) for s in sys.argv[5].split(",")]
    per_call = {(b, n): max(1, min(b, UBATCH // n)) for b, n in shapes}  # sequences a call
    max_tokens = max(per_call[(b, n)] * n for b, n in shapes)
    max_batch = max(per_call.values())
    L.llama_log_set(quiet, ctypes.c_void_p(0))
    L.llama_backend_init()
    model = L.llama_model_load_from_file(path.encode(), L.llama_model_default_params())
    if not model:
        raise SystemExit(f"llama.cpp could not load {path}")
    n_embd = L.llama_model_n_embd(model)
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = max_tokens  # a non-causal batch runs in one ubatch
    cp.n_seq_max = max_batch
    cp.n_threads = cp.n_threads_batch = threads
    cp.embeddings = True
    cp.pooling_type = L.LLAMA_POOLING_TYPE_MEAN
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit("llama.cpp could not create a context")
    batch = L.llama_batch_init(max_tokens, 0, 1)
    print(json.dumps({"engine": "llama.cpp-info", "label": label, "version": L.__version__, "threads": threads,
                      "system_info": L.llama_print_system_info().decode()}), flush=True)
    rng = np.random.default_rng(1)
    for b, n in shapes:
        ids = rng.integers(1996, 29612, size=(b, n))
        ids[:, 0], ids[:, -1] = 101, 102

        def run():
            t0 = time.perf_counter()
            out = np.empty((b, n_embd), dtype=np.float32)
            step = per_call[(b, n)]
            for first in range(0, b, step):
                seqs = range(first, min(b, first + step))
                L.llama_memory_clear(L.llama_get_memory(ctx), True)
                k = 0
                for j, s in enumerate(seqs):
                    for p in range(n):
                        batch.token[k], batch.pos[k], batch.n_seq_id[k] = int(ids[s, p]), p, 1
                        batch.seq_id[k][0], batch.logits[k] = j, 1
                        k += 1
                batch.n_tokens = k
                if L.llama_encode(ctx, batch) != 0:  # what llama_decode calls for a non-causal model
                    raise SystemExit("llama_encode failed")
                for j, s in enumerate(seqs):
                    out[s] = np.ctypeslib.as_array(L.llama_get_embeddings_seq(ctx, j), shape=(n_embd,))
            out /= np.linalg.norm(out, axis=1, keepdims=True)
            return time.perf_counter() - t0
        run()  # warm-up
        times, spent = [], 0.0
        while len(times) < 3 or spent < min_seconds:
            times.append(run())
            spent += times[-1]
        t = statistics.median(times)
        print(json.dumps({"engine": label, "batch": b, "seq_len": n, "sentences_per_s": round(b / t, 2),
                          "tokens_per_s": round(b * n / t, 1), "latency_ms": round(t * 1e3, 3),
                          "runs": len(times)}), flush=True)
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)


if __name__ == "__main__":
    main()
