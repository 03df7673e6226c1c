#!/usr/bin/env python3
"""Converts the decoder benchmark model (make_model.py's Hugging Face
directory) to GGUF v3 for the llama.cpp peer, with the `gguf` package, in
llama.cpp's conventions (as tools/golden/decoder_make_models.py and
llama.cpp's convert_hf_to_gguf.py): Q/K rows permuted to the adjacent-pair
rope order, norms f32, tied embeddings (no output.weight).

The tokenizer is the tiny test tokenizer copied by make_model.py (320
pieces), padded with unused tokens to the model's 49152 so that the
vocabulary matches the embedding table; the benchmark feeds token ids.

Usage: make_gguf.py MODEL_DIR TYPE...   TYPE in f32, f16, bf16, q8_0
Writes MODEL_DIR/model-TYPE.gguf (skipped when present).
"""
import json
import pathlib
import sys

import gguf
import numpy as np
from safetensors.numpy import load_file

QTYPES = {
    "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "bf16": (gguf.GGMLQuantizationType.BF16, gguf.LlamaFileType.MOSTLY_BF16),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
}


def permute_qk(w, n_head):
    # HF half-split rows per head -> llama.cpp adjacent pairs (convert_hf_to_gguf.py).
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def add_matrix(writer, name, arr, qtype):
    arr = np.ascontiguousarray(arr.astype(np.float32))
    if arr.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
        writer.add_tensor(name, arr)
    elif qtype == gguf.GGMLQuantizationType.F16:
        writer.add_tensor(name, arr.astype(np.float16))
    else:
        q = gguf.quants.quantize(arr, qtype)
        writer.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)


def add_tokenizer(writer, model_dir, vocab_size):
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    vocab = dict(tok["model"]["vocab"])
    for a in tok["added_tokens"]:
        vocab[a["content"]] = a["id"]
    special = {a["id"] for a in tok["added_tokens"] if a["special"]}
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    types = [gguf.TokenType.UNUSED] * vocab_size
    for piece, i in vocab.items():
        tokens[i] = piece
        types[i] = gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<|begin_of_text|>"])
    writer.add_eos_token_id(vocab["<|end_of_text|>"])
    writer.add_add_bos_token(False)


def write(model_dir, kind):
    out = model_dir / f"model-{kind}.gguf"
    if out.exists():
        print(f"{out} already there")
        return
    qtype, ftype = QTYPES[kind]
    cfg = json.loads((model_dir / "config.json").read_text())
    sd = load_file(str(model_dir / "model.safetensors"))
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    theta = (cfg.get("rope_parameters") or {}).get("rope_theta", cfg.get("rope_theta", 10000.0))
    tmp = out.with_suffix(".tmp")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name("smollm135m-random")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_rope_dimension_count(cfg["hidden_size"] // nh)
    w.add_file_type(ftype)
    add_tokenizer(w, model_dir, cfg["vocab_size"])
    add_matrix(w, "token_embd.weight", sd["model.embed_tokens.weight"], qtype)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        add_matrix(w, f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"], qtype)
        add_matrix(w, f"blk.{i}.attn_q.weight", permute_qk(sd[p + "self_attn.q_proj.weight"], nh), qtype)
        add_matrix(w, f"blk.{i}.attn_k.weight", permute_qk(sd[p + "self_attn.k_proj.weight"], nkv), qtype)
        add_matrix(w, f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"], qtype)
    add_matrix(w, "output_norm.weight", sd["model.norm.weight"], qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.0f} MB)")


def main():
    model_dir = pathlib.Path(sys.argv[1])
    for kind in sys.argv[2:]:
        write(model_dir, kind)


if __name__ == "__main__":
    main()
