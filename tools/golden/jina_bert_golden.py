#!/usr/bin/env python3
"""Writes the JinaBERT (jina-embeddings-v2) golden fixtures.

jina-embeddings-v2 is `model_type` "bert" with `position_embedding_type`
"alibi" and `feed_forward_type` "geglu" (Jina's remote code, JinaBertModel):
BERT's post-norm layers and tensor names, no position table, every head's
attention scores biased by -slope_h · |i - j| (ALiBi, Press et al.'s slopes:
for the largest power of two p <= H, 2^(-8 (h + 1) / p), then the odd powers
of 2^(-4 / p)), and a GeGLU feed-forward: mlp.gated_layers [2I, D] without
bias, gelu(first half) * second half, mlp.wo, then mlp.layernorm over the
residual sum. The remote code is not runnable offline, so the reference is
two independent readings checked against each other:

  - a numpy transcription of that forward (the golden values: erf GELU, as
    the remote code's nn.GELU());
  - llama.cpp (llama-cpp-python) reading the same weights written as its
    converter writes a JinaBertModel (`jina-bert-v2`: gated_layers split into
    ffn_gate (first half) and ffn_up): asserted to agree within 1e-3 on every
    text both tokenize alike (llama.cpp's GELU is the tanh form).

1. tests/golden/encoder_models/jina_bert_tiny/: random weights (hidden 48,
   6 heads: p = 4, so both slope sequences are used; 2 layers, intermediate
   64, type_vocab_size 2, 256 positions), config.json with the key set of
   jina-embeddings-v2-base-en's, bert_nli_tiny's WordPiece tokenizer,
   sentence-transformers mean pooling + Normalize (max_seq_length 256).
2. tests/golden/encoder_models/jina_bert_tiny.gguf: the llama.cpp file, gated_layers split
   into ffn_gate and ffn_up as older conversions have it; jina_bert_fused_tiny.gguf: the same
   weights as the current converter writes them (gated_layers whole as ffn_up), which
   llama.cpp is asserted to read as the split file.
3. tests/golden/encoder/jina_bert_golden.json: versions, max_tokens,
   embeddings {text, ids, embedding, llama_cpp_embedding (null where
   llama.cpp tokenizes otherwise)}.

Deterministic: a second run on the same machine writes byte-identical files.
Across CPUs the weights, the model folder and the GGUF files are the same;
the JSON's float64 reference and llama.cpp's vectors (built for the host's
CPU) move in their last digits (2e-15 between an AVX2 and an AVX-512 host),
far inside the tests' tolerances.

Usage (host venv):
  .cache/venv/bin/python tools/golden/jina_bert_golden.py
"""
import math
import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from safetensors.numpy import save_file
from tokenizers import Tokenizer

from bert_gguf_golden import NLI, llama_cpp_reader
from encoder_golden_util import MODELS_DIR, REPO, versions, write_json, write_mean_pooling_modules

SCRIPT = "tools/golden/jina_bert_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/jina_bert_golden.json")
MODEL_DIR = os.path.join(MODELS_DIR, "jina_bert_tiny")
GGUF_PATH = os.path.join(MODELS_DIR, "jina_bert_tiny.gguf")
FUSED_GGUF_PATH = os.path.join(MODELS_DIR, "jina_bert_fused_tiny.gguf")
D, HEADS, LAYERS, FFN, POSITIONS, TYPES, EPS = 48, 6, 2, 64, 256, 2, 1e-12

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Café naïve résumé",
    "a",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 4),
]


def weights(vocab, seed=20261210):
    """Random weights under the checkpoint's own names (JinaBertModel's)."""
    rng = np.random.default_rng(seed)
    w = {"embeddings.word_embeddings.weight": 0.5 * rng.standard_normal((vocab, D)),
         "embeddings.token_type_embeddings.weight": 0.2 * rng.standard_normal((TYPES, D)),
         "embeddings.LayerNorm.weight": 1 + 0.1 * rng.standard_normal(D),
         "embeddings.LayerNorm.bias": 0.1 * rng.standard_normal(D)}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for proj in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            w[p + proj + ".weight"] = 0.3 * rng.standard_normal((D, D))
            w[p + proj + ".bias"] = 0.1 * rng.standard_normal(D)
        for norm in ("attention.output.LayerNorm", "mlp.layernorm"):
            w[p + norm + ".weight"] = 1 + 0.1 * rng.standard_normal(D)
            w[p + norm + ".bias"] = 0.1 * rng.standard_normal(D)
        w[p + "mlp.gated_layers.weight"] = 0.2 * rng.standard_normal((2 * FFN, D))
        w[p + "mlp.wo.weight"] = 0.2 * rng.standard_normal((D, FFN))
        w[p + "mlp.wo.bias"] = 0.1 * rng.standard_normal(D)
    return {k: v.astype(np.float32) for k, v in w.items()}


def alibi_slopes(n):
    """Press et al.'s slopes, as Jina's _get_alibi_head_slopes computes them."""
    def power_of_2(k):
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start ** i for i in range(k)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def reference(w, ids):
    """JinaBertModel's forward in numpy (float64), mean-pooled and normalised."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    hd = D // HEADS
    n = len(ids)

    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + EPS) * g + b

    def linear(x, name, bias=True):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias else y

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    pos = np.arange(n)
    bias = -np.array(alibi_slopes(HEADS))[:, None, None] * np.abs(pos[None, :] - pos[:, None])[None]
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (linear(x, p + "attention.self." + t).reshape(n, HEADS, hd) for t in ("query", "key", "value"))
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd) + bias
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        ctx = np.einsum("hqk,khd->qhd", pr, v).reshape(n, D)
        x = ln(x + linear(ctx, p + "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
               w[p + "attention.output.LayerNorm.bias"])
        gated = linear(x, p + "mlp.gated_layers", bias=False)
        h = gelu(gated[:, :FFN]) * gated[:, FFN:]
        x = ln(x + linear(h, p + "mlp.wo"), w[p + "mlp.layernorm.weight"], w[p + "mlp.layernorm.bias"])
    e = x.mean(0)
    return e / np.linalg.norm(e)


def hub_config(vocab):
    """config.json with the key set of jina-embeddings-v2-base-en's."""
    return {
        "_name_or_path": "jinaai/jina-bert-implementation", "architectures": ["JinaBertForMaskedLM"],
        "attention_probs_dropout_prob": 0.0,
        "auto_map": {"AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
                     "AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"},
        "classifier_dropout": None, "emb_pooler": "mean", "feed_forward_type": "geglu", "gradient_checkpointing": False,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": D, "initializer_range": 0.02,
        "intermediate_size": FFN, "layer_norm_eps": EPS, "max_position_embeddings": POSITIONS,
        "model_max_length": POSITIONS, "model_type": "bert", "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS, "pad_token_id": 0, "position_embedding_type": "alibi",
        "torch_dtype": "float32", "transformers_version": "4.26.0", "type_vocab_size": TYPES, "use_cache": True,
        "vocab_size": vocab,
    }


def write_gguf(path, w, model_dir, fused=False):
    """The weights as llama.cpp's converter writes a JinaBertModel: gated_layers
    split into ffn_gate (first half) and ffn_up (older conversions), or with
    `fused` whole as ffn_up [2I] (the current converter; llama.cpp's GEGLU
    gates the first half)."""
    import gguf
    from gguf_bert_writer import vocabulary
    tokens, types = vocabulary(model_dir)
    g = gguf.GGUFWriter(path, "jina-bert-v2")
    g.add_name("jina_bert_tiny")
    g.add_context_length(POSITIONS)
    g.add_embedding_length(D)
    g.add_feed_forward_length(FFN)
    g.add_block_count(LAYERS)
    g.add_head_count(HEADS)
    g.add_layer_norm_eps(EPS)
    g.add_causal_attention(False)
    g.add_pooling_type(gguf.PoolingType.MEAN)
    g.add_file_type(gguf.LlamaFileType.ALL_F32)
    g.add_token_type_count(TYPES)
    g.add_tokenizer_model("bert")
    g.add_tokenizer_pre("jina-v2-en")
    g.add_token_list(tokens)
    g.add_token_types(types)
    gguf.SpecialVocab(model_dir, n_vocab=len(tokens)).add_to_gguf(g)
    names = {"embeddings.word_embeddings.weight": "token_embd.weight",
             "embeddings.token_type_embeddings.weight": "token_types.weight",
             "embeddings.LayerNorm.weight": "token_embd_norm.weight",
             "embeddings.LayerNorm.bias": "token_embd_norm.bias"}
    layer = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
             "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
             "mlp.wo": "ffn_down", "mlp.layernorm": "layer_output_norm"}
    for name, arr in w.items():
        if name in names:
            g.add_tensor(names[name], arr)
            continue
        i = int(name.split(".")[2])
        rest = ".".join(name.split(".")[3:])
        if rest == "mlp.gated_layers.weight" and fused:
            g.add_tensor(f"blk.{i}.ffn_up.weight", arr)
            continue
        if rest == "mlp.gated_layers.weight":
            g.add_tensor(f"blk.{i}.ffn_gate.weight", np.ascontiguousarray(arr[:FFN]))
            g.add_tensor(f"blk.{i}.ffn_up.weight", np.ascontiguousarray(arr[FFN:]))
            continue
        module, kind = rest.rsplit(".", 1)
        g.add_tensor(f"blk.{i}.{layer[module]}.{kind}", arr)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


def main():
    torch.manual_seed(0)
    tok = Tokenizer.from_file(os.path.join(NLI, "tokenizer.json"))
    vocab = tok.get_vocab_size()
    w = weights(vocab)
    shutil.rmtree(MODEL_DIR, ignore_errors=True)
    os.makedirs(MODEL_DIR)
    save_file(w, os.path.join(MODEL_DIR, "model.safetensors"), metadata={"format": "pt"})
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(NLI, f), MODEL_DIR)
    write_json(os.path.join(MODEL_DIR, "config.json"), hub_config(vocab))
    write_mean_pooling_modules(MODEL_DIR, D, POSITIONS, normalize=True)
    write_gguf(GGUF_PATH, w, MODEL_DIR)
    write_gguf(FUSED_GGUF_PATH, w, MODEL_DIR, fused=True)
    read, llama_cpp_version = llama_cpp_reader(GGUF_PATH)
    read_fused, _ = llama_cpp_reader(FUSED_GGUF_PATH)
    embeddings = []
    compared = 0
    for text in TEXTS:
        ids = tok.encode(text).ids
        assert len(ids) <= POSITIONS, (text, len(ids))  # sentence-transformers would cut it
        ref = reference(w, ids)
        lc_ids, lc_emb = read(text)
        # llama.cpp reads the fused file as the split one.
        fused_ids, fused_emb = read_fused(text)
        assert fused_ids == lc_ids and np.abs(np.array(fused_emb) - np.array(lc_emb)).max() < 1e-5, text
        if lc_ids == ids:
            assert np.abs(ref - np.array(lc_emb)).max() < 1e-3, text
            compared += 1
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in ref],
                           "llama_cpp_embedding": [float(x) for x in lc_emb] if lc_ids == ids else None})
    assert compared >= len(TEXTS) - 1, compared
    assert max(len(e["ids"]) for e in embeddings) > 64  # far past the nearest keys
    from importlib.metadata import version
    write_json(OUT_PATH, {"versions": versions(SCRIPT, llama_cpp_python=llama_cpp_version, gguf=version("gguf")),
                          "max_tokens": POSITIONS, "embeddings": embeddings})
    worst = max(np.abs(np.array(e["embedding"]) - np.array(e["llama_cpp_embedding"])).max()
                for e in embeddings if e["llama_cpp_embedding"] is not None)
    print("wrote", OUT_PATH, MODEL_DIR, GGUF_PATH, FUSED_GGUF_PATH, "compared with llama.cpp:", compared, "worst", worst)


if __name__ == "__main__":
    main()
