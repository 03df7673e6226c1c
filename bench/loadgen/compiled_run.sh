#!/usr/bin/env bash
# Generate throughput with the compiled client (generate_client, one thread
# per stream), which leaves the server most of the machine where the Python
# load generator needs most of a core at one stream; plus, per point, the
# scheduler overhead from the server's /metrics, and the engine alone
# (decoder_bench: the same model, batch 1 and 16, no server) as the ceiling
# the service's 16-stream ratio can reach.
# Usage: bench/loadgen/compiled_run.sh REPO VENV BUILD_DIR
# Env: ATTNSERVE_BENCH_MODELS ("stories big"), ATTNSERVE_BENCH_STREAMS
#      ("1 4 16 64"), ATTNSERVE_BENCH_THREADS (2), ATTNSERVE_BENCH_SERVER_FLAGS
#      (extra server flags, e.g. "--weight-dtype=bf16 --matmul-precision=bf16";
#      the engine-alone decoder_bench line then runs the same dtype and precision).
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
PY="$VENV/bin/python"
THREADS="${ATTNSERVE_BENCH_THREADS:-2}"
MODELS="${ATTNSERVE_BENCH_MODELS:-stories big}"
STREAMS="${ATTNSERVE_BENCH_STREAMS:-1 4 16 64}"
CLIENT="$BUILD/bench/loadgen/generate_client"
read -r -a server_flags <<< "${ATTNSERVE_BENCH_SERVER_FLAGS:-}"
# The same weights and precision for the engine-alone line.
bench_flags=()
for f in "${server_flags[@]}"; do
  case "$f" in
    --weight-dtype=*) bench_flags+=(--dtype "${f#*=}") ;;
    --matmul-precision=*) bench_flags+=(--matmul-precision "${f#*=}") ;;
  esac
done
work="$(mktemp -d)"
source "$REPO/bench/loadgen/server_lib.sh"
trap 'stop_server; rm -rf "$work"' EXIT

metrics() { curl -sf "http://127.0.0.1:$HTTP/metrics" > "$1"; }

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus, $THREADS engine threads; $(date -u '+%F %T UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); server flags: ${server_flags[*]:-none}"
for model in $MODELS; do
  case "$model" in
    stories) flags=("${stories_flags[@]}"); extra=(); bench_model="" ;;
    big) "$PY" "$REPO/bench/loadgen/make_model.py" "$BIG" >&2
         flags=("--decoder-model=$BIG"); extra=(); bench_model="$BIG" ;;
    *) echo "unknown model $model" >&2; exit 2 ;;
  esac
  start_server "${flags[@]}" "${server_flags[@]}"
  "$REPO/dev" exec "$CLIENT" --target "127.0.0.1:$GRPC" --streams 1 --requests 4 "${extra[@]}" > /dev/null  # warm-up
  for s in $STREAMS; do
    if [[ "$model" == stories ]]; then n=$(( s * 4 > 256 ? s * 4 : 256 )); else n=$(( s * 2 > 16 ? s * 2 : 16 )); fi
    metrics "$work/before"
    "$REPO/dev" exec "$CLIENT" --target "127.0.0.1:$GRPC" --streams "$s" --requests "$n" "${extra[@]}" > "$work/${model}_$s.json"
    metrics "$work/after"
    "$PY" - "$work/before" "$work/after" "$work/${model}_$s.json" <<'PYEOF' > "$work/${model}_$s.server.json"
import json, re, sys
def read(p):
    out = {}
    for line in open(p):
        m = re.match(r'^(\w+)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$', line.strip())
        if m: out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
b, a = read(sys.argv[1]), read(sys.argv[2])
d = lambda k: a.get(k, 0.0) - b.get(k, 0.0)
o, c = d("attnserve_scheduler_overhead_seconds_sum"), d("attnserve_scheduler_overhead_seconds_count")
e = d('attnserve_engine_step_duration_seconds_sum{kind="generate"}')
run, wait = (d('attnserve_scheduler_thread_cpu_seconds_total{state="%s"}' % s) for s in ("running", "waiting"))
print(json.dumps({"overhead_ratio": o / (o + e) if o + e > 0 else float("nan"),
                  "cpu_wait_share": wait / (run + wait) if run + wait > 0 else float("nan"),
                  "overhead_us": o / c * 1e6 if c else float("nan"),
                  "engine_us": e / c * 1e6 if c else float("nan")}))
PYEOF
  done
  stop_server
  if [[ "$model" == stories ]]; then
    bench_model="$(printf '%s\n' "${flags[@]}" | sed -n 's/^--decoder-model=//p')"
  fi
  "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/decoder/decoder_bench" "$bench_model" \
    --steps 100 --no-prefill "${bench_flags[@]}" 2>/dev/null | grep '"decode"' > "$work/${model}_engine.jsonl" || true
done

"$PY" - "$work" "$MODELS" "$STREAMS" <<'PYEOF'
import json, sys, pathlib
w, models, streams = pathlib.Path(sys.argv[1]), sys.argv[2].split(), [int(s) for s in sys.argv[3].split()]
for m in models:
    print(f"\n{m}: compiled client, greedy, 64 tokens each (ignore_eos)")
    print("| streams | requests | tokens/s | vs one at a time | p50 ITL ms | p99 ITL ms | client CPU | sched. overhead | per pass µs | engine per pass µs | engine thread waiting for a CPU |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = None
    for s in streams:
        r = json.loads((w / f"{m}_{s}.json").read_text())
        o = json.loads((w / f"{m}_{s}.server.json").read_text())
        base = base or r["tokens_per_s"]
        print(f"| {s} | {r['requests']} | {r['tokens_per_s']:.0f} | {r['tokens_per_s']/base:.2f}x | {r['p50_itl_ms']:.3f} | "
              f"{r['p99_itl_ms']:.2f} | {r['client_cpu']:.2f} | {100*o['overhead_ratio']:.2f}% | {o['overhead_us']:.1f} | {o['engine_us']:.0f} | "
              f"{100*o['cpu_wait_share']:.1f}% |")
    eng = [json.loads(l) for l in (w / f"{m}_engine.jsonl").read_text().splitlines() if l.strip()]
    if eng:
        by = {e["batch"]: e["tok_s"] for e in eng}
        line = ", ".join(f"batch {b}: {t:.0f} tokens/s" for b, t in sorted(by.items()))
        ratio = f" (16 vs 1: {by[16]/by[1]:.2f}x)" if 1 in by and 16 in by else ""
        print(f"\n{m}: engine alone (decoder_bench, no server): {line}{ratio}")
PYEOF
