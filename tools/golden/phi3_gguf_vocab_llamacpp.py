#!/usr/bin/env python3
"""llama.cpp's tokenization of Phi-3's chat markers in a SentencePiece GGUF
vocabulary, the reference for attnserve's GGUF tokenizer on Phi-3 files.

llama.cpp gives a GGUF whose general.name holds "phi-3" or "phi3"
(lowercased) Phi-3's token attributes (llama-vocab.cpp): every control and
user-defined token, and </s>, takes the ASCII whitespace after it (RSTRIP),
except <unk>, <s> and <|endoftext|>; tokenizer.json says the same with
rstrip (tok512_phi3_tokenizer.json). Other names get no such attributes.

Writes two vocabulary-only GGUF files (architecture phi3, no tensors) into
tests/golden/decoder_tokenizers/: phi3_vocab_named.gguf (general.name
"Phi3 Mini Test") and phi3_vocab_unnamed.gguf ("tiny-vocab-test"), each the
stories260K GGUF's SentencePiece vocabulary (tok512: pieces, scores, types,
<s> </s> <unk>) with Phi-3's added tokens appended as CONTROL pieces, as
convert_hf_to_gguf.py's Phi3MiniModel marks special added tokens; and
phi3_vocab_llamacpp.json with llama-cpp-python's ids for each text of
PHI3_TEXTS (special tokens parsed, no BOS) in each file.

Usage: .cache/venv/bin/python tools/golden/phi3_gguf_vocab_llamacpp.py
"""
import json
import pathlib
import sys

import gguf
import llama_cpp

ROOT = pathlib.Path(__file__).resolve().parents[2]
STORIES = ROOT.parent / "shared" / "models" / "stories260K" / "stories260K.gguf"
OUT = ROOT / "tests" / "golden" / "decoder_tokenizers"
ADDED = ["<|endoftext|>", "<|assistant|>", "<|system|>", "<|end|>", "<|user|>"]
PHI3_TEXTS = ["<|user|>\nHello there<|end|>\n<|assistant|>\n",
              "<|system|>  You are  kind<|end|>\n\n<|user|>\tHi<|end|>\n<|assistant|>",
              "text<|end|>   ", "<|user|>", "<|endoftext|> after", "<|end|><|end|>\n<|user|>\n\n",
              "</s> x", "<s> x", "<|user|>\u3000wide space", "plain text, no markers"]


def write_vocab(path, name):
    r = gguf.GGUFReader(str(STORIES))
    field = lambda key: r.fields[key]
    tokens = [bytes(field("tokenizer.ggml.tokens").parts[i]).decode() for i in field("tokenizer.ggml.tokens").data]
    scores = [float(field("tokenizer.ggml.scores").parts[i][0]) for i in field("tokenizer.ggml.scores").data]
    types = [int(field("tokenizer.ggml.token_type").parts[i][0]) for i in field("tokenizer.ggml.token_type").data]
    tokens += ADDED
    scores += [0.0] * len(ADDED)
    types += [gguf.TokenType.CONTROL] * len(ADDED)
    w = gguf.GGUFWriter(str(path), "phi3")
    w.add_name(name)
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(8)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(4)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(len(tokens) - len(ADDED) + ADDED.index("<|endoftext|>"))
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    doc = {"generator": "tools/golden/phi3_gguf_vocab_llamacpp.py",
           "versions": {"python": sys.version.split()[0], "llama_cpp_python": llama_cpp.__version__},
           "files": {}}
    for fname, name in (("phi3_vocab_named.gguf", "Phi3 Mini Test"), ("phi3_vocab_unnamed.gguf", "tiny-vocab-test")):
        write_vocab(OUT / fname, name)
        llm = llama_cpp.Llama(model_path=str(OUT / fname), vocab_only=True, verbose=False)
        doc["files"][fname] = [{"text": t, "ids": llm.tokenize(t.encode(), add_bos=False, special=True)}
                               for t in PHI3_TEXTS]
    named, unnamed = doc["files"].values()
    differ = sum(a["ids"] != b["ids"] for a, b in zip(named, unnamed))
    print(f"named and unnamed vocabularies tokenize {differ} of {len(PHI3_TEXTS)} texts differently")
    assert differ >= 4, differ
    (OUT / "phi3_vocab_llamacpp.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
