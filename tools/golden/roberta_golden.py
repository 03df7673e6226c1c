#!/usr/bin/env python3
"""Writes the RoBERTa golden fixtures from the reference implementation.

RoBERTa is the architecture of all-distilroberta-v1 / all-roberta-large-v1
(sentence-transformers), the twitter-roberta sentiment and emotion classifiers
and many fine-tuned rerankers. Its tokenizer is GPT-2's byte-level BPE with
RoBERTa's post-processor (<s> A </s></s> B </s>, offsets trimmed of spaces).

1. A byte-level BPE is trained (tokenizers' BpeTrainer, the 256 byte stand-ins
   as initial alphabet so every byte has a token, as in RoBERTa's vocabulary)
   on a fixed corpus: words of MiniLM's vocabulary in seeded random order plus
   a few sentences in other scripts. transformers' RobertaTokenizer turns it
   into a tokenizer.json numbered as RoBERTa does (<s> 0, <pad> 1, </s> 2,
   <unk> 3, pieces, <mask> last, lstrip as in roberta-base's file).
2. Three tokenizer.json layouts, each read by `tokenizers` for the expected
   outputs:
     roberta   RoBERTa's own: ByteLevel(add_prefix_space false), RobertaProcessing
               (trim_offsets true, add_prefix_space false)
     prefix    ByteLevel(add_prefix_space true) and RobertaProcessing(add_prefix_space
               true): a space before every stretch of text between added tokens
     template  RoBERTa's pre-tokenizer with a TemplateProcessing post-processor (no
               offset trimming)
3. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 64,
   max_position_embeddings 66 = 64 tokens + padding_idx 1 + 1, type_vocab 1),
   both with the roberta layout:
     tests/golden/encoder_models/roberta_tiny/            RobertaModel + sentence-
                                                          transformers mean pooling + Normalize
                                                          (all-distilroberta-v1's modules)
     tests/golden/encoder_models/roberta_classifier_tiny/ RobertaForSequenceClassification,
                                                          3 labels (negative, neutral, positive)
4. tests/golden/encoder/roberta_golden.json:
     versions    exact library versions, this script
     layouts     per layout: its pre_tokenizer and post_processor objects as
                 tokenizers writes them (the rest is roberta_tiny/tokenizer.json)
     tokenizer   per layout: cases {text, ids, tokens, offsets (BYTE spans in the
                 UTF-8 text; tokenizers' are character spans), decoded,
                 decoded_skip_special}
     pairs       per layout: {text, text_pair, max_length, ids, type_ids}
                 (longest_first truncation)
     embeddings  roberta_tiny: {text, ids, embedding}: the L2-normalised mean of
                 RobertaModel's last hidden state, asserted equal to
                 SentenceTransformer(dir).encode where sentence-transformers reads
                 the same ids (texts without leading/trailing spaces)
     logits      roberta_classifier_tiny: {text, text_pair, ids, logits} from
                 RobertaForSequenceClassification, and labels (id2label in id order)

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/roberta_golden.py
"""
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import RobertaConfig, RobertaForSequenceClassification, RobertaModel, RobertaTokenizer

from encoder_golden_util import (REPO, corpus, pair_cases, reinit_, save_model_dir, tokenizer_cases, truncated_ids,
                                 versions, write_json, write_mean_pooling_modules)

SCRIPT = "tools/golden/roberta_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/roberta_golden.json")
MAX_TOKENS = 64
LABELS = ["negative", "neutral", "positive"]

OTHER_SCRIPTS = [
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El zorro marrón rápido salta sobre el perro perezoso.",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "I don't think it's what we'll need, you're right: they've 123 apples and 4567 pears.",
]

# Each exercises a part of the pre-tokenizer, the merges or the offsets.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello  world,   three spaces and\ttab\nnewline",
    "  leading and trailing spaces  ",
    " one leading space",
    "I don't think it's what we'll need, you're right",
    "numbers 123 4567 and 3.14159",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "emoji 🙂 and ☃ split across tokens: naïve café",
    "special tokens inside: a<mask>b, </s> and <s>",
    "fill the   <mask> here, <mask>",
    "<mask>starts with a special token",
    "a <pad> in the text moves the positions",
    "…ellipsis — dashes “quotes” ‘single’",
    "x",
    "",
]

PAIRS = [
    ("what is the capital of france?", "Paris is the capital and largest city of France.", MAX_TOKENS),
    ("short query", " ".join(["word"] * 80), MAX_TOKENS),
    (" ".join(["alpha"] * 40), " ".join(["beta"] * 40), MAX_TOKENS),
    (" ".join(["alpha"] * 11), " ".join(["beta"] * 9), 16),
    (" ".join(["gamma"] * 9), " ".join(["delta"] * 9), 17),
]

EMBED_TEXTS = TEXTS[:15] + [" ".join(["the quick brown fox"] * 30)]

CLASSIFY = [
    ("I love this, it is wonderful!", None),
    ("This is the worst day of my life.", None),
    ("The meeting is at three o'clock.", None),
    ("  spaces around and a <mask> inside  ", None),
    ("what is the capital of france?", "Paris is the capital and largest city of France."),
    (" ".join(["long"] * 90), None),
]


def train_bpe():
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=1200, min_frequency=2, show_progress=False,
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(11, OTHER_SCRIPTS), trainer)
    described = json.loads(bpe.to_str())
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in described["model"]["merges"]]
    return bpe.get_vocab(), merges


def build_tokenizers(vocab, merges):
    hf = RobertaTokenizer(vocab=vocab, merges=merges)
    described = json.loads(hf.backend_tokenizer.to_str())
    # roberta-base's file gives <mask> lstrip (it takes the space before it).
    for added in described["added_tokens"]:
        if added["content"] == "<mask>":
            added["lstrip"] = True
    roberta = Tokenizer.from_str(json.dumps(described))
    prefix = Tokenizer.from_str(json.dumps(described))
    prefix.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    prefix.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                         add_prefix_space=True)
    template = Tokenizer.from_str(json.dumps(described))
    template.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    layouts = {"roberta": roberta, "prefix": prefix, "template": template}
    for t in layouts.values():
        t.no_truncation()
        t.no_padding()
    return hf, layouts, roberta.get_vocab_size()


def model_config(vocab_size, **extra):
    return RobertaConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_TOKENS + 2, type_vocab_size=1,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, hidden_act="gelu", layer_norm_eps=1e-5,
        attn_implementation="eager", **extra)


def save_dir(name, model, tok):
    return save_model_dir(name, model, tok, {
        "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>",
        "pad_token": "<pad>", "mask_token": "<mask>", "tokenizer_class": "RobertaTokenizer",
        "model_max_length": MAX_TOKENS})


def main():
    torch.manual_seed(0)
    vocab, merges = train_bpe()
    hf, layouts, vocab_size = build_tokenizers(vocab, merges)

    fixture = {
        "versions": versions(SCRIPT),
        "max_tokens": MAX_TOKENS,
        "tokenizer": {},
        "pairs": {},
    }
    fixture["layouts"] = {}
    for layout, tok in layouts.items():
        described = json.loads(tok.to_str())
        fixture["layouts"][layout] = {k: described[k] for k in ("pre_tokenizer", "post_processor")}
        fixture["tokenizer"][layout] = tokenizer_cases(tok, TEXTS)
        fixture["pairs"][layout] = pair_cases(tok, PAIRS)
    # transformers' own tokenizer agrees with tokenizers on the roberta layout.
    for case in fixture["tokenizer"]["roberta"]:
        if "<mask>" not in case["text"]:
            assert hf(case["text"])["input_ids"] == case["ids"], case["text"]

    # The embedding model: all-distilroberta-v1's modules (mean pooling, Normalize).
    encoder = RobertaModel(model_config(vocab_size), add_pooling_layer=False).eval()
    reinit_(encoder, 20261208)
    d = save_dir("roberta_tiny", encoder, layouts["roberta"])
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=True)
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(EMBED_TEXTS, batch_size=4, convert_to_numpy=True)
    tok = layouts["roberta"]
    embeddings = []
    for text, st_emb in zip(EMBED_TEXTS, st_embeddings):
        ids = truncated_ids(tok, text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = torch.nn.functional.normalize(hidden.mean(dim=0), dim=0)
        # sentence-transformers strips the text first; tokenizer.json (TEI,
        # vLLM, this service) keeps the spaces, which byte-level BPE turns into
        # tokens. Those texts are checked against tokenizers only.
        if text == text.strip():
            assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    fixture["embeddings"] = embeddings

    # The classifier (twitter-roberta-base-sentiment's three labels).
    classifier = RobertaForSequenceClassification(model_config(
        vocab_size, num_labels=3, id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)})).eval()
    reinit_(classifier, 20261209)
    save_dir("roberta_classifier_tiny", classifier, layouts["roberta"])
    logits = []
    for text, pair in CLASSIFY:
        ids = truncated_ids(tok, text, pair, MAX_TOKENS)
        with torch.no_grad():
            out = classifier(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).logits[0]
        logits.append({"text": text, "text_pair": pair, "ids": ids, "logits": [float(x) for x in out]})
    fixture["logits"] = logits
    fixture["labels"] = LABELS
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
