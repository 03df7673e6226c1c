#!/usr/bin/env bash
# Decoder benchmark: SmolLM-135M-config random Llama (made by make_model.py
# into .cache/), f32 and bf16 weights: decode tok/s at batch 1/4/8/16,
# prefill 512, and the bandwidth bound (weight bytes per token / STREAM read).
# The llama.cpp peer (llama-cpp-python) is not installed yet: see
# docs/benchmarks.md "## Decoder".
# Usage: bench/decoder/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: DECODER_BENCH_THREADS (default: nproc), DECODER_BENCH_STEPS (16).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
THREADS="${DECODER_BENCH_THREADS:-$(nproc)}"
STEPS="${DECODER_BENCH_STEPS:-16}"
MODEL="$REPO/.cache/bench/smollm135m-random"
OUT="$BUILD/bench/decoder"
mkdir -p "$OUT"
HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/decoder/make_model.py" "$MODEL"
for dtype in f32 bf16; do
  "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" \
    "$BUILD/bench/decoder/decoder_bench" "$MODEL" --dtype "$dtype" --steps "$STEPS"
done | tee "$OUT/results.jsonl"
