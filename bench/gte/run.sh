#!/usr/bin/env bash
# GTE encoder benchmark, called by ./dev bench: bench/gte/run.sh REPO VENV BUILD_DIR
#
# bench/encoder/run.sh on a random-weight GTE with gte-base-en-v1.5's widths
# (bench/encoder/make_rotary_encoder.py): attnserve's engine (rotary
# positions, GeGLU, biased attention) against sentence-transformers
# (PyTorch, transformers 5's GteModel; also under bf16 autocast) and ONNX
# Runtime on the same token ids, same thread count, same run.
#
# Knobs: ENCODER_BENCH_THREADS, ENCODER_BENCH_MIN_SECONDS, GTE_BENCH_SHAPES (BxN list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
"$REPO/bench/encoder/run_generated.sh" "$REPO" "$VENV" "$BUILD" gte \
  "$REPO/bench/encoder/make_rotary_encoder.py gte" "${GTE_BENCH_SHAPES:-1x16,8x128,1x512,8x512}"
