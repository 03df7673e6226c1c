#!/usr/bin/env python3
"""Converts the decoder benchmark model (make_model.py's Hugging Face
directory) to GGUF v3 for the llama.cpp peer, with the `gguf` package, in
llama.cpp's conventions (tools/golden/gguf_llama_writer.py, shared with
the golden models): Q/K rows permuted to the adjacent-pair
rope order, norms f32, tied embeddings (no output.weight). A Qwen3-MoE
(make_model.py --arch qwen3moe) is written as llama.cpp's qwen3moe: Q/K
unpermuted, its q/k norms, the router as ffn_gate_inp and the experts
stacked (ffn_gate_exps ...), expert_count, expert_used_count and
expert_feed_forward_length.

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
from safetensors.numpy import load_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "golden"))
from gguf_llama_writer import add_hparams, add_tensors  # noqa: E402  (shared with the golden models)

QTYPES = {
    "f32": gguf.GGMLQuantizationType.F32,
    "f16": gguf.GGMLQuantizationType.F16,
    "bf16": gguf.GGMLQuantizationType.BF16,
    "q8_0": gguf.GGMLQuantizationType.Q8_0,
}


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
    qtype = QTYPES[kind]
    cfg = json.loads((model_dir / "config.json").read_text())
    sd = load_file(str(model_dir / "model.safetensors"))
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    theta = (cfg.get("rope_parameters") or {}).get("rope_theta", cfg.get("rope_theta", 10000.0))
    moe = cfg["model_type"] == "qwen3_moe"
    tmp = out.with_suffix(".tmp")
    w = gguf.GGUFWriter(str(tmp), "qwen3moe" if moe else "llama")
    add_hparams(w, name="qwen3moe-random" if moe else "smollm135m-random", n_layers=cfg["num_hidden_layers"],
                context=cfg["max_position_embeddings"], hidden=cfg["hidden_size"], ffn=cfg["intermediate_size"],
                n_head=nh, n_head_kv=nkv, rope_theta=theta, rms_eps=cfg["rms_norm_eps"], vocab=cfg["vocab_size"],
                qtype=qtype, head_dim=cfg.get("head_dim"))
    if moe:
        w.add_expert_count(cfg.get("num_experts", cfg.get("num_local_experts")))
        w.add_expert_used_count(cfg["num_experts_per_tok"])
        w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    add_tokenizer(w, model_dir, cfg["vocab_size"])
    add_tensors(w, sd, n_layers=cfg["num_hidden_layers"], n_head=nh, n_head_kv=nkv, qtype=qtype, permute=not moe,
                tied=cfg.get("tie_word_embeddings", True))
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
