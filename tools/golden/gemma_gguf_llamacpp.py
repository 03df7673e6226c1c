#!/usr/bin/env python3
"""llama.cpp's own outputs on the Gemma GGUF fixtures: the check that
gguf_gemma_writer.py writes these files as llama.cpp reads them, and the
reference attnserve's GGUF path is compared with besides transformers.

For gemma_tiny/model.gguf, gemma2_gguf_tiny/model.gguf and
gemma3_gguf_tiny/model.gguf (tools/golden/decoder_make_models.py), through
llama-cpp-python (its bundled llama.cpp; tools/python/bench-requirements.txt,
installed by `./dev bench`): the last-position logits of each of
decoder_logits.py's four prompts for that model, with the KV cache in f32
(llama.cpp's default is f16) and flash attention off; and, on
gemma3_gguf_tiny's vocabulary, the ids llama.cpp gives each text of
tests/golden/decoder_tokenizers/gemma3_tiny.json (special tokens parsed,
without and with BOS) and its detokenisation of the HF ids.

llama.cpp's CPU GELU reads a table of f16 values, so its logits differ from
transformers' (f32 throughout) by a few 1e-3 on these models; the script
asserts they stay within LLAMACPP_VS_TRANSFORMERS (a convention written
wrongly, such as a norm without its 1 +, a scale or a layer pattern, moves
them by tenths or more) and records the differences.

Writes tests/golden/decoder_logits/gemma_gguf_llamacpp.json.

Usage: .cache/venv/bin/python tools/golden/gemma_gguf_llamacpp.py
"""
import json
import pathlib
import sys

import llama_cpp
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
LOGITS = ROOT / "tests" / "golden" / "decoder_logits"
TOKENIZER_CASES = ROOT / "tests" / "golden" / "decoder_tokenizers" / "gemma3_tiny.json"
OUT = LOGITS / "gemma_gguf_llamacpp.json"
FILES = {"gemma_tiny": "gemma_tiny/model.gguf", "gemma2_gguf_tiny": "gemma2_gguf_tiny/model.gguf",
         "gemma3_gguf_tiny": "gemma3_gguf_tiny/model.gguf"}
LLAMACPP_VS_TRANSFORMERS = 0.02
GGML_TYPE_F32 = 0


def model_logits(name, path, tolerance=LLAMACPP_VS_TRANSFORMERS):
    """llama.cpp's last-position logits of decoder_logits.py's prompts for
    `name` on MODELS / path, each asserted within `tolerance` of
    transformers' (also used by gguf_llamacpp_logits.py)."""
    ref = json.loads((LOGITS / f"{name}.json").read_text())
    llm = llama_cpp.Llama(model_path=str(MODELS / path), n_ctx=256, logits_all=True, verbose=False, n_threads=2,
                          flash_attn=False, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, seed=0)
    out = {"file": path, "prompts": ref["prompts"], "last_logits": [], "max_abs_diff_vs_transformers": []}
    for prompt, want in zip(ref["prompts"], ref["logits"]):
        llm.reset()
        llm.eval(prompt)
        got = np.asarray(llm.scores[len(prompt) - 1], dtype=np.float32)
        diff = float(np.abs(got - np.asarray(want, dtype=np.float32)).max())
        assert diff < tolerance, (name, len(prompt), diff)
        out["last_logits"].append([float(x) for x in got])
        out["max_abs_diff_vs_transformers"].append(round(diff, 6))
    print(name, "max |llama.cpp - transformers| per prompt:", out["max_abs_diff_vs_transformers"])
    return out


def tokenizer_cases():
    cases = json.loads(TOKENIZER_CASES.read_text())["cases"]
    llm = llama_cpp.Llama(model_path=str(MODELS / FILES["gemma3_gguf_tiny"]), vocab_only=True, verbose=False)
    out = []
    for c in cases:
        text = c["text"]
        out.append({"text": text,
                    "ids": llm.tokenize(text.encode(), add_bos=False, special=True),
                    "ids_with_bos": llm.tokenize(text.encode(), add_bos=True, special=True),
                    "hf_ids": c["ids"],
                    "decoded": llm.detokenize(c["ids"]).decode("utf-8")})
    same = sum(o["ids"] == o["hf_ids"] for o in out)
    print(f"tokenizer: llama.cpp's ids equal HF tokenizers' on {same} of {len(out)} texts")
    return out


def main():
    doc = {"generator": "tools/golden/gemma_gguf_llamacpp.py",
           "versions": {"python": sys.version.split()[0], "llama_cpp_python": llama_cpp.__version__,
                        "numpy": np.__version__},
           "settings": {"kv_cache": "f32", "flash_attn": False, "threads": 2},
           "tolerance_vs_transformers": LLAMACPP_VS_TRANSFORMERS,
           "models": {name: model_logits(name, path) for name, path in FILES.items()},
           "tokenizer_gemma3_gguf_tiny": tokenizer_cases()}
    OUT.write_text(json.dumps(doc, ensure_ascii=False) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()
