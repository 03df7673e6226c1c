#!/usr/bin/env bash
# Service benchmark with the load generator, called by ./dev bench:
# bench/loadgen/run.sh REPO VENV BUILD_DIR
# Starts the real server on the default models (stories260K + MiniLM) on free
# ports and measures, in the same run: Generate aggregate tokens/s at 1, 4, 16
# and 64 concurrent streams against the same requests one at a time, p99
# inter-token latency at 16 streams with and without an Encode load beside.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"
work="$(mktemp -d)"
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
"$PY" -m grpc_tools.protoc -I"$REPO/proto" --python_out="$work" --grpc_python_out="$work" \
  "$REPO/proto/attnserve/v1/inference.proto"
port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GRPC=$(port); HTTP=$(port)
mapfile -t models < <("$REPO/tools/default_model_flags.sh" "$REPO" "$VENV")
"$REPO/dev" exec "$BUILD/attnserve" --listen-address=127.0.0.1 --grpc-port="$GRPC" --http-port="$HTTP" \
  "${models[@]}" --threads="${ATTNSERVE_BENCH_THREADS:-2}" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
lg() { "$PY" "$REPO/bench/loadgen/loadgen.py" --target "127.0.0.1:$GRPC" --proto-dir "$work" --json "$@"; }
N="${ATTNSERVE_BENCH_REQUESTS:-64}"
echo "generate, max_new_tokens 64, $N requests per point"
for c in 1 4 16 64; do
  lg --rpc generate --max-new-tokens 64 --concurrency "$c" --requests "$N" > "$work/gen_$c.json"
done
lg --rpc encode --rate 20 --duration 15 > "$work/enc_bg.json" &
bg=$!
sleep 1
lg --rpc generate --max-new-tokens 64 --concurrency 16 --requests "$N" > "$work/gen_16_loaded.json"
wait $bg
"$PY" - "$work" <<'PYEOF'
import json, sys, pathlib
w = pathlib.Path(sys.argv[1])
base = json.loads((w / "gen_1.json").read_text())["tokens_per_s"]
print("| streams | tokens/s | vs one at a time | p50 TTFT ms | p99 ITL ms | errors |")
print("| ---: | ---: | ---: | ---: | ---: | --- |")
for c in (1, 4, 16, 64):
    r = json.loads((w / f"gen_{c}.json").read_text())
    print(f"| {c} | {r['tokens_per_s']:.0f} | {r['tokens_per_s']/base:.2f}x | {r['ttft_p50_ms']:.1f} | {r['itl_p99_ms']:.2f} | {r['errors']} |")
loaded = json.loads((w / "gen_16_loaded.json").read_text())
unloaded = json.loads((w / "gen_16.json").read_text())
enc = json.loads((w / "enc_bg.json").read_text())
print(f"\np99 inter-token latency at 16 streams: {unloaded['itl_p99_ms']:.2f} ms alone, "
      f"{loaded['itl_p99_ms']:.2f} ms with Encode at 20 req/s beside "
      f"({loaded['itl_p99_ms']/unloaded['itl_p99_ms']:.2f}x); encode p99 {enc['e2e_p99_ms']:.1f} ms, errors {enc['errors']}")
PYEOF
