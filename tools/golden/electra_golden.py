#!/usr/bin/env python3
"""Writes the ELECTRA golden fixtures from the reference implementation.

ELECTRA (`model_type` "electra": the discriminators electra-small / -base /
-large and what is fine-tuned from them, such as the ms-marco-electra-base
cross-encoder) is BERT's encoder under "electra." whose embedding tables
(and their LayerNorm) have their own width, `embedding_size`, projected to
the hidden size by `embeddings_project` (a biased Linear) where the two
differ (electra-small: 128 -> 256). A sequence classifier's head is
ElectraClassificationHead: dense, GELU, out_proj on the first token
(RoBERTa's names, GELU where RoBERTa has tanh).

The reference is transformers 5's ElectraModel / ElectraForSequenceClassification
and sentence-transformers on the embedder.

1. Tokenizer: a reduced all-MiniLM-L6-v2 WordPiece (ELECTRA's is BERT's
   uncased vocabulary) that splits every text as the full one does.
2. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 64,
   64 positions, 2 token types), every parameter re-initialised:
     tests/golden/encoder_models/electra_tiny/           ElectraModel, embedding_size 32 (no projection),
                                                         sentence-transformers mean pooling + Normalize
     tests/golden/encoder_models/electra_reranker_tiny/  ElectraForSequenceClassification, embedding_size 16
                                                         (projected to 32), one label
3. tests/golden/encoder/electra_golden.json:
     versions     exact library versions, this script
     max_tokens   sentence-transformers' max_seq_length
     embeddings   electra_tiny through SentenceTransformer: {text, ids, embedding}
     logits       electra_reranker_tiny: {text, text_pair, ids, logits} (pairs carry segment 1)

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/electra_golden.py
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer
from transformers import ElectraConfig, ElectraForSequenceClassification, ElectraModel

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, SENTENCES, bert_uncased_tokenizer_config, classifier_cases,
                                 reduced_bert_tokenizer, reinit_, save_model_dir, truncated_ids, versions, write_json,
                                 write_pooling_modules)

SCRIPT = "tools/golden/electra_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/electra_golden.json")
MAX_TOKENS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=MAX_TOKENS, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
             attn_implementation="eager")

TEXTS = SENTENCES
PAIRS = [
    *QUERY_PASSAGE_PAIRS,
    ("a long query " * 8, "and a long passage " * 10),
]


def main():
    torch.manual_seed(0)
    tok, n_tokens = reduced_bert_tokenizer(TEXTS + [t for pair in PAIRS for t in pair], SPECIALS)
    fixture = {"versions": versions(SCRIPT), "max_tokens": MAX_TOKENS}

    embedder = ElectraModel(ElectraConfig(vocab_size=n_tokens, embedding_size=32, **SIZES)).eval()
    reinit_(embedder, 20261215)
    d = save_model_dir("electra_tiny", embedder, tok, bert_uncased_tokenizer_config(MAX_TOKENS))
    write_pooling_modules(d, SIZES["hidden_size"], MAX_TOKENS, normalize=True)
    vectors = SentenceTransformer(d, device="cpu").encode(TEXTS, batch_size=3)
    fixture["embeddings"] = [
        {"text": t, "ids": truncated_ids(tok, t, None, MAX_TOKENS), "embedding": [float(x) for x in e]}
        for t, e in zip(TEXTS, vectors)]
    assert max(len(c["ids"]) for c in fixture["embeddings"]) == MAX_TOKENS  # the long text reaches the limit

    reranker = ElectraForSequenceClassification(
        ElectraConfig(vocab_size=n_tokens, embedding_size=16, num_labels=1, **SIZES)).eval()
    reinit_(reranker, 20261216)
    assert any(name.startswith("electra.embeddings_project") for name, _ in reranker.named_parameters())
    save_model_dir("electra_reranker_tiny", reranker, tok, bert_uncased_tokenizer_config(MAX_TOKENS))
    fixture["logits"] = classifier_cases(reranker, tok, PAIRS, TEXTS, with_segments=True)

    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
