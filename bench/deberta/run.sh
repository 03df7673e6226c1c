#!/usr/bin/env bash
# DeBERTa-v3 encoder benchmark, called by ./dev bench: bench/deberta/run.sh REPO VENV BUILD_DIR
#
# bench/encoder/run.sh on a random-weight DeBERTa-v3 with deberta-v3-base's
# widths (bench/encoder/make_deberta.py): attnserve's engine (disentangled
# attention: the position tables through each layer's projections packed at
# load, [B, H, N, N] bias planes per layer) against sentence-transformers
# (PyTorch, transformers 5's DebertaV2Model; also under bf16 autocast) and
# ONNX Runtime on the same token ids, same thread count, same run.
#
# Knobs: ENCODER_BENCH_THREADS, ENCODER_BENCH_MIN_SECONDS, DEBERTA_BENCH_SHAPES (BxN list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
"$REPO/bench/encoder/run_generated.sh" "$REPO" "$VENV" "$BUILD" deberta \
  "$REPO/bench/encoder/make_deberta.py" "${DEBERTA_BENCH_SHAPES:-1x16,8x128,1x512}"
