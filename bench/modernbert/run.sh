#!/usr/bin/env bash
# ModernBERT encoder benchmark, called by ./dev bench: bench/modernbert/run.sh REPO VENV BUILD_DIR
#
# bench/encoder/run.sh on a random-weight ModernBERT with ModernBERT-base's
# widths and 6 of its layers (bench/encoder/make_modernbert.py): attnserve's
# engine against sentence-transformers (PyTorch, also under bf16 autocast)
# and ONNX Runtime on the same token ids, same thread count, same run, at
# lengths on both sides of the local layers' 128-token window.
#
# Knobs: ENCODER_BENCH_THREADS, ENCODER_BENCH_MIN_SECONDS, MODERNBERT_BENCH_SHAPES (BxN list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
"$REPO/bench/encoder/run_generated.sh" "$REPO" "$VENV" "$BUILD" modernbert "$REPO/bench/encoder/make_modernbert.py" \
  "${MODERNBERT_BENCH_SHAPES:-1x16,8x128,1x512,8x512,1x2048}"
