#!/usr/bin/env bash
# Gemma 3 decoder benchmark: attnserve (decoder_bench) and transformers
# (torch_peer.py) back to back in the same run on the same weights
# (gemma-3-270m's architecture, random, bench/decoder/make_model.py --arch gemma3), f32, same
# thread count: decode tokens/s at 1 and 4 sequences after a 16-token prompt
# and after a 2,048-token one (where the 512-token windows of 15 of the 18
# layers matter), prefill 512; then llama.cpp (llama-cpp-python, ./dev bench
# installs it) on the same weights as a GGUF (make_gguf.py, f32), the same
# measures; then the ratios (bench/gemma3/summarize.py).
# Usage: bench/gemma3/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: DECODER_BENCH_THREADS (default: nproc), DECODER_BENCH_STEPS (16),
#      GEMMA3_BENCH_CONTEXT (2048), GEMMA3_BENCH_REPS (3),
#      DECODER_BENCH_PEER=0 to skip llama.cpp.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
THREADS="${DECODER_BENCH_THREADS:-$(nproc)}"
STEPS="${DECODER_BENCH_STEPS:-16}"
LONG="${GEMMA3_BENCH_CONTEXT:-2048}"
REPS="${GEMMA3_BENCH_REPS:-3}"
MODEL="$REPO/.cache/bench/gemma3-270m-random"
OUT="$BUILD/bench/gemma3"
mkdir -p "$OUT"
HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/decoder/make_model.py" "$MODEL" --arch gemma3
PEER="${DECODER_BENCH_PEER:-1}"
if [[ "$PEER" != 0 ]]; then
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/gemma3/make_gguf.py" "$MODEL"
fi
llamacpp() {
  "$VENV/bin/python" "$REPO/bench/decoder/llamacpp_peer.py" "$MODEL/model-f32.gguf" --threads "$THREADS" \
    --steps "$STEPS" --label f32 --batches 1,4 "$@" 2>>"$OUT/llamacpp.log" ||
    echo "{\"bench\":\"peer_failed\",\"peer\":\"llama.cpp\",\"exit\":$?,\"log\":\"$OUT/llamacpp.log\"}"
}
ours() {
  "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/decoder/decoder_bench" "$MODEL" \
    --dtype f32 --steps "$STEPS" --reps "$REPS" "$@"
}
{
  echo "{\"bench\":\"machine\",\"cpu\":\"$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')\",\"cores\":$(nproc),\"threads\":$THREADS,\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  for batch in 1 4; do
    ours --batch "$batch" --no-prefill
    ours --batch "$batch" --context "$LONG" --no-prefill
  done
  ours --no-decode
  "$VENV/bin/python" "$REPO/bench/decoder/torch_peer.py" "$MODEL" --threads "$THREADS" --steps "$STEPS" \
    --reps "$REPS" --batches 1,4
  "$VENV/bin/python" "$REPO/bench/decoder/torch_peer.py" "$MODEL" --threads "$THREADS" --steps "$STEPS" \
    --reps "$REPS" --batches 1,4 --context "$LONG" --no-prefill
  if [[ "$PEER" != 0 ]]; then
    llamacpp
    llamacpp --context "$LONG" --no-prefill
  fi
  echo "{\"bench\":\"machine_end\",\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | grep '^{' | tee "$OUT/gemma3_results.jsonl"
"$VENV/bin/python" "$REPO/bench/gemma3/summarize.py" "$OUT/gemma3_results.jsonl"
