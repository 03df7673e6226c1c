#!/usr/bin/env bash
# Sampling benchmark: SampleToken (sampling_bench) and the same steps in
# transformers' processors on torch (hf_peer.py, one thread each), back to
# back in the same run, at the vocabulary sizes of Llama 2 (32000), SmolLM
# (49152) and Llama 3 (128256), then the time ratios.
# Usage: bench/sampling/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
OUT="$BUILD/bench/sampling"
mkdir -p "$OUT"
{
  echo "{\"bench\":\"machine\",\"cpu\":\"$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')\",\"cores\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  for vocab in 32000 49152 128256; do
    "$REPO/dev" exec "$BUILD/bench/sampling/sampling_bench" --vocab "$vocab" --output 256
    "$VENV/bin/python" "$REPO/bench/sampling/hf_peer.py" --vocab "$vocab" --output 256
  done
} | tee "$OUT/results.jsonl"
"$VENV/bin/python" - "$OUT/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
t = {(r["impl"], r["case"], r["vocab"]): r["us_per_token"] for r in rows if r["bench"] == "sampling"}
print(f"{'case':<20}{'vocab':>8}{'attnserve us':>14}{'transformers us':>17}{'ratio':>8}")
for (impl, case, vocab), us in t.items():
    if impl == "attnserve" and ("transformers", case, vocab) in t:
        peer = t[("transformers", case, vocab)]
        print(f"{case:<20}{vocab:>8}{us:>14.1f}{peer:>17.1f}{peer / us:>7.1f}x")
PY
