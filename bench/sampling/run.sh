#!/usr/bin/env bash
# Sampling benchmark: SampleToken (sampling_bench) and the same steps in
# transformers' processors on torch (hf_peer.py, one thread each), back to
# back in the same run, at the vocabulary sizes of Llama 2 (32000), SmolLM
# (49152) and Llama 3 (128256), then the time ratios. Then JSON mode's mask
# per token (json_mask_bench) against xgrammar's (xgrammar_peer.py, what
# vLLM uses for response_format json_object) over the same vocabulary and
# token sequence (json_vocab.py) at 32000 and 128256 tokens, for three
# documents: a story object, string formats with HttpUrl's length bounds,
# and bounded numbers (schema mode also keyed a mask per length and per
# number value, as before the horizon and the shared keys of numbers, in
# the same run: "a key per length and value").
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
  for vocab in 32000 128256; do
    for doc in story formats numbers; do
      "$VENV/bin/python" "$REPO/bench/sampling/json_vocab.py" "$vocab" "$OUT/json-$doc-$vocab" "$doc"
      "$REPO/dev" exec "$BUILD/bench/sampling/json_mask_bench" "$OUT/json-$doc-$vocab"
      OMP_NUM_THREADS=1 "$VENV/bin/python" "$REPO/bench/sampling/xgrammar_peer.py" "$OUT/json-$doc-$vocab"
    done
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
j = {(r["impl"].split()[0] if "key per length" not in r["impl"] else "per-length", r["vocab"],
      r.get("mode", "json_object"), r.get("doc", "story")): r
     for r in rows if r["bench"] == "json_mask" and "alone" not in r["impl"]}
print(f"\n{'mask per token':<28}{'vocab':>8}{'attnserve us':>14}{'xgrammar us':>13}{'ratio':>8}"
      f"{'first pass us':>15}{'xgrammar':>10}{'setup ms':>10}{'xgrammar':>10}{'masks':>7}")
for (impl, vocab, mode, doc), r in j.items():
    if impl == "attnserve" and ("xgrammar", vocab, mode, doc) in j:
        x = j[("xgrammar", vocab, mode, doc)]
        print(f"{mode + ' ' + doc:<28}{vocab:>8}{r['us_per_step']:>14.2f}{x['us_per_step']:>13.2f}"
              f"{x['us_per_step'] / r['us_per_step']:>7.1f}x{r['first_us_per_step']:>15.1f}"
              f"{x['first_us_per_step']:>10.1f}{r['setup_ms']:>10.1f}{x['setup_ms']:>10.1f}{r.get('masks', ''):>7}")
        if ("per-length", vocab, mode, doc) in j:
            p = j[("per-length", vocab, mode, doc)]
            print(f"{'  a key per length, value':<28}{vocab:>8}{p['us_per_step']:>14.2f}{'':>13}{'':>8}"
                  f"{p['first_us_per_step']:>15.1f}{'':>10}{'':>10}{'':>10}{p['masks']:>7}")
PY
