#!/usr/bin/env bash
# Decoder benchmark, attnserve and llama.cpp back to back in the same run on
# the same weights (SmolLM-135M-config random Llama made by make_model.py,
# converted to GGUF by make_gguf.py), same thread count:
#   attnserve f32, bf16 and q8_0 weights, and bf16 weights with
#   --matmul-precision=bf16 (decoder_bench: STREAM read GB/s, the bandwidth
#   bound, decode tok/s at 1/4/8/16 sequences, prefill 512), then llama.cpp
#   F32, F16, BF16 and Q8_0 (llamacpp_peer.py, llama-cpp-python from
#   tools/python/bench-requirements.txt), then the ratios (summarize.py).
#   llama.cpp's BF16 path rounds activations to bf16 as ours does with bf16
#   products, so that pair compares like with like. A peer that crashes
#   (llama.cpp's AMX Q8_0 path does on some CPUs) is recorded, not fatal.
# Usage: bench/decoder/run.sh REPO VENV BUILD_DIR   (called by ./dev bench)
# Env: DECODER_BENCH_THREADS (default: nproc), DECODER_BENCH_STEPS (16),
#      DECODER_BENCH_PEER=0 to skip llama.cpp.
set -euo pipefail
REPO="$1"; VENV="$2"; BUILD="$3"
THREADS="${DECODER_BENCH_THREADS:-$(nproc)}"
STEPS="${DECODER_BENCH_STEPS:-16}"
MODEL="$REPO/.cache/bench/smollm135m-random"
OUT="$BUILD/bench/decoder"
mkdir -p "$OUT"
HF_HUB_OFFLINE=1 "$VENV/bin/python" "$REPO/bench/decoder/make_model.py" "$MODEL"
PEER="${DECODER_BENCH_PEER:-1}"
if [[ "$PEER" == 1 ]]; then
  "$VENV/bin/python" "$REPO/bench/decoder/make_gguf.py" "$MODEL" f32 f16 bf16 q8_0
fi
{
  echo "{\"bench\":\"machine\",\"cpu\":\"$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')\",\"cores\":$(nproc),\"threads\":$THREADS,\"date\":\"$(date -u +%FT%TZ)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  for variant in "f32 f32" "bf16 f32" "bf16 bf16" "q8_0 f32"; do
    read -r dtype precision <<< "$variant"
    "$REPO/dev" exec /usr/bin/env OMP_NUM_THREADS="$THREADS" \
      "$BUILD/bench/decoder/decoder_bench" "$MODEL" --dtype "$dtype" --matmul-precision "$precision" \
      --steps "$STEPS"
  done
  if [[ "$PEER" == 1 ]]; then
    for q in f32 f16 bf16 q8_0; do
      "$VENV/bin/python" "$REPO/bench/decoder/llamacpp_peer.py" "$MODEL/model-$q.gguf" \
        --threads "$THREADS" --steps "$STEPS" --label "$q" 2>"$OUT/llamacpp-$q.log" ||
        echo "{\"bench\":\"peer_failed\",\"model\":\"$q\",\"exit\":$?,\"log\":\"$OUT/llamacpp-$q.log\"}"
    done
  fi
  echo "{\"bench\":\"machine_end\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | tee "$OUT/results.jsonl"
"$VENV/bin/python" "$REPO/bench/decoder/summarize.py" "$OUT/results.jsonl"
