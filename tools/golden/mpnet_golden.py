#!/usr/bin/env python3
"""Writes the MPNet golden fixtures from the reference implementation.

MPNet is the architecture of all-mpnet-base-v2 (sentence-transformers' default
English embedder), multi-qa-mpnet-base and paraphrase-mpnet-base: BERT's
layers with RoBERTa's position ids, no token-type embeddings, and a relative
position bias (T5's 32 buckets, one [buckets, heads] table shared by every
layer) added to each layer's attention scores. Its tokenizer is BERT's
uncased WordPiece with <s> </s> around the text.

1. The tokenizer: transformers' MPNetTokenizer on a reduced all-MiniLM-L6-v2
   (BERT uncased) vocabulary: MPNet's specials <s> <pad> </s> <unk> first,
   every single character and "##" + character of the original, every token
   the full vocabulary gives the texts below (so they tokenize the same,
   asserted), in the original order; <mask> last. Its post-processor is the
   one the checkpoints' files have (transformers' MPNetConverter: the second
   text of a pair in segment 1, which the model ignores).
2. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 64,
   max_position_embeddings 132 = 130 tokens + padding_idx 1 + 1, so relative
   distances reach past 128, where the buckets stop growing), every
   parameter re-initialised (the relative bias N(0, 1) so that it matters):
     tests/golden/encoder_models/mpnet_tiny/            MPNetModel + sentence-transformers
                                                        mean pooling + Normalize (all-mpnet-base-v2's modules)
     tests/golden/encoder_models/mpnet_classifier_tiny/ MPNetForSequenceClassification, 2 labels
3. tests/golden/encoder/mpnet_golden.json:
     versions    exact library versions, this script
     buckets     {"from": -300, "values": [...]}: transformers'
                 MPNetEncoder.relative_position_bucket for key - query = -300..300
     embeddings  mpnet_tiny: {text, ids, embedding}: the L2-normalised mean of MPNetModel's
                 last hidden state, asserted equal to SentenceTransformer(dir).encode
     logits      mpnet_classifier_tiny: {text, text_pair, ids, logits}

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/mpnet_golden.py
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
import transformers
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, processors
from transformers import MPNetConfig, MPNetForSequenceClassification, MPNetModel, MPNetTokenizer
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, assert_same_tokens, minilm_vocab, reduced_minilm_vocab,
                                 reinit_, save_model_dir, truncated_ids, versions, write_json,
                                 write_mean_pooling_modules)

SCRIPT = "tools/golden/mpnet_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/mpnet_golden.json")
MAX_TOKENS = 130
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Paris is the capital and largest city of France.",
    "Transformers process tokens in parallel rather than sequentially.",
    "Café au lait, crème brûlée, and naïve façades.",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 12),
    " ".join(["alpha beta gamma delta"] * 20),
]
PAIRS = QUERY_PASSAGE_PAIRS


def BIAS_STD(name):
    # The relative position bias N(0, 1), so that it matters.
    return 1.0 if name.endswith("relative_attention_bias") else 0.2


def build_tokenizer():
    full = MPNetTokenizer(vocab={t: i for i, t in enumerate(SPECIALS + minilm_vocab() + ["<mask>"])})
    vocab = reduced_minilm_vocab(full.tokenize, TEXTS + [t for pair in PAIRS for t in pair], SPECIALS,
                                 tail=["<mask>"], also_keep=["[UNK]"])
    hf = MPNetTokenizer(vocab=vocab)
    assert_same_tokens(full, hf, TEXTS)
    tok = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    # The checkpoints' own files (transformers' MPNetConverter) give the
    # second text of a pair segment 1, which MPNet never reads; transformers 5
    # writes RobertaProcessing (all 0) instead. The converter's is the harder case.
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0 </s>:0", pair="<s>:0 $A:0 </s>:0 </s>:0 $B:1 </s>:1",
        special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])])
    tok.no_truncation()
    tok.no_padding()
    return hf, tok, len(vocab)


def model_config(vocab_size, **extra):
    return MPNetConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=MAX_TOKENS + 2, hidden_act="gelu",
                       layer_norm_eps=1e-5, attn_implementation="eager", **extra)


def save_dir(name, model, tok):
    return save_model_dir(name, model, tok, {
        "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "[UNK]",
        "pad_token": "<pad>", "mask_token": "<mask>", "do_lower_case": True, "tokenizer_class": "MPNetTokenizer",
        "model_max_length": MAX_TOKENS})


def main():
    torch.manual_seed(0)
    hf, tok, vocab_size = build_tokenizer()
    fixture = {
        "versions": versions(SCRIPT),
        "max_tokens": MAX_TOKENS,
    }
    rel = torch.arange(-300, 301)
    fixture["buckets"] = {"from": -300,
                          "values": [int(b) for b in MPNetEncoder.relative_position_bucket(rel)]}

    encoder = MPNetModel(model_config(vocab_size), add_pooling_layer=False).eval()
    reinit_(encoder, 20261210, embedding_std=BIAS_STD)
    d = save_dir("mpnet_tiny", encoder, tok)
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=True)
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(TEXTS, batch_size=4, convert_to_numpy=True)
    embeddings = []
    for text, st_emb in zip(TEXTS, st_embeddings):
        ids = truncated_ids(tok, text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = torch.nn.functional.normalize(hidden.mean(dim=0), dim=0)
        assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    fixture["embeddings"] = embeddings

    classifier = MPNetForSequenceClassification(model_config(vocab_size, num_labels=2)).eval()
    reinit_(classifier, 20261211, embedding_std=BIAS_STD)
    save_dir("mpnet_classifier_tiny", classifier, tok)
    logits = []
    for text, pair in PAIRS + [(t, None) for t in TEXTS[:3]]:
        ids = truncated_ids(tok, text, pair, MAX_TOKENS)
        with torch.no_grad():
            out = classifier(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).logits[0]
        logits.append({"text": text, "text_pair": pair, "ids": ids, "logits": [float(x) for x in out]})
    fixture["logits"] = logits
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
