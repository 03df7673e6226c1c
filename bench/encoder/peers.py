#!/usr/bin/env python3
"""Peers for bench/encoder: sentence-transformers (PyTorch CPU) and ONNX
Runtime (the model exported once with torch.onnx), on the same shapes and
thread count as encoder_bench. The bf16 peer of attnserve's
--matmul-precision=bf16 is sentence-transformers under
torch.autocast("cpu", bfloat16), PyTorch's own way to run a f32 model's
matmuls in bf16 (on AMX where the CPU has it). Same inputs: token ids [CLS] + random word
pieces + [SEP], exactly N per sequence, tokenization excluded; each output
is the mean-pooled, L2-normalised sentence embedding, as attnserve computes.

Usage: peers.py MODEL_DIR CACHE_DIR THREADS MIN_SECONDS SHAPES
Env: ENCODER_BENCH_ONNX=0 leaves ONNX Runtime out (its export pools by the
mean: not for a last-token model).
Prints one JSON line per (engine, shape), like encoder_bench.
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch


def make_batch(rng, batch, seq_len):
    ids = rng.integers(1996, 29612, size=(batch, seq_len), dtype=np.int64)
    ids[:, 0] = 101
    ids[:, -1] = 102
    return ids


def measure(fn, min_seconds):
    fn()  # warm-up
    times, spent = [], 0.0
    while len(times) < 3 or spent < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return statistics.median(times), len(times)


class Pooled(torch.nn.Module):
    """BertModel + mean pooling over the mask + L2 normalisation."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)


def export_onnx(model_dir, path):
    import transformers
    if os.path.exists(path):
        return
    bert = transformers.AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    ids = torch.ones((2, 16), dtype=torch.int64)
    args = (ids, torch.ones_like(ids))
    names = dict(input_names=["input_ids", "attention_mask"], output_names=["embedding"])
    try:
        torch.onnx.export(Pooled(bert), args, path, dynamo=False, opset_version=17,
                          dynamic_axes={"input_ids": {0: "b", 1: "n"}, "attention_mask": {0: "b", 1: "n"},
                                        "embedding": {0: "b"}}, **names)
    except Exception as e:  # legacy exporter unavailable: the dynamo one
        print(f"legacy ONNX export failed ({e}); using dynamo export", file=sys.stderr)
        b, n = torch.export.Dim("b"), torch.export.Dim("n", max=512)
        torch.onnx.export(Pooled(bert), args, path, dynamo=True,
                          dynamic_shapes={"input_ids": {0: b, 1: n}, "attention_mask": {0: b, 1: n}}, **names)


def main():
    model_dir, cache_dir, threads, min_seconds, shapes = sys.argv[1:6]
    threads, min_seconds = int(threads), float(min_seconds)
    shapes = [tuple(int(x) for x in s.split("x")) for s in shapes.split(",")]
    torch.set_num_threads(threads)
    from sentence_transformers import SentenceTransformer
    import onnxruntime as ort

    st = SentenceTransformer(model_dir, device="cpu").eval()
    os.makedirs(cache_dir, exist_ok=True)
    sess = None
    if os.environ.get("ENCODER_BENCH_ONNX", "1") != "0":
        # One export per model folder (the MiniLM run and the ModernBERT one share the cache folder's parent).
        onnx_path = os.path.join(cache_dir, os.path.basename(os.path.normpath(model_dir)) + ".onnx")
        export_onnx(model_dir, onnx_path)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    versions = {"torch": torch.__version__, "onnxruntime": ort.__version__,
                "sentence_transformers": __import__("sentence_transformers").__version__}
    print(json.dumps({"peer_versions": versions, "threads": threads}), flush=True)

    rng = np.random.default_rng(1)
    for batch, seq_len in shapes:
        ids = make_batch(rng, batch, seq_len)
        mask = np.ones_like(ids)
        features = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
                    "token_type_ids": torch.zeros_like(torch.from_numpy(ids))}

        def run_torch():
            with torch.inference_mode():
                return st(features)["sentence_embedding"]

        def run_torch_bf16():
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                return st(features)["sentence_embedding"].float()

        def run_ort():
            return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]

        # The two peers must agree with each other (and so with the golden model).
        diff = float(np.abs(run_torch().numpy() - run_ort()).max()) if sess is not None else None
        # How far bf16 autocast moves the embeddings (attnserve's bf16 matmul
        # mode is tested to cosine >= 0.999 against f32).
        bf16_diff = float(np.abs(run_torch().numpy() - run_torch_bf16().numpy()).max())
        peers = [("sentence-transformers", run_torch), ("onnxruntime", run_ort),
                 ("sentence-transformers-bf16", run_torch_bf16)]
        for engine, fn in [p for p in peers if sess is not None or p[0] != "onnxruntime"]:
            t, runs = measure(fn, min_seconds)
            print(json.dumps({"engine": engine, "batch": batch, "seq_len": seq_len,
                              "sentences_per_s": round(batch / t, 2), "tokens_per_s": round(batch * seq_len / t, 1),
                              "latency_ms": round(t * 1e3, 3), "runs": runs,
                              "max_abs_vs_peer": bf16_diff if engine.endswith("bf16") else diff}), flush=True)


if __name__ == "__main__":
    main()
