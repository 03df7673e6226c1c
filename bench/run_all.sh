#!/usr/bin/env bash
# Runs every benchmark with its peers in the same run. Usage: bench/run_all.sh REPO VENV BUILD_DIR
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
echo "machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'), $(nproc) cores; date: $(date -u +%F)"
found=0
# Each area's run.sh, then the compiled-client service run and the service
# against llama.cpp's server (bench/loadgen).
for script in "$REPO"/bench/*/run.sh "$REPO"/bench/*/compiled_run.sh "$REPO"/bench/*/peer_run.sh; do
  [[ -x "$script" ]] || continue
  found=1
  echo "==> $script"
  "$script" "$REPO" "$VENV" "$BUILD"
done
[[ $found == 1 ]] || echo "no benchmarks yet"
