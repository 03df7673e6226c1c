"""Writes a Hugging Face BERT embedding model (a sentence-transformers
directory: config.json, model.safetensors, tokenizer.json, 1_Pooling) as the
GGUF file llama.cpp's convert_hf_to_gguf.py writes for it (its BertModel):
architecture "bert"; the WordPiece vocabulary in llama.cpp's "phantom space"
spelling (a word-initial token gains U+2581, a "##" continuation loses its
"##", control tokens stay as they are) under tokenizer.ggml.model "bert";
gguf-py's own SpecialVocab for the special token ids; the tensors under the
names gguf-py's TensorNameMap gives them; the pooler, position ids and heads
dropped; biases, norms, the position and token-type tables kept f32 (as the
converter keeps them), the other matrices in the file type asked for.

A sequence classifier (a reranker: XLMRobertaForSequenceClassification,
bge-reranker's kind) keeps its head as the converter does: classifier.dense
-> cls, classifier.out_proj -> cls.output, its labels in
bert.classifier.output_labels; BERT's pooler is dropped, as the converter
drops it.

Used by tools/golden/bert_gguf_golden.py (the tiny golden file) and by
tests/integration/test_http_bert_gguf.py (all-MiniLM-L6-v2, converted at test
time: the real model, never fetched from a hub). Ollama's all-minilm,
mxbai-embed-large and snowflake-arctic-embed files are of this kind.

    python gguf_bert_writer.py MODEL_DIR OUT.gguf [f32|f16|q8_0]
"""
import json
import os
import sys

import gguf
import numpy as np
from safetensors.numpy import load_file

QTYPES = {
    "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
}


def phantom(token, control):
    """convert_hf_to_gguf.py BertModel.set_vocab's spelling of a token."""
    if control:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def tokens_by_id(model_dir, model_type):
    """tokenizer.json's tokens in id order and their types, as
    TextModel.get_vocab_base gives them: added special tokens CONTROL, other
    added tokens USER_DEFINED, ids nothing names "[PAD<i>]" UNUSED, the
    rest NORMAL. `model_type`: the tokenizer model the file must hold."""
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    if tj["model"]["type"] != model_type:
        raise ValueError(f"{model_dir}: not a {model_type} tokenizer")
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    kinds = {}
    for added in tj.get("added_tokens", []):
        by_id[added["id"]] = added["content"]
        kinds[added["id"]] = gguf.TokenType.CONTROL if added["special"] else gguf.TokenType.USER_DEFINED
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(max(by_id) + 1)]
    types = [kinds.get(i, gguf.TokenType.NORMAL if i in by_id else gguf.TokenType.UNUSED) for i in range(len(tokens))]
    return tokens, types


def vocabulary(model_dir):
    """A WordPiece vocabulary in the converter's phantom spelling, and its types."""
    tokens, types = tokens_by_id(model_dir, "WordPiece")
    return [phantom(t, k == gguf.TokenType.CONTROL) for t, k in zip(tokens, types)], types


def add_unigram_vocabulary(w, model_dir, vocab_size):
    """An XLM-RoBERTa SentencePiece Unigram vocabulary as the converter's
    _xlmroberta_set_vocab writes it (tokenizer.ggml.model "t5": pieces by
    Hugging Face id, their scores, unk UNKNOWN, special tokens CONTROL, the
    normalizer's precompiled charsmap, add_space_prefix and
    remove_extra_whitespaces), read from tokenizer.json rather than from
    sentencepiece.bpe.model (the same pieces, ids shifted as transformers
    shifts them; the converter's own tokenizer.json branch expects a bare
    Precompiled normalizer, not the Sequence transformers writes)."""
    import base64
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    model = tj["model"]
    if model["type"] != "Unigram":
        raise ValueError(f"{model_dir}: not a Unigram tokenizer")
    n = max(vocab_size, len(model["vocab"]))
    tokens = [f"[PAD{i}]" for i in range(n)]
    scores = [-10000.0] * n
    types = [gguf.TokenType.UNUSED] * n
    for i, (piece, score) in enumerate(model["vocab"]):
        tokens[i], scores[i] = piece, score
        types[i] = gguf.TokenType.UNKNOWN if i == model["unk_id"] else gguf.TokenType.NORMAL
    for added in tj.get("added_tokens", []):
        if added["id"] != model["unk_id"]:
            tokens[added["id"]] = added["content"]
            types[added["id"]] = gguf.TokenType.CONTROL if added["special"] else gguf.TokenType.USER_DEFINED
    norm = tj["normalizer"]
    parts = norm["normalizers"] if norm["type"] == "Sequence" else [norm]
    charsmap = b"".join(base64.b64decode(p["precompiled_charsmap"]) for p in parts if p["type"] == "Precompiled")
    pre = tj["pre_tokenizer"]
    pre_parts = pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]
    # SentencePiece's remove_extra_whitespaces, as tokenizer.json spells it:
    # Replace(" {2,}") (transformers 4's converter) or a WhitespaceSplit
    # before the Metaspace (transformers 5's).
    extra_ws = any(p["type"] == "Replace" and p["pattern"].get("Regex") == " {2,}" for p in parts) or \
        any(p["type"] == "WhitespaceSplit" for p in pre_parts)
    metaspace = next(p for p in pre_parts if p["type"] == "Metaspace")
    w.add_tokenizer_model("t5")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(metaspace.get("prepend_scheme", "always") != "never")
    w.add_remove_extra_whitespaces(extra_ws)
    if charsmap:
        w.add_precompiled_charsmap(charsmap)
    return len(tokens)


def add_byte_level_vocabulary(w, model_dir):
    """A RoBERTa byte-level BPE vocabulary as the converter's
    _set_vocab_gpt2 writes it (tokenizer.ggml.model "gpt2", pre
    "roberta-bpe": the name its pre-tokenizer table gives
    stsb-roberta-base's tokenizer; tokens by id, special added tokens
    CONTROL; the merges through SpecialVocab)."""
    tokens, types = tokens_by_id(model_dir, "BPE")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("roberta-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    return len(tokens)


def pooling_type(model_dir):
    """1_Pooling's mode as convert_hf_to_gguf.py's _try_set_pooling_type reads it."""
    path = os.path.join(model_dir, "1_Pooling", "config.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        pooling = json.load(f)
    if pooling.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    raise ValueError(f"{path}: only mean and cls pooling are converted")


def tensor_type(name, arr, qtype):
    """The converter's choice: 1-D tensors, norms, biases, position and
    token-type tables f32; a matrix whose rows are not whole Q8_0 blocks f16."""
    if arr.ndim <= 1 or not name.endswith(".weight") or name.endswith("_norm.weight"):
        return gguf.GGMLQuantizationType.F32
    if name in ("position_embd.weight", "token_types.weight"):
        return gguf.GGMLQuantizationType.F32
    if qtype == gguf.GGMLQuantizationType.Q8_0 and arr.shape[-1] % 32 != 0:
        return gguf.GGMLQuantizationType.F16
    return qtype


def hparam(cfg, *keys):
    """TextModel.find_hparam: the first of `keys` the config has."""
    for k in keys:
        if k in cfg:
            return cfg[k]
    raise KeyError(keys)


def write_bert_gguf(model_dir, out, ftype="f16", name=None):
    """BertModel, or DistilBertModel (the converter's DistilBertModel: the
    same architecture, DistilBERT's config keys, no token-type table, every
    LayerNorm's eps 1e-12), or XLMRobertaModel / RobertaModel (the
    converter's: the position table cut past the padding id, so a
    sequence's positions count from row 0; a Unigram, or a byte-level BPE,
    vocabulary)."""
    qtype, file_type = QTYPES[ftype]
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    kind = cfg.get("model_type")
    if kind not in ("bert", "distilbert", "xlm-roberta", "roberta"):
        raise ValueError(f"{model_dir}: model_type {kind!r} is not bert, distilbert, xlm-roberta or roberta")
    distil = kind == "distilbert"
    position_offset = cfg["pad_token_id"] + 1 if kind in ("xlm-roberta", "roberta") else 0
    n_layers = hparam(cfg, "num_hidden_layers", "n_layers")
    w = gguf.GGUFWriter(out, "bert")
    w.add_name(name or os.path.basename(os.path.normpath(model_dir)))
    w.add_context_length(cfg["max_position_embeddings"] - position_offset)
    w.add_embedding_length(hparam(cfg, "hidden_size", "dim"))
    w.add_feed_forward_length(hparam(cfg, "intermediate_size", "hidden_dim"))
    w.add_block_count(n_layers)
    w.add_head_count(hparam(cfg, "num_attention_heads", "n_heads"))
    w.add_layer_norm_eps(1e-12 if distil else cfg.get("layer_norm_eps", 1e-12))
    w.add_file_type(file_type)
    w.add_causal_attention(False)
    pooling = pooling_type(model_dir)
    if pooling is not None:
        w.add_pooling_type(pooling)
    # BertModel.__init__: a sequence classifier's labels, unless they are
    # AutoConfig's two dummies.
    labels = cfg.get("id2label") if any(a.endswith("ForSequenceClassification")
                                        for a in cfg.get("architectures", [])) else None
    if labels and len(labels) == 2 and labels.get("0") == "LABEL_0":
        labels = None
    if labels:
        w.add_classifier_output_labels([v for _, v in sorted(labels.items(), key=lambda kv: int(kv[0]))])

    w.add_token_type_count(cfg.get("type_vocab_size", 1))
    merges = False
    if kind == "xlm-roberta":
        n_tokens = add_unigram_vocabulary(w, model_dir, cfg["vocab_size"])
    elif kind == "roberta":
        n_tokens = add_byte_level_vocabulary(w, model_dir)
        merges = True
    else:
        tokens, types = vocabulary(model_dir)
        w.add_tokenizer_model("bert")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        n_tokens = len(tokens)
    gguf.SpecialVocab(model_dir, load_merges=merges, n_vocab=n_tokens).add_to_gguf(w)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    for hf_name, arr in sorted(load_file(os.path.join(model_dir, "model.safetensors")).items()):
        short = hf_name
        for prefix in ("bert.", "distilbert.", "roberta."):
            short = short[len(prefix):] if short.startswith(prefix) else short
        if short in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias") or \
                short.startswith(("cls.", "vocab_", "pre_classifier")):
            continue
        if short.startswith("classifier"):
            if not labels:
                continue
            # BertModel.modify_tensors: BERT's single classifier layer is the out projection.
            short = {"classifier.weight": "classifier.out_proj.weight",
                     "classifier.bias": "classifier.out_proj.bias"}.get(short, short)
        new_name = names.get_name(short, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise ValueError(f"{model_dir}: tensor {hf_name} has no GGUF name")
        if short == "embeddings.position_embeddings.weight":
            arr = arr[position_offset:]
        arr = np.ascontiguousarray(arr.astype(np.float32))
        t = tensor_type(new_name, arr, qtype)
        if t == gguf.GGMLQuantizationType.F32:
            w.add_tensor(new_name, arr)
        elif t == gguf.GGMLQuantizationType.F16:
            w.add_tensor(new_name, arr.astype(np.float16))
        else:
            q = gguf.quants.quantize(arr, t)
            w.add_tensor(new_name, q, raw_shape=q.shape, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    write_bert_gguf(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "f16")
