#!/usr/bin/env python3
"""Writes the DistilBERT golden fixtures from the reference implementation.

DistilBERT is the architecture of distilbert-base-uncased-finetuned-sst-2-english
(transformers' default text-classification model), msmarco-distilbert-base-v4
and multi-qa-distilbert-cos-v1: BERT's post-norm layers under other tensor
names (transformer.layer.N.attention.q_lin, sa_layer_norm, ffn.lin1,
output_layer_norm) and config keys (dim, n_layers, n_heads, hidden_dim,
activation), every LayerNorm at eps 1e-12, positions by index, no token-type
embeddings, and a classification head pre_classifier -> ReLU -> classifier
on the first token. Its tokenizer is BERT's uncased WordPiece.

1. The tokenizer: transformers' DistilBertTokenizer on a reduced
   all-MiniLM-L6-v2 (BERT uncased) vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK]
   first, every single character and "##" + character of the original, every
   token the full vocabulary gives the texts below (so they tokenize the same,
   asserted), in the original order. Its post-processor is BERT's template
   (a pair's second text in segment 1, which DistilBERT never reads).
2. Tiny random-weight models (dim 32, 2 layers, 4 heads, hidden_dim 64,
   max_position_embeddings 64), every parameter re-initialised:
     tests/golden/encoder_models/distilbert_tiny/            DistilBertModel + sentence-transformers
                                                             mean pooling, no Normalize
                                                             (msmarco-distilbert-base-v4's modules)
     tests/golden/encoder_models/distilbert_classifier_tiny/ DistilBertForSequenceClassification,
                                                             NEGATIVE / POSITIVE (sst-2's labels)
3. tests/golden/encoder/distilbert_golden.json:
     versions    exact library versions, this script
     embeddings  distilbert_tiny: {text, ids, embedding}: the mean of DistilBertModel's last
                 hidden state, asserted equal to SentenceTransformer(dir).encode
     logits      distilbert_classifier_tiny: {text, text_pair, ids, logits}

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/distilbert_golden.py
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer
from transformers import DistilBertConfig, DistilBertForSequenceClassification, DistilBertModel, DistilBertTokenizer

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, assert_same_tokens, minilm_vocab, reduced_minilm_vocab,
                                 reinit_, save_model_dir, truncated_ids, versions, write_json,
                                 write_mean_pooling_modules)

SCRIPT = "tools/golden/distilbert_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/distilbert_golden.json")
MAX_TOKENS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "this film was a complete waste of two hours",
    "An absolutely wonderful, heartfelt performance.",
    "Café au lait, crème brûlée, and naïve façades.",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 6),
]
PAIRS = QUERY_PASSAGE_PAIRS


def build_tokenizer():
    full = DistilBertTokenizer(vocab={t: i for i, t in enumerate(minilm_vocab())})
    vocab = reduced_minilm_vocab(full.tokenize, TEXTS + [t for pair in PAIRS for t in pair], SPECIALS)
    hf = DistilBertTokenizer(vocab=vocab)
    assert_same_tokens(full, hf, TEXTS)
    tok = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok, len(vocab)


def model_config(vocab_size, **extra):
    return DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                            max_position_embeddings=MAX_TOKENS, activation="gelu", attn_implementation="eager",
                            **extra)


def save_dir(name, model, tok):
    return save_model_dir(name, model, tok, {
        "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
        "mask_token": "[MASK]", "do_lower_case": True, "tokenizer_class": "DistilBertTokenizer",
        "model_max_length": MAX_TOKENS})


def main():
    torch.manual_seed(0)
    tok, vocab_size = build_tokenizer()
    fixture = {
        "versions": versions(SCRIPT),
        "max_tokens": MAX_TOKENS,
    }

    encoder = DistilBertModel(model_config(vocab_size)).eval()
    reinit_(encoder, 20261212)
    d = save_dir("distilbert_tiny", encoder, tok)
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=False)
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(TEXTS, batch_size=4, convert_to_numpy=True)
    embeddings = []
    for text, st_emb in zip(TEXTS, st_embeddings):
        ids = truncated_ids(tok, text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = hidden.mean(dim=0)
        assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    fixture["embeddings"] = embeddings

    classifier = DistilBertForSequenceClassification(
        model_config(vocab_size, id2label={0: "NEGATIVE", 1: "POSITIVE"},
                     label2id={"NEGATIVE": 0, "POSITIVE": 1})).eval()
    reinit_(classifier, 20261213)
    save_dir("distilbert_classifier_tiny", classifier, tok)
    logits = []
    for text, pair in PAIRS + [(t, None) for t in TEXTS]:
        ids = truncated_ids(tok, text, pair, MAX_TOKENS)
        with torch.no_grad():
            out = classifier(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).logits[0]
        logits.append({"text": text, "text_pair": pair, "ids": ids, "logits": [float(x) for x in out]})
    fixture["logits"] = logits
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
