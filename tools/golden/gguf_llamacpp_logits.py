#!/usr/bin/env python3
"""llama.cpp's own outputs on the GGUF fixtures of the architectures added
for mixtures of experts, Granite, OLMo and SmolLM3: the check that
gguf_llama_writer.py writes these files as llama.cpp reads them, and a
reference for attnserve's GGUF path besides transformers.

For each file in FILES (tools/golden/decoder_make_models.py), through
llama-cpp-python (its bundled llama.cpp; tools/python/bench-requirements.txt,
installed by `./dev bench`): the last-position logits of each of
decoder_logits.py's four prompts for that model, with the KV cache in f32
and flash attention off. Each must be within LLAMACPP_VS_TRANSFORMERS of
transformers' (asserted; the differences are recorded, a few 1e-6 on these
f32 files), so a file llama.cpp reads otherwise (a permutation, a split of
stacked experts, a renormalisation, a scale) fails here.

Writes tests/golden/decoder_logits/gguf_llamacpp_logits.json.

Usage: .cache/venv/bin/python tools/golden/gguf_llamacpp_logits.py
"""
import json
import pathlib
import sys

import llama_cpp
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
LOGITS = ROOT / "tests" / "golden" / "decoder_logits"
OUT = LOGITS / "gguf_llamacpp_logits.json"
FILES = ["qwen3_moe_tiny", "qwen2_moe_tiny", "mixtral_tiny", "granite_tiny", "granitemoe_tiny", "olmo2_tiny",
         "olmoe_tiny", "smollm3_tiny"]
LLAMACPP_VS_TRANSFORMERS = 1e-4
GGML_TYPE_F32 = 0


def model_logits(name):
    ref = json.loads((LOGITS / f"{name}.json").read_text())
    path = f"{name}/model.gguf"
    llm = llama_cpp.Llama(model_path=str(MODELS / path), n_ctx=256, logits_all=True, verbose=False, n_threads=2,
                          flash_attn=False, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, seed=0)
    out = {"file": path, "prompts": ref["prompts"], "last_logits": [], "max_abs_diff_vs_transformers": []}
    for prompt, want in zip(ref["prompts"], ref["logits"]):
        llm.reset()
        llm.eval(prompt)
        got = np.asarray(llm.scores[len(prompt) - 1], dtype=np.float32)
        diff = float(np.abs(got - np.asarray(want, dtype=np.float32)).max())
        assert diff < LLAMACPP_VS_TRANSFORMERS, (name, len(prompt), diff)
        out["last_logits"].append([float(x) for x in got])
        out["max_abs_diff_vs_transformers"].append(float(f"{diff:.3g}"))
    print(name, "max |llama.cpp - transformers| per prompt:", out["max_abs_diff_vs_transformers"])
    return out


def main():
    doc = {"generator": "tools/golden/gguf_llamacpp_logits.py",
           "versions": {"python": sys.version.split()[0], "llama_cpp_python": llama_cpp.__version__,
                        "numpy": np.__version__},
           "settings": {"kv_cache": "f32", "flash_attn": False, "threads": 2, "n_ctx": 256},
           "tolerance_vs_transformers": LLAMACPP_VS_TRANSFORMERS,
           "models": {name: model_logits(name) for name in FILES}}
    OUT.write_text(json.dumps(doc) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()
