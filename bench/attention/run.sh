#!/usr/bin/env bash
# Attention benchmark with its peers in the same run: the C++ binary (ours,
# oneDNN Graph SDPA, f32 matmul, STREAM-like read) inside the build
# environment, then torch SDPA from the host venv, then the ratio table.
# Usage: bench/attention/run.sh REPO VENV BUILD_DIR
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
THREADS="${OMP_NUM_THREADS:-2}"
MIN_TIME="${ATTN_BENCH_MIN_TIME:-1}"
# On a shared machine, ATTN_BENCH_REPETITIONS=N (N > 1) runs every C++
# benchmark N times in random interleaved order and reports medians, so the
# in-run peers (STREAM, matmul) are sampled over the same span of load as ours.
REPS="${ATTN_BENCH_REPETITIONS:-1}"
EXTRA=()
if [[ "$REPS" -gt 1 ]]; then
  EXTRA=(--benchmark_repetitions="$REPS" --benchmark_enable_random_interleaving=true
         --benchmark_report_aggregates_only=true)
fi
# Inside the build tree: the build environment sees the repository, not the host's /tmp.
OUT="$BUILD/bench/attention/last_run"
mkdir -p "$OUT"
echo "load before: $(uptime)"
echo "attention benchmark: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'), $(nproc) cores, OMP_NUM_THREADS=$THREADS, $(date -u +%FT%TZ)"
BIN="$BUILD/bench/attention/attention_benchmark"
[[ -x "$BIN" ]] || { echo "missing $BIN (build the release preset first)"; exit 1; }
(cd "$REPO" && OMP_NUM_THREADS="$THREADS" "$REPO/dev" exec "$BIN" \
  --benchmark_min_time="${MIN_TIME}s" --benchmark_out="$OUT/gbench.json" --benchmark_out_format=json \
  "${EXTRA[@]}")
OMP_NUM_THREADS="$THREADS" "$VENV/bin/python" "$REPO/bench/attention/torch_sdpa_peer.py" \
  --threads "$THREADS" --min-time "$MIN_TIME" | tee "$OUT/torch.jsonl"
echo
"$VENV/bin/python" "$REPO/bench/attention/compare.py" "$OUT/gbench.json" "$OUT/torch.jsonl"
echo "load after: $(uptime)"
