#!/usr/bin/env bash
# bench/encoder/run.sh on a random-weight model written once by a generator
# script: bench/encoder/run_generated.sh REPO VENV BUILD_DIR NAME MAKER SHAPES
# (the model goes to BUILD_DIR/bench/NAME/model, made by
# `python MAKER REPO OUT_DIR` when absent, MAKER being the script and any
# arguments before REPO, split on spaces; the results to BUILD_DIR/bench/NAME).
# Further environment (ENCODER_BENCH_ONNX, ...) passes through to run.sh.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"; NAME="$4"; MAKER="$5"; SHAPES="$6"
MODEL="$BUILD/bench/$NAME/model"
if [[ ! -f "$MODEL/model.safetensors" ]]; then
  mkdir -p "$(dirname "$MODEL")"
  read -r -a maker <<< "$MAKER"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "${maker[@]}" "$REPO" "$MODEL" 2>/dev/null
fi
ATTNSERVE_MINILM_DIR="$MODEL" ENCODER_BENCH_OUT="$BUILD/bench/$NAME" ENCODER_BENCH_SHAPES="$SHAPES" \
  "$REPO/bench/encoder/run.sh" "$REPO" "$VENV" "$BUILD"
