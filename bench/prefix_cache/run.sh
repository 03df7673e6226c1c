#!/usr/bin/env bash
# Automatic prefix caching: cold against warm time to first token on the
# real server, for stories260K (context 512) and the 28M Llama of the
# service benchmark (bench/loadgen/make_model.py), 448-token prompts.
# Usage: bench/prefix_cache/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"; THREADS="${ATTNSERVE_BENCH_THREADS:-2}"
work="$(mktemp -d)"
source "$REPO/bench/loadgen/server_lib.sh"
trap 'stop_server; rm -rf "$work"' EXIT
echo "{\"bench\":\"machine\",\"cpu\":\"$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')\",\"cores\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
start_server "${stories_flags[@]}"
"$PY" "$REPO/bench/prefix_cache/prefix_cache.py" --url "http://127.0.0.1:$HTTP" --model stories260K --vocab 512
stop_server
"$PY" "$REPO/bench/loadgen/make_model.py" "$BIG" >&2
start_server "--decoder-model=$BIG"
"$PY" "$REPO/bench/prefix_cache/prefix_cache.py" --url "http://127.0.0.1:$HTTP" --model llama28m --vocab 8192
