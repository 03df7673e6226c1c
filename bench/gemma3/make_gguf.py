#!/usr/bin/env python3
"""Writes the Gemma 3 benchmark model (bench/decoder/make_model.py --arch
gemma3) as MODEL_DIR/model-f32.gguf for the llama.cpp peer, in llama.cpp's
conventions (tools/golden/gguf_gemma_writer.py, the writer whose files the
tests check against llama.cpp and transformers). Its tokenizer (the tiny
test one) is padded with unused pieces to the model's 262,144; the
benchmark feeds token ids. Skipped when the file is there.

Usage: make_gguf.py MODEL_DIR
"""
import pathlib
import sys

import tokenizers
import torch
import transformers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "golden"))
from gguf_gemma_writer import write_gemma_gguf  # noqa: E402  (shared with the golden models)


def main():
    d = pathlib.Path(sys.argv[1])
    out = d / "model-f32.gguf"
    if out.exists():
        print(f"{out} already there")
        return
    model = transformers.AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.float32).eval()
    tok = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
    write_gemma_gguf(out, model, model.config, tok, "gemma3", pad_vocab=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
