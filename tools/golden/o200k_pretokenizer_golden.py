#!/usr/bin/env python3
"""GPT-4o's pre-tokenizer regex (tiktoken's o200k_base, as Phi-4-mini's
tokenizer.json writes it in its Split step) run by HF tokenizers, the
reference for attnserve's hand-written matcher (engine/tokenizers/
pretokenizer.cc, PretokenizerKind::kO200k).

Writes tests/golden/decoder_tokenizers/o200k_splits.json: the regex, and
for each text the pieces tokenizers' Split(Regex(O200K), "isolated") cuts it
into. Texts: hand-written cases (CamelCase, all-caps words before lower
ones, contractions in either case, marks, modifier / other / title-case
letters, numbers of every kind, paths and newlines, Unicode spaces) and
1,500 random strings drawn with a fixed seed from a pool of characters of
every class the regex tells apart.

Usage: .cache/venv/bin/python tools/golden/o200k_pretokenizer_golden.py
"""
import json
import pathlib
import random
import sys

import tokenizers
from tokenizers import Regex, pre_tokenizers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "decoder_tokenizers" / "o200k_splits.json"
O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
HAND = [
    "Hello World", "HelloWorld CamelCase parseHTTPResponse", "HTTPServer ALLCAPS lower UPPERlower",
    "I'm you're they've we'll it'd HE'S SHE'LL DON'T don't", "'s 'S alone", "rock'n'roll o'clock",
    "naïve café résumé ÉCOLE Straße", "e\u0301 combining E\u0301TAT a\u0308b", "\u0301start with a mark",
    "ʰmodifier ǅtitle ǈj 日本語テキスト 中文 한국어 العربية", "日A 本Bc ABC日 ǅǅǅ", "Ελληνικά ΕΛΛΗΝΙΚΑ русский ТЕКСТ",
    "123 4567 1234567 3.14159 1,000,000 ½ ⅓ Ⅻ ①②③ ٣٤٥", "path/to/file.txt\n/usr/bin/ a/b\n\n/",
    "line one\nline two\r\n\r\nthree\n", "  \n  mixed \t whitespace \n\n ", "tabs\tand\u3000ideographic\u00a0nbsp",
    "emoji 😀🎉👍🏽 and ❤️ hearts", "def main():\n    return x + y  # code", "!!! ... ?!? (parens) [x] {y} \"q\"",
    " leading", "trailing ", "   ", "", "a", "A", "'", "''s", "x'S'T", "ǅa", "Ǆǅǆ",
    "end.\n/usr/bin", "x!\r\n/\n/y", "a) /\n/ b", "#\n\n//c",
]
POOL = (list("abcxyzABCXYZ0123  \n\r\t'/.,-!?") + ["'s", "'LL", "'re", "é", "É", "\u0301", "\u0308", "ʰ", "ǅ",
        "日", "本", "ا", "Ⅻ", "½", "٣", "\u3000", "\u00a0", "😀", "ß", "ẞ", "ı", "Σ", "ς"])


def main():
    split = pre_tokenizers.Split(Regex(O200K), behavior="isolated", invert=False)
    rng = random.Random(20261207)
    texts = HAND + ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 20))) for _ in range(1500)]
    cases = [{"text": t, "pieces": [p for p, _ in split.pre_tokenize_str(t)]} for t in texts]
    for c in cases:
        assert "".join(c["pieces"]) == c["text"], c
    doc = {"generator": "tools/golden/o200k_pretokenizer_golden.py", "regex": O200K,
           "versions": {"python": sys.version.split()[0], "tokenizers": tokenizers.__version__}, "cases": cases}
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n")
    print(OUT, len(cases), "cases")


if __name__ == "__main__":
    main()
