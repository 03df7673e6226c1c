#!/usr/bin/env bash
# The service against a peer service in the same run: attnserve's HTTP
# gateway and llama.cpp's own server (llama-server, continuous batching)
# serving the same GGUF file, each driven by the same compiled
# client (sse_client: streaming POST /v1/completions, greedy, ignore_eos,
# 64 new tokens each) at 1, 4, 16 and 64 concurrent streams, the 1-stream
# point being the same requests one at a time. The two servers alternate
# point by point so both see the same machine state. Models: stories260K
# (the default decoder) and the service benchmark's 28M random-weight Llama
# (bench/loadgen/make_model.py), converted to GGUF f32 by
# bench/decoder/make_gguf.py and served from that file by both (32 fixed
# prompt token ids).
#
# llama-server is built once from the llama.cpp sources vendored in the
# llama-cpp-python sdist pinned in tools/python/bench-requirements.txt (the
# same llama.cpp the decoder benchmark's peer runs), inside the build
# environment, with GGML_NATIVE (as a user would build it on this machine),
# no web UI download and no TLS; the binary is kept in .cache/peers.
#
# Usage: bench/loadgen/peer_run.sh REPO VENV BUILD_DIR
# Env: ATTNSERVE_BENCH_MODELS ("stories big"), ATTNSERVE_BENCH_STREAMS ("1 4 16 64"), ATTNSERVE_BENCH_THREADS (2),
#      ATTNSERVE_BENCH_ROUNDS (1: how many times each point is repeated,
#      alternating the servers), ATTNSERVE_BENCH_PEER_SLOTS (64: llama-server
#      --parallel), ATTNSERVE_BENCH_OUT (a folder to keep each point's JSON).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"
THREADS="${ATTNSERVE_BENCH_THREADS:-2}"
STREAMS="${ATTNSERVE_BENCH_STREAMS:-1 4 16 64}"
ROUNDS="${ATTNSERVE_BENCH_ROUNDS:-1}"
SLOTS="${ATTNSERVE_BENCH_PEER_SLOTS:-64}"
MODELS="${ATTNSERVE_BENCH_MODELS:-stories big}"
CLIENT="$BUILD/bench/loadgen/sse_client"
TOKENS=64

# --- the peer's binary -----------------------------------------------------
version="$(sed -n 's/^llama-cpp-python==//p' "$REPO/tools/python/bench-requirements.txt")"
[[ -n "$version" ]] || { echo "peer_run: no llama-cpp-python pin in bench-requirements.txt" >&2; exit 2; }
peers="$REPO/.cache/peers"
peer_src="$peers/llama_cpp_python-$version/vendor/llama.cpp"
peer_bin="$peers/llama-server-$version/bin/llama-server"
if [[ ! -x "$peer_bin" ]]; then
  mkdir -p "$peers"
  if [[ ! -d "$peer_src" ]]; then
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
      "llama-cpp-python==$version" -d "$peers" >&2
    tar -xzf "$peers/llama_cpp_python-$version.tar.gz" -C "$peers"
  fi
  "$REPO/dev" exec cmake -S "$peer_src" -B "$peers/llama-server-$version" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF >&2
  "$REPO/dev" exec cmake --build "$peers/llama-server-$version" --target llama-server -j "$(nproc)" >&2
fi

work="$(mktemp -d)"
source "$REPO/bench/loadgen/server_lib.sh"
peer=""
stop_peer() { if [[ -n "$peer" ]]; then kill "$peer" 2>/dev/null || true; wait "$peer" 2>/dev/null || true; fi; peer=""; }
trap 'stop_server; stop_peer; [[ -n "${ATTNSERVE_BENCH_OUT:-}" ]] && cp "$work"/*.json "$ATTNSERVE_BENCH_OUT"/ 2>/dev/null; rm -rf "$work"' EXIT

stories_gguf="$(printf '%s\n' "${stories_flags[@]}" | sed -n 's/^--decoder-model=//p')"
[[ "$stories_gguf" == *.gguf ]] || { echo "peer_run: stories260K's GGUF not found (flags: ${stories_flags[*]})" >&2; exit 2; }

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus, $THREADS threads each; $(date -u '+%F %T UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# peer: llama-server from llama-cpp-python $version's llama.cpp, --parallel $SLOTS, $(( SLOTS * 128 )) context (128 a slot)"

for model in $MODELS; do
  case "$model" in
    stories) gguf="$stories_gguf"; flags=("${stories_flags[@]}"); prompt=(--prompt "Once upon a time") ;;
    big) "$PY" "$REPO/bench/loadgen/make_model.py" "$BIG" >&2
         "$PY" "$REPO/bench/decoder/make_gguf.py" "$BIG" f32 >&2
         gguf="$BIG/model-f32.gguf"; flags=("--decoder-model=$gguf")
         # 32 fixed pseudo-random ids (the 28M model's text is random anyway).
         prompt=(--prompt-ids "$("$PY" -c 'import random; r = random.Random(7); print(",".join(str(r.randrange(300, 8192)) for _ in range(32)))')") ;;
    *) echo "unknown model $model" >&2; exit 2 ;;
  esac
  echo "# $model: $gguf"
  start_server "${flags[@]}"
  PEER=$(port)
  # A slot holds the prompt and 64 new tokens; 128 positions each.
  "$REPO/dev" exec "$peer_bin" -m "$gguf" --host 127.0.0.1 --port "$PEER" -t "$THREADS" -tb "$THREADS" \
    --parallel "$SLOTS" -c $(( SLOTS * 128 )) --cont-batching --no-webui >"$work/peer.log" 2>&1 &
  peer=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$PEER/health" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$PEER/health" >/dev/null || { cat "$work/peer.log" >&2; exit 1; }

  declare -A target=([attnserve]="127.0.0.1:$HTTP" [llama-server]="127.0.0.1:$PEER")
  for name in attnserve llama-server; do  # warm-up
    "$REPO/dev" exec "$CLIENT" --target "${target[$name]}" --streams 1 --requests 4 --max-new-tokens "$TOKENS" \
      "${prompt[@]}" > /dev/null
  done
  for round in $(seq "$ROUNDS"); do
    for s in $STREAMS; do
      if [[ "$model" == stories ]]; then n=$(( s * 4 > 256 ? s * 4 : 256 )); else n=$(( s * 4 > 32 ? s * 4 : 32 )); fi
      for name in attnserve llama-server; do
        "$REPO/dev" exec "$CLIENT" --target "${target[$name]}" --streams "$s" --requests "$n" \
          --max-new-tokens "$TOKENS" "${prompt[@]}" > "$work/${model}_${name}_${s}_${round}.json" ||
          echo "peer_run: $name at $s streams reported errors: $(cat "$work/${model}_${name}_${s}_${round}.json")" >&2
      done
    done
  done
  stop_server
  stop_peer
done

"$PY" - "$work" "$MODELS" "$STREAMS" "$ROUNDS" <<'PYEOF'
import json, sys, pathlib
w, models, streams, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(), [int(s) for s in sys.argv[3].split()], int(sys.argv[4])
names = ["attnserve", "llama-server"]
title = {"stories": "stories260K", "big": "Llama 28M (random weights, f32)"}
for m in models:
    r = {(n, s, k): json.loads((w / f"{m}_{n}_{s}_{k}.json").read_text())
         for n in names for s in streams for k in range(1, rounds + 1)}
    print(f"\n{title[m]}: the same GGUF on both, streaming /v1/completions, compiled SSE client, greedy, 64 tokens each (ignore_eos)")
    print("| round | streams | server | requests | tokens/s | vs its own one at a time | p50 ITL ms | p99 ITL ms | p99 TTFT ms | errors | attnserve / llama-server |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for k in range(1, rounds + 1):
        for s in streams:
            for n in names:
                x, base = r[(n, s, k)], r[(n, streams[0], k)]["tokens_per_s"]
                vs = r[("attnserve", s, k)]["tokens_per_s"] / r[("llama-server", s, k)]["tokens_per_s"] if n == "llama-server" else None
                print(f"| {k} | {s} | {n} | {x['requests']} | {x['tokens_per_s']:.0f} | {x['tokens_per_s']/base:.2f}x | "
                      f"{x['p50_itl_ms']:.3f} | {x['p99_itl_ms']:.2f} | {x['p99_ttft_ms']:.2f} | {json.dumps(x['errors'])} | "
                      f"{'' if vs is None else f'{vs:.2f}x'} |")
PYEOF
