#!/usr/bin/env python3
"""llama.cpp's own outputs on the GGUF fixtures of the architectures added
for mixtures of experts, Granite, OLMo and SmolLM3: the check that
gguf_llama_writer.py writes these files as llama.cpp reads them, and a
reference for attnserve's GGUF path besides transformers.

For each file in FILES (tools/golden/decoder_make_models.py), through
llama-cpp-python (its bundled llama.cpp; tools/python/bench-requirements.txt,
installed by `./dev bench`): the last-position logits of each of
decoder_logits.py's four prompts for that model, with the KV cache in f32
and flash attention off (gemma_gguf_llamacpp.py's model_logits). Each must be
within LLAMACPP_VS_TRANSFORMERS of transformers' (asserted; the differences
are recorded to 1e-6, a few 1e-6 on these f32 files), so a file llama.cpp reads otherwise (a permutation, a split of
stacked experts, a renormalisation, a scale) fails here.

Writes tests/golden/decoder_logits/gguf_llamacpp_logits.json.

Usage: .cache/venv/bin/python tools/golden/gguf_llamacpp_logits.py
"""
import json
import sys

import llama_cpp
import numpy as np

from gemma_gguf_llamacpp import LOGITS, model_logits

OUT = LOGITS / "gguf_llamacpp_logits.json"
FILES = ["qwen3_moe_tiny", "qwen2_moe_tiny", "mixtral_tiny", "granite_tiny", "granitemoe_tiny", "olmo2_tiny",
         "olmoe_tiny", "smollm3_tiny"]
LLAMACPP_VS_TRANSFORMERS = 1e-4


def main():
    doc = {"generator": "tools/golden/gguf_llamacpp_logits.py",
           "versions": {"python": sys.version.split()[0], "llama_cpp_python": llama_cpp.__version__,
                        "numpy": np.__version__},
           "settings": {"kv_cache": "f32", "flash_attn": False, "threads": 2, "n_ctx": 256},
           "tolerance_vs_transformers": LLAMACPP_VS_TRANSFORMERS,
           "models": {name: model_logits(name, f"{name}/model.gguf", LLAMACPP_VS_TRANSFORMERS) for name in FILES}}
    OUT.write_text(json.dumps(doc) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()
