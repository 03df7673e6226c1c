#!/usr/bin/env python3
"""llama.cpp's end-of-generation tokens of each decoder GGUF fixture: the
reference for the ids a GGUF decoder stops at here (DecoderConfig's
eos_token_ids).

A GGUF names its EOS token and perhaps EOT / EOM / fill-in-the-middle ones;
llama.cpp also ends generation at any token spelled as one of a list of turn
and text ends (llama-vocab.cpp: "<|im_end|>", "<|eot_id|>", "<end_of_turn>",
"<|endoftext|>", ...). Besides the decoder fixtures, this script writes
eog_tiny/model.gguf: stories260K.gguf with its last sixteen pieces renamed to
such texts (one typed NORMAL, which llama.cpp counts all the same, and two
that are not in the list) and EOT, EOM and FIM ids set to ordinary pieces,
so every path of the rule is taken on one file.

Through llama-cpp-python (its bundled llama.cpp; tools/python/
bench-requirements.txt, installed by `./dev bench`): each file loaded
vocabulary-only, then llama_vocab_is_eog over every id.

Writes tests/golden/decoder_models/eog_tiny/model.gguf and
tests/golden/decoder_models/gguf_eog_llamacpp.json.

Usage: .cache/venv/bin/python tools/golden/gguf_eog_llamacpp.py
"""
import ctypes
import json
import pathlib
import sys
from importlib import metadata

import gguf
import llama_cpp
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
STORIES = ROOT.parent / "shared" / "models" / "stories260K" / "stories260K.gguf"
EOG_TINY = MODELS / "eog_tiny" / "model.gguf"
OUT = MODELS / "gguf_eog_llamacpp.json"
# The last pieces of stories260K's 512 renamed, from id 496 on; None keeps one.
RENAMED = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
           "<|end_of_text|>", "<eos>", "<｜end▁of▁sentence｜>", "[EOT]", "<end_of_utterance>",
           "<|im_start|>", "<end_of_turn >", "[e~[", None]
NORMAL_TYPED = {"[e~["}  # in llama.cpp's list, typed NORMAL in the file: an end all the same
FILES = ["stories260K", "llama_tiny/model.gguf", "llama_tiny/model-q8_0.gguf", "qwen2_tiny/model.gguf",
         "qwen3_tiny/model.gguf", "gpt2_tiny/model.gguf", "gemma_tiny/model.gguf", "gemma2_gguf_tiny/model.gguf",
         "gemma3_gguf_tiny/model.gguf", "eog_tiny/model.gguf"]


def write_eog_tiny():
    reader = gguf.GGUFReader(str(STORIES))
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    types = list(reader.fields["tokenizer.ggml.token_type"].contents())
    first = len(tokens) - len(RENAMED)
    for i, text in enumerate(RENAMED):
        if text is not None:
            tokens[first + i] = text
            types[first + i] = gguf.TokenType.NORMAL if text in NORMAL_TYPED else gguf.TokenType.CONTROL
    A, U32, STR, I32 = gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.UINT32, gguf.GGUFValueType.STRING, \
        gguf.GGUFValueType.INT32
    new = {
        "tokenizer.ggml.tokens": MetadataDetails(A, tokens, sub_type=STR),
        "tokenizer.ggml.token_type": MetadataDetails(A, types, sub_type=I32),
        # An EOT and FIM ids on ordinary pieces: ends because the file says so.
        "tokenizer.ggml.eot_token_id": MetadataDetails(U32, 300),
        "tokenizer.ggml.eom_token_id": MetadataDetails(U32, first + RENAMED.index("<|eom_id|>")),
        "tokenizer.ggml.fim_pad_token_id": MetadataDetails(U32, 301),
        "tokenizer.ggml.fim_rep_token_id": MetadataDetails(U32, 302),
        "tokenizer.ggml.fim_sep_token_id": MetadataDetails(U32, 303),
    }
    EOG_TINY.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(EOG_TINY), reader.fields["general.architecture"].contents())
    copy_with_new_metadata(reader, writer, new, [])


def eog_ids(path):
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    assert model, path
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        n = llama_cpp.llama_vocab_n_tokens(vocab)
        ids = [i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)]
        texts = [llama_cpp.llama_vocab_get_text(vocab, i).decode("utf-8", "replace") for i in ids]
        return ids, texts
    finally:
        llama_cpp.llama_model_free(model)


@llama_cpp.llama_log_callback
def quiet(level, text, user_data):
    """llama.cpp's loading log, dropped (its Python callback cannot decode
    some of these vocabularies' bytes)."""


def main():
    write_eog_tiny()
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    files = []
    for name in FILES:
        path = STORIES if name == "stories260K" else MODELS / name
        ids, texts = eog_ids(path)
        files.append({"file": name, "eog_ids": ids, "eog_texts": texts})
        print(f"{name}: {list(zip(ids, texts))}")
    doc = {"generator": "tools/golden/gguf_eog_llamacpp.py",
           "versions": {"python": sys.version.split()[0], "llama_cpp_python": metadata.version("llama-cpp-python"),
                        "gguf": metadata.version("gguf")},
           "files": files}
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
