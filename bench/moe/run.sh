#!/usr/bin/env bash
# Mixture-of-experts decoder benchmark: attnserve (decoder_bench) and
# llama.cpp (llama-cpp-python, ./dev bench installs it) back to back in the
# same run on the same weights (a Qwen3-MoE scaled down from
# Qwen3-30B-A3B's shape, random: bench/decoder/make_model.py --arch
# qwen3moe; converted by bench/decoder/make_gguf.py), same thread count:
# decode tokens/s at 1, 4 and 16 sequences after a 16-token prompt, where
# more sequences in a step means more of the 32 experts read per step, and
# prefill 512, in f32 and in q8_0 weights (llama.cpp's F32 and Q8_0 files);
# then transformers (torch_peer.py, f32) at 1 and 4 sequences; then the
# ratios (bench/moe/summarize.py).
# Usage: bench/moe/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: DECODER_BENCH_THREADS (default: nproc), DECODER_BENCH_STEPS (16),
#      MOE_BENCH_REPS (3), DECODER_BENCH_PEER=0 to skip llama.cpp.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
THREADS="${DECODER_BENCH_THREADS:-$(nproc)}"
STEPS="${DECODER_BENCH_STEPS:-16}"
REPS="${MOE_BENCH_REPS:-3}"
MODEL="$REPO/.cache/bench/qwen3moe-random"
OUT="$BUILD/bench/moe"
mkdir -p "$OUT"
HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/decoder/make_model.py" "$MODEL" --arch qwen3moe
PEER="${DECODER_BENCH_PEER:-1}"
if [[ "$PEER" != 0 ]]; then
  "$VENV/bin/python" "$REPO/bench/decoder/make_gguf.py" "$MODEL" f32 q8_0
fi
{
  echo "{\"bench\":\"machine\",\"cpu\":\"$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')\",\"cores\":$(nproc),\"threads\":$THREADS,\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  for dtype in f32 q8_0; do
    for batch in 1 4 16; do
      "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/decoder/decoder_bench" "$MODEL" \
        --dtype "$dtype" --steps "$STEPS" --reps "$REPS" --batch "$batch" --no-prefill
    done
    "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" "$BUILD/bench/decoder/decoder_bench" "$MODEL" \
      --dtype "$dtype" --reps "$REPS" --no-decode
    if [[ "$PEER" != 0 ]]; then
      "$VENV/bin/python" "$REPO/bench/decoder/llamacpp_peer.py" "$MODEL/model-$dtype.gguf" --threads "$THREADS" \
        --steps "$STEPS" --label "$dtype" --batches 1,4,16 2>>"$OUT/llamacpp.log" ||
        echo "{\"bench\":\"peer_failed\",\"model\":\"$dtype\",\"exit\":$?,\"log\":\"$OUT/llamacpp.log\"}"
    fi
  done
  "$VENV/bin/python" "$REPO/bench/decoder/torch_peer.py" "$MODEL" --threads "$THREADS" --steps "$STEPS" \
    --reps "$REPS" --batches 1,4
  echo "{\"bench\":\"machine_end\",\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | grep '^{' | tee "$OUT/moe_results.jsonl"
"$VENV/bin/python" "$REPO/bench/moe/summarize.py" "$OUT/moe_results.jsonl"
