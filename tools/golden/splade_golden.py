#!/usr/bin/env python3
"""Writes the SPLADE (sparse embedding) golden fixtures from the reference
implementation.

A SPLADE model (naver/splade-cocondenser-ensembledistil, naver/splade-v3,
prithivida/Splade_PP_en_v1, opensearch-neural-sparse-encoding-doc-v2-distill)
is a masked-language model read by sentence-transformers' SparseEncoder: the
MLM head's vocabulary logits of every token, log(1 + relu(x)) (or a second
log1p with activation "log1p_relu"), max (or summed) over the sequence's
tokens: one weight per vocabulary entry, most of them zero. TEI serves these
with /embed_sparse.

1. The tokenizer: transformers' BertTokenizer on a reduced all-MiniLM-L6-v2
   (BERT uncased) vocabulary, as distilbert_golden.py builds it (every
   single character and "##" + character, every token the full vocabulary
   gives the texts below, asserted to tokenize the same).
2. Tiny random-weight masked-language models (hidden 32, 2 layers, 4 heads,
   intermediate 64, max_position_embeddings 64), every parameter
   re-initialised, the decoder tied to the word embeddings as saved
   checkpoints have it and its bias lowered by 2.5 so most entries are zero
   (a few hundred of 2,040 non-zero per text), each saved by SparseEncoder(modules=[MLMTransformer,
   SpladePooling]).save (its own modules.json and 1_SpladePooling):
     tests/golden/encoder_models/splade_tiny/         BertForMaskedLM, SpladePooling max + relu
     tests/golden/encoder_models/splade_distil_tiny/  DistilBertForMaskedLM, SpladePooling max + log1p_relu
3. tests/golden/encoder/splade_golden.json:
     versions  exact library versions, this script
     models    per model: pooling_strategy, activation_function, vocab_size, cases
               {text, ids, indices, values}: SparseEncoder(dir).encode's non-zero entries
               (indices ascending), asserted equal to the same pooling computed here from
               transformers' MLM logits

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/splade_golden.py
"""
import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentence_transformers
import torch
from sentence_transformers import SparseEncoder
from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
from tokenizers import Tokenizer
from transformers import BertConfig, BertForMaskedLM, BertTokenizer, DistilBertConfig, DistilBertForMaskedLM

from encoder_golden_util import (MODELS_DIR, REPO, assert_same_tokens, minilm_vocab, reduced_minilm_vocab, reinit_,
                                 truncated_ids, versions, write_json)

SCRIPT = "tools/golden/splade_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/splade_golden.json")
MAX_TOKENS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "what is the capital of france?",
    "Paris is the capital and largest city of France.",
    "How do I reset my password?",
    "Café au lait, crème brûlée, and naïve façades.",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 6),
]


def build_tokenizer():
    full = BertTokenizer(vocab={t: i for i, t in enumerate(minilm_vocab())})
    vocab = reduced_minilm_vocab(full.tokenize, TEXTS, SPECIALS)
    hf = BertTokenizer(vocab=vocab)
    assert_same_tokens(full, hf, TEXTS)
    tok = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return hf, tok, len(vocab)


def sparsen_(decoder_bias):
    """Lowers the vocabulary logits' bias so that, as in a trained SPLADE model,
    most entries are zero after relu and a text has a few hundred non-zero ones."""
    with torch.no_grad():
        decoder_bias.sub_(2.5)


def splade_reference(model, ids, activation):
    """SpladePooling max over one unpadded sequence, from transformers' logits."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).logits[0]
    values = torch.log1p(torch.relu(logits))
    if activation == "log1p_relu":
        values = torch.log1p(values)
    return values.max(dim=0).values


def save_sparse_encoder(name, model, hf_tok, tok, activation):
    d = os.path.join(MODELS_DIR, name)
    shutil.rmtree(d, ignore_errors=True)
    raw = d + ".raw"
    shutil.rmtree(raw, ignore_errors=True)
    model.save_pretrained(raw, safe_serialization=True)
    hf_tok.save_pretrained(raw)
    tok.save(os.path.join(raw, "tokenizer.json"))
    encoder = SparseEncoder(modules=[MLMTransformer(raw, max_seq_length=MAX_TOKENS),
                                     SpladePooling(pooling_strategy="max", activation_function=activation)],
                            device="cpu")
    encoder.save(d)
    shutil.rmtree(raw)
    os.remove(os.path.join(d, "README.md"))  # the generated model card: nothing the server reads
    return d


def fixture_cases(name, model, hf_tok, tok, activation):
    d = save_sparse_encoder(name, model, hf_tok, tok, activation)
    encoder = SparseEncoder(d, device="cpu")
    got = encoder.encode(TEXTS, batch_size=4, convert_to_tensor=True).to_dense()
    cases = []
    for text, row in zip(TEXTS, got):
        ids = truncated_ids(tok, text, None, MAX_TOKENS)
        want = splade_reference(model, ids, activation)
        assert torch.allclose(row, want, atol=1e-5), text
        indices = torch.nonzero(row).flatten()
        assert 0 < len(indices) < len(row), text  # sparse, not empty
        cases.append({"text": text, "ids": ids, "indices": [int(i) for i in indices],
                      "values": [float(row[i]) for i in indices]})
    assert max(len(c["ids"]) for c in cases) == MAX_TOKENS  # the long text reaches the limit
    return cases


def main():
    torch.manual_seed(0)
    hf_tok, tok, vocab_size = build_tokenizer()
    fixture = {
        "versions": versions(SCRIPT),
        "max_tokens": MAX_TOKENS,
        "models": {},
    }
    bert = BertForMaskedLM(BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, intermediate_size=64,
                                      max_position_embeddings=MAX_TOKENS, attn_implementation="eager")).eval()
    reinit_(bert, 20261214)
    sparsen_(bert.cls.predictions.decoder.bias)
    distil = DistilBertForMaskedLM(DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4,
                                                    hidden_dim=64, max_position_embeddings=MAX_TOKENS,
                                                    attn_implementation="eager")).eval()
    reinit_(distil, 20261215)
    sparsen_(distil.vocab_projector.bias)
    for name, model, activation in [("splade_tiny", bert, "relu"), ("splade_distil_tiny", distil, "log1p_relu")]:
        fixture["models"][name] = {"pooling_strategy": "max", "activation_function": activation,
                                   "vocab_size": vocab_size,
                                   "cases": fixture_cases(name, model, hf_tok, tok, activation)}
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
