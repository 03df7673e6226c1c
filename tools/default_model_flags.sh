#!/usr/bin/env bash
# Prints, one per line, the model flags `./dev run` serves by default.
# Usage: tools/default_model_flags.sh REPO VENV
# Filled in by the encoder and decoder work; with no model the server serves
# health and metrics only.
set -euo pipefail
exit 0
