#!/usr/bin/env python3
"""Writes the XLM-RoBERTa golden fixtures from the reference implementation.

XLM-RoBERTa is the architecture of the multilingual encoders (multilingual-e5,
bge-m3, paraphrase-multilingual-*) and rerankers (bge-reranker-base/large,
bge-reranker-v2-m3). Its tokenizer is a SentencePiece Unigram model whose
tokenizer.json carries sentencepiece's normalizer as a Precompiled charsmap.

1. A SentencePiece Unigram model is trained (sentencepiece, nmt_nfkc
   normalization rule: the rule XLM-R's own model was built with, so the
   precompiled charsmap is the real NFKC-based one) on a fixed corpus: words of
   MiniLM's vocabulary in seeded random order plus a few sentences in other
   scripts. transformers' XLMRobertaTokenizer turns it into a tokenizer.json
   (ids as XLM-R numbers them: <s> 0, <pad> 1, </s> 2, <unk> 3, pieces, <mask>).
2. Two tokenizer.json layouts are written, both read by `tokenizers` for the
   expected outputs:
     legacy  the layout of the checkpoints' own files (converted by older
             transformers): normalizer Sequence[Precompiled, Replace(" {2,}" -> " ")],
             pre_tokenizer Metaspace(prepend_scheme always, split)
     v5      what transformers 5 saves: normalizer Precompiled,
             pre_tokenizer Sequence[WhitespaceSplit, Metaspace]
3. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 64,
   max_position_embeddings 66 = 64 tokens + padding_idx 1 + 1, type_vocab 1):
     tests/golden/encoder_models/xlmr_tiny/           XLMRobertaModel + sentence-
                                                      transformers mean pooling (legacy tokenizer)
     tests/golden/encoder_models/xlmr_reranker_tiny/  XLMRobertaForSequenceClassification,
                                                      one label (v5 tokenizer)
4. tests/golden/encoder/xlmr_golden.json:
     versions   exact library versions, this script
     tokenizer  per layout: cases {text, ids, tokens, offsets (BYTE spans in the
                UTF-8 text; tokenizers' are character spans), decoded,
                decoded_skip_special}
     pairs      per layout: {text, text_pair, max_length, ids, type_ids}
                (longest_first truncation)
     prompted   xlmr_tiny's prompts (config_sentence_transformers.json, multilingual-e5's
                "query: " / "passage: "): SentenceTransformer.encode(prompt_name=...)
     left_truncation  one over-long text cut from the left at 64 tokens (tokenizers'
                direction="left"): {text, ids, embedding}
     embeddings xlmr_tiny: {text, ids, embedding}: the mean of XLMRobertaModel's last
                hidden state, asserted equal to SentenceTransformer(dir).encode for the
                texts without leading/trailing spaces (sentence-transformers strips them)
     score_ties a tokenizer.json (the legacy layout with a small vocabulary of runs
                of one character: x, xx, ▁x, -, --, !!, ha, ... with seeded 17-digit
                scores) and {text, ids} from tokenizers for runs of those characters:
                where segmentations tie, tokenizers' reading of the scores
                (serde_json, 1 ULP off for about one score in eight) picks the
                winner; the script asserts some of these ids differ from a
                Viterbi over correctly rounded scores, so the case can fail
     logits     xlmr_reranker_tiny: {text, text_pair, ids, logits} from
                XLMRobertaForSequenceClassification; CrossEncoder(dir).predict
                asserted equal to sigmoid(logit)

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/xlmr_golden.py
"""
import io
import json
import math
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentencepiece as spm
import torch
from sentence_transformers import CrossEncoder, SentenceTransformer
from sentencepiece import sentencepiece_model_pb2
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
from transformers import (XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaModel,
                          XLMRobertaTokenizer)

from encoder_golden_util import (REPO, corpus, pair_cases, reinit_, save_model_dir, tokenizer_cases, versions,
                                 write_json, write_mean_pooling_modules)

SCRIPT = "tools/golden/xlmr_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/xlmr_golden.json")
MAX_TOKENS = 64

OTHER_SCRIPTS = [
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El zorro marrón rápido salta sobre el perro perezoso.",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "Ο γρήγορος καφέ αλεπού πηδάει πάνω από το τεμπέλικο σκυλί.",
]

# Each exercises a part of the normalizer / pre-tokenizer / model.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello  world,   three spaces and\ttab\nnewline",
    "  leading and trailing spaces  ",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and the ﬁ ligature, ① and ㍻",
    "e\u0301 composed by a combining accent, Ａ\u0301 fullwidth with one, a\u0301\u0302 two",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "unknown scripts: ሰላም ሠላም 🙂 and ☃",
    "special tokens inside: a<mask>b, </s> and <s>",
    "fill the   <mask> here, <mask>",
    "a <pad> in the text moves the positions",
    "…ellipsis — dashes “quotes” ‘single’",
    "x",
    "",
]

PAIRS = [
    ("what is the capital of france?", "Paris is the capital and largest city of France.", MAX_TOKENS),
    ("¿Cuál es la capital de Francia?", "París es la capital de Francia.", MAX_TOKENS),
    ("short query", " ".join(["word"] * 80), MAX_TOKENS),
    (" ".join(["alpha"] * 40), " ".join(["beta"] * 40), MAX_TOKENS),
    (" ".join(["alpha"] * 11), " ".join(["beta"] * 9), 16),
    (" ".join(["gamma"] * 9), " ".join(["delta"] * 9), 17),
]

PROMPTS = {"query": "query: ", "passage": "passage: "}

EMBED_TEXTS = TEXTS[:13] + [" ".join(["the quick brown fox"] * 30)]


def train_spm():
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(7, OTHER_SCRIPTS)), model_writer=buf, vocab_size=1000, model_type="unigram",
        normalization_rule_name="nmt_nfkc", character_coverage=0.9995, num_threads=1,
        input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(buf.getvalue())
    return proto


def build_tokenizers(proto):
    # XLMRobertaConverter's vocabulary: fairseq's four specials, the pieces
    # after sentencepiece's own three, <mask> last.
    vocab = ([("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
             + [(p.piece, p.score) for p in proto.pieces[3:]] + [("<mask>", 0.0)])
    charsmap = proto.normalizer_spec.precompiled_charsmap
    hf = XLMRobertaTokenizer(vocab=vocab, _spm_precompiled_charsmap=charsmap)
    # The checkpoints' files give <mask> lstrip (it takes the space before it).
    described = json.loads(hf.backend_tokenizer.to_str())
    for added in described["added_tokens"]:
        if added["content"] == "<mask>":
            added["lstrip"] = True
    v5 = Tokenizer.from_str(json.dumps(described))
    legacy = Tokenizer.from_str(json.dumps(described))
    legacy.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                              normalizers.Replace(Regex(" {2,}"), " ")])
    legacy.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    for t in (v5, legacy):
        t.no_truncation()
        t.no_padding()
    return hf, {"legacy": legacy, "v5": v5}, len(vocab)


TIE_PIECES = ["x", "xx", "xxx", "▁x", "▁xx", "-", "--", "---", "▁-", "▁--", "!", "!!", "▁!", "h", "a", "ha",
              "▁ha", "▁h", "▁"]


def viterbi(vocab, text):
    """tokenizers' Unigram Viterbi over `text` (pre-tokenized), with the
    scores as Python reads them (correctly rounded)."""
    ids = {piece: i for i, (piece, _) in enumerate(vocab)}
    b = text.encode()
    best = [None] * (len(b) + 1)
    best[0] = (0.0, None, None)
    for start in range(len(b)):
        if best[start] is None:
            continue
        for end in range(start + 1, len(b) + 1):
            try:
                piece = b[start:end].decode()
            except UnicodeDecodeError:
                continue
            if piece in ids:
                candidate = best[start][0] + vocab[ids[piece]][1]
                if best[end] is None or candidate > best[end][0]:
                    best[end] = (candidate, start, ids[piece])
    out, end = [], len(b)
    while end > 0:
        out.append(best[end][2])
        end = best[end][1]
    return out[::-1]


def score_ties(described):
    rng = random.Random(11)  # a seed whose scores give ties that rounding breaks
    vocab = ([["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
             + [[piece, -rng.uniform(2.0, 16.0)] for piece in TIE_PIECES] + [["<mask>", 0.0]])
    tiny = json.loads(json.dumps(described))
    tiny["model"]["vocab"] = vocab
    tiny["model"]["unk_id"] = 3
    for added in tiny["added_tokens"]:
        if added["content"] == "<mask>":
            added["id"] = len(vocab) - 1
    tok = Tokenizer.from_str(json.dumps(tiny))
    texts = [c * n for c in ("x", "-", "!", "ha") for n in range(2, 120)]
    cases, flipped = [], 0
    for k, text in enumerate(texts):
        ids = tok.encode(text, add_special_tokens=False).ids
        differs = ids != viterbi(vocab, "▁" + text)
        flipped += differs
        # Every text whose ids the rounding decides, and a tenth of the rest.
        if differs or k % 10 == 0:
            cases.append({"text": text, "ids": ids, "differs_when_correctly_rounded": differs})
    # The case must be able to fail: some ties break the other way with
    # correctly rounded scores.
    assert flipped >= 10, flipped
    # The file as written here (Python writes the shortest digits), not
    # tok.to_str(): that would write the scores tokenizers has already read.
    return {"tokenizer": tiny, "cases": cases, "flipped_by_rounding": flipped}


def model_config(vocab_size, **extra):
    return XLMRobertaConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_TOKENS + 2, type_vocab_size=1,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, hidden_act="gelu", layer_norm_eps=1e-5,
        attn_implementation="eager", **extra)


def save_dir(name, model, tok, hf):
    config = {k: v for k, v in hf.init_kwargs.items() if k in (
        "bos_token", "eos_token", "sep_token", "cls_token", "unk_token", "pad_token", "mask_token")}
    config.update({"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": MAX_TOKENS})
    return save_model_dir(name, model, tok, config)


def main():
    torch.manual_seed(0)
    proto = train_spm()
    hf, layouts, vocab_size = build_tokenizers(proto)

    fixture = {
        "versions": versions(SCRIPT, sentencepiece=spm.__version__),
        "max_tokens": MAX_TOKENS,
        "tokenizer": {},
        "pairs": {},
    }
    for layout, tok in layouts.items():
        fixture["tokenizer"][layout] = tokenizer_cases(tok, TEXTS)
        fixture["pairs"][layout] = pair_cases(tok, PAIRS)
    # transformers' tokenizer (v5 layout) agrees with tokenizers where no
    # special token is written in the text (see the embeddings below).
    for case in fixture["tokenizer"]["v5"]:
        if "<" not in case["text"]:
            assert hf(case["text"])["input_ids"] == case["ids"], case["text"]

    # The embedding model (legacy tokenizer, as the checkpoints' own files).
    encoder = XLMRobertaModel(model_config(vocab_size), add_pooling_layer=False).eval()
    reinit_(encoder, 20261206)
    d = save_dir("xlmr_tiny", encoder, layouts["legacy"], hf)
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=False)
    # multilingual-e5's convention, as sentence-transformers prompts.
    write_json(os.path.join(d, "config_sentence_transformers.json"),
               {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"})
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(EMBED_TEXTS, batch_size=4, convert_to_numpy=True)
    tok = layouts["legacy"]
    embeddings = []
    for text, st_emb in zip(EMBED_TEXTS, st_embeddings):
        tok.enable_truncation(MAX_TOKENS)
        ids = tok.encode(text).ids
        tok.no_truncation()
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = hidden.mean(dim=0)
        # sentence-transformers strips the text first, and transformers 5's
        # XLMRobertaTokenizer strips the spaces around every special token;
        # tokenizer.json (TEI, vLLM, this service) keeps both, which Metaspace
        # turns into tokens. Those texts are checked against tokenizers only.
        if text == text.strip() and "<" not in text:
            assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    fixture["embeddings"] = embeddings
    # Prompts: sentence-transformers' encode(prompt_name=...) puts the prompt
    # before the text.
    fixture["prompted"] = []
    for name in sorted(PROMPTS):
        text = "Der schnelle braune Fuchs springt über den faulen Hund."
        emb = st.encode([text], prompt_name=name, convert_to_numpy=True)[0]
        fixture["prompted"].append({"prompt_name": name, "prompt": PROMPTS[name], "text": text,
                                    "embedding": [float(x) for x in emb]})
    # Left truncation (TEI's truncation_direction "left"): the last tokens kept.
    long_text = EMBED_TEXTS[-1] + " and the end of the text"
    tok.enable_truncation(MAX_TOKENS, direction="left")
    ids = tok.encode(long_text).ids
    tok.no_truncation()
    with torch.no_grad():
        hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
    fixture["left_truncation"] = {"text": long_text, "ids": ids,
                                  "embedding": [float(x) for x in hidden.mean(dim=0)]}

    # The reranker (transformers 5's tokenizer layout).
    reranker = XLMRobertaForSequenceClassification(model_config(vocab_size, num_labels=1)).eval()
    reinit_(reranker, 20261207)
    d = save_dir("xlmr_reranker_tiny", reranker, layouts["v5"], hf)
    tok = layouts["v5"]
    logits = []
    for text, pair, max_length in PAIRS[:4] + [(t, None, MAX_TOKENS) for t in TEXTS[:4]]:
        tok.enable_truncation(max_length, strategy="longest_first")
        ids = tok.encode(text, pair).ids if pair is not None else tok.encode(text).ids
        tok.no_truncation()
        with torch.no_grad():
            out = reranker(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).logits[0]
        logits.append({"text": text, "text_pair": pair, "ids": ids, "logits": [float(x) for x in out]})
    ce = CrossEncoder(d, device="cpu", max_length=MAX_TOKENS)
    pairs = [(c["text"], c["text_pair"]) for c in logits if c["text_pair"] is not None]
    for score, case in zip(ce.predict(pairs), logits):
        assert abs(float(score) - 1 / (1 + math.exp(-case["logits"][0]))) < 1e-5, case["text"]
    fixture["logits"] = logits
    fixture["score_ties"] = score_ties(json.loads(layouts["legacy"].to_str()))
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
