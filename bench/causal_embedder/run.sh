#!/usr/bin/env bash
# Decoder-based embedder benchmark, called by ./dev bench: bench/causal_embedder/run.sh REPO VENV BUILD_DIR
#
# bench/encoder/run.sh on a random-weight Qwen3Model with Qwen3-Embedding-0.6B's
# widths and 6 of its layers, last-token pooling + Normalize
# (bench/encoder/make_causal_embedder.py): attnserve's engine against
# sentence-transformers (PyTorch, also under bf16 autocast) on the same token
# ids, same thread count, same run. No ONNX Runtime peer here (its export
# pools by the mean, not at the last token).
#
# Knobs: ENCODER_BENCH_THREADS, ENCODER_BENCH_MIN_SECONDS, CAUSAL_EMBEDDER_BENCH_SHAPES (BxN list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
ENCODER_BENCH_ONNX=0 "$REPO/bench/encoder/run_generated.sh" "$REPO" "$VENV" "$BUILD" causal_embedder \
  "$REPO/bench/encoder/make_causal_embedder.py" "${CAUSAL_EMBEDDER_BENCH_SHAPES:-1x16,8x128,1x512,8x512}"
