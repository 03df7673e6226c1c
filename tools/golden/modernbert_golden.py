#!/usr/bin/env python3
"""Writes the ModernBERT golden fixtures from the reference implementation.

ModernBERT (answerdotai/ModernBERT-base, gte-modernbert-base,
modernbert-embed-base, the ModernBERT rerankers) is `model_type`
"modernbert": pre-norm layers without biases (by default), a fused Wqkv,
rotary positions (one theta for global layers, another for local ones),
local layers attending only to keys within local_attention / 2 positions,
every global_attn_every_n_layers-th layer global, a GeGLU feed-forward
(Wi -> gelu(input) * gate -> Wo), LayerNorm on the embeddings and at the end;
its classification head is dense -> act -> LayerNorm over the [CLS] row or
the mean of the tokens (classifier_pooling), then a classifier. Its
tokenizer is a byte-level BPE with [CLS] ... [SEP] around the text.

1. A byte-level BPE trained by tokenizers' BpeTrainer (the byte alphabet,
   [CLS] [SEP] [PAD] [MASK] [UNK] specials) on roberta_golden.py's corpus,
   with ModernBERT's TemplateProcessing post-processor.
2. Tiny random-weight models (hidden 32, 4 layers: 0 and 3 global, 1 and 2
   local with local_attention 16, so texts of 100 tokens reach far past the
   8-key half window; 4 heads, intermediate 48, 128 positions, thetas 160000
   / 10000), every parameter re-initialised:
     tests/golden/encoder_models/modernbert_tiny/            ModernBertModel + sentence-transformers
                                                             mean pooling + Normalize (modernbert-embed's
                                                             modules), no biases
     tests/golden/encoder_models/modernbert_reranker_tiny/   ModernBertForSequenceClassification, 1 label,
                                                             classifier_pooling mean, every bias on
     tests/golden/encoder_models/modernbert_classifier_tiny/ the same with 3 labels, classifier_pooling cls,
                                                             the config in the older layout
                                                             (global_attn_every_n_layers, global_rope_theta,
                                                             local_rope_theta) checkpoints on the hub have
3. tests/golden/encoder/modernbert_golden.json:
     versions    exact library versions, this script
     tokenizer   {text, ids, offsets (bytes)}
     embeddings  modernbert_tiny: {text, ids, embedding}: the L2-normalised mean of the last hidden
                 state, asserted equal to SentenceTransformer(dir).encode
     logits      per classifier: {text, text_pair, ids, logits}

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/modernbert_golden.py
"""
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import ModernBertConfig, ModernBertForSequenceClassification, ModernBertModel

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, byte_offsets, classifier_cases, corpus, reinit_,
                                 save_model_dir, truncated_ids, versions, write_json, write_mean_pooling_modules)
from roberta_golden import OTHER_SCRIPTS

SCRIPT = "tools/golden/modernbert_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/modernbert_golden.json")
MAX_TOKENS = 100
SPECIALS = ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]"]

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "I don't think it's what we'll need, you're right",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 3),
    " ".join(["alpha beta gamma delta"] * 40),
]
PAIRS = QUERY_PASSAGE_PAIRS


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=1200, min_frequency=2, show_progress=False, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(13, OTHER_SCRIPTS), trainer)
    tok.decoder = decoders.ByteLevel()
    ids = {t: tok.token_to_id(t) for t in SPECIALS}
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tok.no_truncation()
    tok.no_padding()
    return tok, ids


def model_config(vocab_size, ids, legacy=False, **extra):
    common = dict(vocab_size=vocab_size, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                  num_attention_heads=4, max_position_embeddings=128, local_attention=16,
                  pad_token_id=ids["[PAD]"], bos_token_id=ids["[CLS]"], eos_token_id=ids["[SEP]"],
                  cls_token_id=ids["[CLS]"], sep_token_id=ids["[SEP]"], norm_eps=1e-5,
                  attn_implementation="eager")
    if legacy:
        return ModernBertConfig(global_attn_every_n_layers=3, global_rope_theta=160000.0, local_rope_theta=10000.0,
                                **common, **extra)
    return ModernBertConfig(**common, **extra)


def save_dir(name, model, tok, max_length, legacy=False):
    d = save_model_dir(name, model, tok, {
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]",
        "unk_token": "[UNK]", "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_length})
    if legacy:
        # The hub's older layout: the layer pattern and thetas as single keys.
        path = os.path.join(d, "config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        del config["layer_types"], config["rope_parameters"]
        config.update({"global_attn_every_n_layers": 3, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0})
        write_json(path, config)
        reloaded = ModernBertForSequenceClassification.from_pretrained(d, attn_implementation="eager")
        assert reloaded.config.layer_types == model.config.layer_types
        assert reloaded.config.rope_parameters == model.config.rope_parameters
    return d


def main():
    torch.manual_seed(0)
    tok, ids = build_tokenizer()
    vocab_size = tok.get_vocab_size()
    fixture = {
        "versions": versions(SCRIPT),
        "max_tokens": MAX_TOKENS,
        "tokenizer": [],
        "logits": {},
    }
    for text in TEXTS:
        enc = tok.encode(text)
        fixture["tokenizer"].append({"text": text, "ids": enc.ids, "offsets": byte_offsets(text, enc.offsets)})

    encoder = ModernBertModel(model_config(vocab_size, ids)).eval()
    reinit_(encoder, 20261217)
    d = save_dir("modernbert_tiny", encoder, tok, MAX_TOKENS)
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=True)
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(TEXTS, batch_size=4, convert_to_numpy=True)
    embeddings = []
    for text, st_emb in zip(TEXTS, st_embeddings):
        text_ids = truncated_ids(tok, text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([text_ids]),
                             attention_mask=torch.ones(1, len(text_ids))).last_hidden_state[0]
        mean = torch.nn.functional.normalize(hidden.mean(dim=0), dim=0)
        assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": text_ids, "embedding": [float(x) for x in mean]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    fixture["embeddings"] = embeddings

    biased = dict(attention_bias=True, mlp_bias=True, norm_bias=True, classifier_bias=True)
    reranker = ModernBertForSequenceClassification(
        model_config(vocab_size, ids, num_labels=1, classifier_pooling="mean", **biased)).eval()
    reinit_(reranker, 20261218)
    # The classifiers have no sentence-transformers config: their limit (as
    # TEI's) is max_position_embeddings, which their tokenizer_config says too.
    save_dir("modernbert_reranker_tiny", reranker, tok, reranker.config.max_position_embeddings)
    fixture["logits"]["modernbert_reranker_tiny"] = classifier_cases(reranker, tok, PAIRS, TEXTS)

    classifier = ModernBertForSequenceClassification(
        model_config(vocab_size, ids, legacy=True, num_labels=3, classifier_pooling="cls",
                     id2label={0: "negative", 1: "neutral", 2: "positive"},
                     label2id={"negative": 0, "neutral": 1, "positive": 2})).eval()
    reinit_(classifier, 20261219)
    save_dir("modernbert_classifier_tiny", classifier, tok, classifier.config.max_position_embeddings, legacy=True)
    fixture["logits"]["modernbert_classifier_tiny"] = classifier_cases(classifier, tok, PAIRS, TEXTS)
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
