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
MODEL="$BUILD/bench/causal_embedder/model"
if [[ ! -f "$MODEL/model.safetensors" ]]; then
  mkdir -p "$(dirname "$MODEL")"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/encoder/make_causal_embedder.py" "$REPO" "$MODEL" 2>/dev/null
fi
ATTNSERVE_MINILM_DIR="$MODEL" ENCODER_BENCH_OUT="$BUILD/bench/causal_embedder" ENCODER_BENCH_ONNX=0 \
  ENCODER_BENCH_SHAPES="${CAUSAL_EMBEDDER_BENCH_SHAPES:-1x16,8x128,1x512,8x512}" \
  "$REPO/bench/encoder/run.sh" "$REPO" "$VENV" "$BUILD"
