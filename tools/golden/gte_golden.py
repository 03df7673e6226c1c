#!/usr/bin/env python3
"""Writes the GTE golden fixtures from the reference implementation.

Alibaba's GTE encoders (gte-base-en-v1.5, gte-large-en-v1.5,
gte-multilingual-base, gte-multilingual-reranker-base) are BERT's post-norm
encoder with rotary positions (GPT-NeoX pairing) in place of a position
table, biased attention projections (a fused qkv_proj), a GeGLU
feed-forward (up_gate_proj [2I, D] without bias: gelu(gate) * up, then
down_proj with a bias), an optional token-type table, and for a classifier
BERT's pooler (dense, tanh on the first token) and classifier. The hub's
checkpoints are `model_type` "new" (Alibaba-NLP/new-impl's remote code:
rope_theta, rope_scaling {"type": "ntk", "factor"}, position_embedding_type,
layer_norm_type); transformers 5 ships the architecture as "gte" (GteModel,
rope_parameters) and reads and writes the same tensor names (a task
model's under "gte." where the remote code's are under "new.").

The reference is transformers 5's GteModel / GteForSequenceClassification.
For the NTK-scaled fixture (gte-*-en-v1.5's rope_scaling), which
transformers' rope types do not express, the model's inverse frequencies
are replaced by the remote code's NTKScalingRotaryEmbedding's (base theta *
factor, divided by factor^(2 / head_dim); TEI's gte.rs computes the same).

1. Tokenizers: the reduced all-MiniLM-L6-v2 WordPiece of nomic_bert_golden.py's
   kind (gte-base-en-v1.5 uses bert-base-uncased's) for the embedder, and
   xlmr_tiny's SentencePiece Unigram (gte-multilingual's is XLM-R's) for the
   reranker.
2. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 48,
   128 positions), every parameter re-initialised:
     tests/golden/encoder_models/gte_tiny/          config.json in the hub's layout ("new", NewModel,
                                                    rope_theta 10000, rope_scaling ntk factor 2,
                                                    type_vocab_size 0), sentence-transformers CLS
                                                    pooling + Normalize, max_seq_length 64
     tests/golden/encoder_models/gte_reranker_tiny/ NewForSequenceClassification in the hub's layout
                                                    (tensors under "new.", rope_theta 160000,
                                                    type_vocab_size 1), one label
3. tests/golden/encoder/gte_golden.json:
     versions              exact library versions, this script
     max_tokens            sentence-transformers' max_seq_length
     embeddings            gte_tiny: {text, ids, embedding}: the normalised [CLS] state of GteModel with
                           the NTK frequencies
     transformers_config   the config.json transformers 5 wrote for the same weights (no NTK scaling:
                           its rope types have none)
     transformers_embeddings  the same texts through SentenceTransformer on that layout
     logits                gte_reranker_tiny: {text, text_pair, ids, logits}

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/gte_golden.py
"""
import json
import os
import shutil
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer
from transformers import GteConfig, GteForSequenceClassification, GteModel

from encoder_golden_util import (MODELS_DIR, QUERY_PASSAGE_PAIRS, REPO, SENTENCES, bert_uncased_tokenizer_config,
                                 classifier_cases, reduced_bert_tokenizer, reinit_, save_model_dir, truncated_ids,
                                 versions, write_json, write_pooling_modules)

SCRIPT = "tools/golden/gte_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/gte_golden.json")
EMBEDDER_DIR = os.path.join(MODELS_DIR, "gte_tiny")
RERANKER_DIR = os.path.join(MODELS_DIR, "gte_reranker_tiny")
XLMR_TOKENIZER = os.path.join(MODELS_DIR, "xlmr_tiny/tokenizer.json")
MAX_TOKENS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
             max_position_embeddings=128, layer_norm_eps=1e-12, hidden_act="gelu")
THETA, NTK_FACTOR = 10000.0, 2.0

TEXTS = SENTENCES
PAIRS = QUERY_PASSAGE_PAIRS
RERANK_TEXTS = TEXTS


def remote_config(architecture, vocab_size, type_vocab_size, theta, rope_scaling, pad_token_id, **extra):
    """config.json as the hub's GTE checkpoints write it (the key set of
    gte-base-en-v1.5's and gte-multilingual-base's, Alibaba-NLP/new-impl's
    NewConfig), with the tiny model's sizes."""
    return {
        "architectures": [architecture], "attention_probs_dropout_prob": 0.0,
        "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                     "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel",
                     "AutoModelForSequenceClassification": "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification"},
        "classifier_dropout": None, "hidden_dropout_prob": 0.1, "initializer_range": 0.02,
        "layer_norm_type": "layer_norm", "logn_attention_clip1": False, "logn_attention_scale": False,
        "model_type": "new", "pack_qkv": True, "pad_token_id": pad_token_id, "position_embedding_type": "rope",
        "rope_scaling": rope_scaling, "rope_theta": theta, "torch_dtype": "float32",
        "transformers_version": "4.39.1", "type_vocab_size": type_vocab_size, "unpad_inputs": False,
        "use_memory_efficient_attention": False, "vocab_size": vocab_size, **SIZES, **extra,
    }


def ntk_inv_freq(head_dim, theta, factor):
    """The remote code's NTKScalingRotaryEmbedding frequencies (mixed_b None),
    which it builds at load for every length."""
    base = theta * factor
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    return inv / factor ** (2 / head_dim)


def embedder(fixture):
    tok, n_tokens = reduced_bert_tokenizer(TEXTS, SPECIALS)
    config = GteConfig(vocab_size=n_tokens, type_vocab_size=0, pad_token_id=0,
                       rope_parameters={"rope_type": "default", "rope_theta": THETA},
                       attn_implementation="eager", **SIZES)
    model = GteModel(config).eval()
    reinit_(model, 20261208)
    d = save_model_dir("gte_tiny", model, tok, bert_uncased_tokenizer_config(MAX_TOKENS))
    write_pooling_modules(d, SIZES["hidden_size"], MAX_TOKENS, normalize=True, mode="cls")
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        fixture["transformers_config"] = json.load(f)
    # transformers' own layout (no NTK scaling) through SentenceTransformer;
    # config.json is put in the hub's layout afterwards.
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(TEXTS, batch_size=4)
    fixture["transformers_embeddings"] = [
        {"text": t, "ids": truncated_ids(tok, t, None, MAX_TOKENS), "embedding": [float(x) for x in e]}
        for t, e in zip(TEXTS, st_embeddings)]
    write_json(os.path.join(EMBEDDER_DIR, "config.json"), remote_config(
        "NewModel", n_tokens, 0, THETA, {"type": "ntk", "factor": NTK_FACTOR}, 0))

    # The same CLS vectors by hand (checked against sentence-transformers on
    # the plain frequencies), then with the remote code's NTK frequencies.
    def cls_vectors():
        out = []
        for text in TEXTS:
            ids = truncated_ids(tok, text, None, MAX_TOKENS)
            with torch.no_grad():
                hidden = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids)))
            out.append((ids, torch.nn.functional.normalize(hidden.last_hidden_state[0, 0], dim=0)))
        return out

    for (_, v), e in zip(cls_vectors(), fixture["transformers_embeddings"]):
        assert torch.allclose(v, torch.tensor(e["embedding"]), atol=1e-5)
    head_dim = SIZES["hidden_size"] // SIZES["num_attention_heads"]
    plain = model.rotary_emb.inv_freq.clone()
    model.rotary_emb.inv_freq.copy_(ntk_inv_freq(head_dim, THETA, NTK_FACTOR))
    assert not torch.allclose(plain, model.rotary_emb.inv_freq)
    embeddings = []
    for text, (ids, v) in zip(TEXTS, cls_vectors()):
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in v]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    fixture["embeddings"] = embeddings


def reranker(fixture):
    tok = Tokenizer.from_file(XLMR_TOKENIZER)
    tok.no_truncation()
    tok.no_padding()
    config = GteConfig(vocab_size=tok.get_vocab_size(), type_vocab_size=1, pad_token_id=tok.token_to_id("<pad>"),
                       rope_parameters={"rope_type": "default", "rope_theta": 160000.0}, num_labels=1,
                       attn_implementation="eager", **SIZES)
    model = GteForSequenceClassification(config).eval()
    reinit_(model, 20261209)
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "gte_reranker_tiny")
        model.save_pretrained(d, safe_serialization=True)
        tensors = load_file(os.path.join(d, "model.safetensors"))
        shutil.rmtree(RERANKER_DIR, ignore_errors=True)
        os.makedirs(RERANKER_DIR)
        # The remote code's task model keeps its encoder under "new.".
        renamed = {("new." + k[len("gte."):] if k.startswith("gte.") else k): v for k, v in sorted(tensors.items())}
        assert any(k.startswith("new.pooler.dense") for k in renamed)
        save_file(renamed, os.path.join(RERANKER_DIR, "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(XLMR_TOKENIZER, os.path.join(RERANKER_DIR, "tokenizer.json"))
    write_json(os.path.join(RERANKER_DIR, "tokenizer_config.json"), {
        "bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "pad_token": "<pad>",
        "unk_token": "<unk>", "mask_token": "<mask>", "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": SIZES["max_position_embeddings"]})
    write_json(os.path.join(RERANKER_DIR, "config.json"), remote_config(
        "NewForSequenceClassification", tok.get_vocab_size(), 1, 160000.0, None, tok.token_to_id("<pad>"),
        id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}))
    fixture["logits"] = classifier_cases(model, tok, PAIRS, RERANK_TEXTS)


def main():
    torch.manual_seed(0)
    fixture = {"versions": versions(SCRIPT), "max_tokens": MAX_TOKENS}
    embedder(fixture)
    reranker(fixture)
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH, EMBEDDER_DIR, RERANKER_DIR)


if __name__ == "__main__":
    main()
