#!/usr/bin/env python3
"""Tokenizer goldens for the decoder tokenizers (issue 5).

For each tiny byte-level BPE tokenizer in tests/golden/decoder_models/<name>/
tokenizer.json, records HF `tokenizers` ids for a varied text set (spaces,
multiple spaces, newlines, tabs, digits, punctuation, unicode, emoji, CJK,
special tokens in text), with and without special tokens, and the decoded
text. For stories260K (SentencePiece-style, llama2.c tok512.bin) there is no
SentencePiece package in the venv, so the ids come from a small independent
re-implementation of llama2.c run.c's encode() over tok512.bin (not the GGUF),
checked first against the README's reference ids.

HF tokenizer.json in SentencePiece style (Llama-2 / Mistral / TinyLlama kind:
BPE with byte_fallback, "▁" for spaces): tok512.model (SentencePiece) is
converted with transformers' converter (LlamaTokenizer.from_pretrained on a
folder holding it as tokenizer.model, which runs SentencePieceExtractor; needs
the sentencepiece package), given the BOS post-processor the published Llama-2
files have and one non-special added token, and written in two forms:
  tok512_metaspace_tokenizer.json  as transformers 5 writes it: Metaspace
      pre-tokenizer (prepend_scheme "first", split false), no normalizer;
  tok512_legacy_tokenizer.json     as Llama-2 / TinyLlama publish it:
      normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer.
  tok512_phi3_tokenizer.json       the legacy form with Phi-3's added tokens as
      Phi-3-mini's tokenizer.json has them: <|endoftext|> special, and
      <|assistant|>, <|system|>, <|end|>, <|user|> special with rstrip (a
      token takes the whitespace after it: "<|user|>\nHi" has no "\n"
      token), plus a test-only <|lpad|> with lstrip.
All decode with Replace / ByteFallback / Fuse / Strip. Golden ids come from
HF `tokenizers` on these files (tok512_metaspace.json, tok512_legacy.json).
They differ from SentencePiece's own ids where tok512.model asks to remove
extra whitespace, which HF's conversion does not do; the files are the
reference, since we read tokenizer.json.

Gemma's layout (gemma3_tiny's tokenizer.json, decoder_make_models.py):
Replace(" ", "▁") normalizer, Split(" ", MergedWithPrevious) pre-tokenizer,
BPE with byte_fallback, <bos> template, Replace / ByteFallback / Fuse
decoder without Strip: ids from HF `tokenizers` on that file.

Byte-level BPE with lstrip / rstrip added tokens: llama_strip_tokenizer.json,
llama_tiny's tokenizer.json with special <|eot_id|> (rstrip) and
<|start_header_id|> (lstrip) added; ids from HF `tokenizers` on it.

GPT-4o's layout (Phi-4-mini's tokenizer.json): Split(o200k regex,
Isolated) then ByteLevel without its own regex: o200k_tokenizer.json,
trained like the model tokenizers; ids from HF `tokenizers` on it.

Writes tests/golden/decoder_tokenizers/<name>.json and versions.json.
Run on the host: .cache/venv/bin/python tools/golden/decoder_tokenizer_golden.py
"""
import json
import os
import pathlib
import shutil
import struct
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import tokenizers
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
OUT = ROOT / "tests" / "golden" / "decoder_tokenizers"
SHARED = ROOT.parent / "shared" / "models" / "stories260K"

TEXTS = [
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    " leading space",
    "trailing space ",
    "multiple   spaces   between",
    "     five leading",
    "line one\nline two\n\nline four\n",
    "tabs\tand\r\nwindows newlines\r\n",
    "  \n  mixed \t whitespace \n\n ",
    "digits 1 12 123 1234 12345 3.14159 1,000,000",
    "I'm you're they've we'll it'd HE'S SHE'LL don't",
    "punctuation!!! ... ?!? (parens) [brackets] {braces} \"quotes\"",
    "Ünïcödé façade naïve café résumé — “quotes”",
    "Ελληνικά русский текст",
    "日本語のテキストと中文文本。",
    "한국어 텍스트",
    "Emoji: 😀🎉👍🏽 and ❤️ hearts",
    "def main():\n    return x + y  # code",
    "",
    " ",
    "a",
    "The quick brown fox jumps over the lazy dog. THE END",
]
SPECIAL_TEXTS = {
    "llama_tiny": ["<|begin_of_text|>Hello<|end_of_text|>", "a <|custom|> b"],
    "qwen2_tiny": ["<|im_start|>user\nHi<|im_end|>", "x<|endoftext|>y", "a <|custom|> b"],
    "gpt2_tiny": ["Hello<|endoftext|>World", "a <|custom|> b"],
    "smollm": ["<|im_start|>x 2024<|endoftext|>"],
}
# Added / special tokens and leading spaces, where the two "▁" styles differ.
SP_SPECIAL_TEXTS = ["<s>Hello</s> x", "a <s> b", "<s> spaced", "x <|custom|>y z", "<|custom|>", " Hello",
                    "  two", "unknown \u00ff\u0101 bytes \U0001F600", "</s>"]
# Phi-3's chat layout: rstrip tokens followed by newlines, spaces, a tab,
# an ideographic space (Unicode whitespace), and an lstrip token.
PHI3_SPECIAL_TEXTS = ["<|user|>\nHello there<|end|>\n<|assistant|>\n",
                      "<|system|>  You are  kind<|end|>\n\n<|user|>\tHi<|end|>\n<|assistant|>",
                      "text<|end|>   ", "<|user|>", "<|user|>\u3000wide space", "x <|lpad|> y", "a \n<|lpad|>\nb",
                      "<|endoftext|> after", "<|end|><|end|>\n<|user|>\n\n"]
PHI3_ADDED = [("<|endoftext|>", False, False), ("<|assistant|>", False, True), ("<|system|>", False, True),
              ("<|end|>", False, True), ("<|user|>", False, True), ("<|lpad|>", True, False)]
SP_SPECIAL_TEXTS_BY_NAME = {"tok512_metaspace": SP_SPECIAL_TEXTS, "tok512_legacy": SP_SPECIAL_TEXTS,
                            "tok512_phi3": SP_SPECIAL_TEXTS + PHI3_SPECIAL_TEXTS}
# Gemma's chat markers and its BOS inside text.
GEMMA_SPECIAL_TEXTS = ["<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
                       "<bos>Hello <eos> world", " leading space", "trailing space ", "  two leading"]


STRIP_TEXTS = ["Hi<|eot_id|>\n\nnext", "a <|start_header_id|>user", "x  \t<|start_header_id|>\n<|eot_id|> \ty",
               "<|eot_id|>", "<|eot_id|>   ", "   <|start_header_id|>"]


def llama_strip_tokenizer():
    """llama_tiny's byte-level tokenizer with an rstrip and an lstrip special token."""
    from tokenizers import AddedToken
    tok = Tokenizer.from_file(str(MODELS / "llama_tiny" / "tokenizer.json"))
    tok.add_special_tokens([AddedToken("<|eot_id|>", special=True, normalized=False, rstrip=True),
                            AddedToken("<|start_header_id|>", special=True, normalized=False, lstrip=True)])
    return tok


def train_byte_level(pre_tokenizer, specials):
    """A byte-level BPE after `pre_tokenizer`, trained like the model
    tokenizers in decoder_make_models.py."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from decoder_make_models import CORPUS
    from tokenizers import models, pre_tokenizers, decoders, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, min_frequency=1, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([CORPUS] * 4, trainer=trainer)
    return tok


def train_o200k_style():
    """A byte-level BPE with GPT-4o's pre-tokenizer, as Phi-4-mini's tokenizer.json has it."""
    from o200k_pretokenizer_golden import O200K
    from tokenizers import Regex, pre_tokenizers
    return train_byte_level(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), ["<|endoftext|>", "<|user|>"])


def train_smollm_style():
    """A SmolLM-style byte-level BPE (Digits(individual) + ByteLevel regex)."""
    from tokenizers import pre_tokenizers
    return train_byte_level(pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]), ["<|endoftext|>", "<|im_start|>"])


def sentencepiece_style_tokenizers():
    """tok512.model -> tokenizer.json with transformers' converter (see the module doc)."""
    from tokenizers import AddedToken, normalizers, processors
    from transformers import LlamaTokenizer
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(SHARED / "tok512.model", pathlib.Path(d) / "tokenizer.model")
        converted = LlamaTokenizer.from_pretrained(d)  # SentencePieceExtractor: vocab + score-ranked merges
        tok = Tokenizer.from_str(converted.backend_tokenizer.to_str())
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    tok.add_tokens([AddedToken("<|custom|>", special=False, normalized=True)])
    metaspace = json.loads(tok.to_str())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    legacy = json.loads(tok.to_str())
    legacy["pre_tokenizer"] = None
    phi3 = Tokenizer.from_str(json.dumps(legacy))
    phi3.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=lstrip, rstrip=rstrip)
                             for t, lstrip, rstrip in PHI3_ADDED])
    return {"tok512_metaspace": metaspace, "tok512_legacy": legacy, "tok512_phi3": json.loads(phi3.to_str())}


def hf_golden(name, path=None):
    tok = Tokenizer.from_file(str(path or (MODELS / name / "tokenizer.json")))
    cases = []
    for text in TEXTS + SPECIAL_TEXTS.get(name, []) + SP_SPECIAL_TEXTS_BY_NAME.get(name, []):
        plain = tok.encode(text, add_special_tokens=False).ids
        with_special = tok.encode(text, add_special_tokens=True).ids
        cases.append({"text": text, "ids": plain, "ids_with_special": with_special,
                      "decoded": tok.decode(plain, skip_special_tokens=True)})
    return {"tokenizer": str(path.relative_to(ROOT / "tests" / "golden")) if path else f"decoder_models/{name}/tokenizer.json", "reference": "HF tokenizers", "cases": cases}


# --- llama2.c run.c encode(), re-implemented from its source description.
def load_tok512(path):
    data = path.read_bytes()
    (max_len,) = struct.unpack_from("<i", data, 0)
    off = 4
    vocab, scores = [], []
    for _ in range(512):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        vocab.append(data[off:off + n])
        off += n
        scores.append(score)
    return vocab, scores


def runc_encode(text, vocab, scores, bos):
    lookup = {}
    for i, v in enumerate(vocab):
        lookup.setdefault(v, i)
    tokens = [1] if bos else []
    if text:
        tokens.append(lookup[b" "])  # dummy prefix
    raw = text.encode("utf-8")
    i = 0
    while i < len(raw):
        # One UTF-8 code point (run.c groups continuation bytes, at most 4).
        j = i + 1
        while j < len(raw) and (raw[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        cp = raw[i:j]
        if cp in lookup:
            tokens.append(lookup[cp])
        else:
            tokens.extend(b + 3 for b in cp)
        i = j
    while True:
        best, best_id, best_idx = -1e10, -1, -1
        for k in range(len(tokens) - 1):
            merged = vocab[tokens[k]] + vocab[tokens[k + 1]]
            if merged in lookup and scores[lookup[merged]] > best:
                best, best_id, best_idx = scores[lookup[merged]], lookup[merged], k
        if best_idx == -1:
            break
        tokens[best_idx:best_idx + 2] = [best_id]
    return tokens


def stories_golden():
    vocab, scores = load_tok512(SHARED / "tok512.bin")
    ref = json.loads((SHARED / "expected" / "greedy_reference.json").read_text())
    assert runc_encode("Once upon a time", vocab, scores, True) == [1, 403, 407, 261, 378]
    assert runc_encode("The cat", vocab, scores, True) == [1, 291, 280, 294]
    cases = []
    for text in TEXTS:
        cases.append({"text": text, "ids_with_bos": runc_encode(text, vocab, scores, True)})
    return {"tokenizer": "shared/models/stories260K (tok512.bin)",
            "reference": "independent Python re-implementation of llama2.c run.c encode() on tok512.bin; "
                         "checked against the README ids for 'Once upon a time' and 'The cat'",
            "readme_reference_keys": sorted(ref.keys()) if isinstance(ref, dict) else None,
            "cases": cases}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ("llama_tiny", "qwen2_tiny", "gpt2_tiny"):
        (OUT / f"{name}.json").write_text(json.dumps(hf_golden(name), ensure_ascii=False, indent=1) + "\n")
    # Gemma's layout (decoder_make_models.py gemma3_tiny): Replace(" ", "▁")
    # normalizer, Split(" ") pre-tokenizer, BPE with byte_fallback, no prefix space.
    SP_SPECIAL_TEXTS_BY_NAME["gemma3_tiny"] = GEMMA_SPECIAL_TEXTS
    (OUT / "gemma3_tiny.json").write_text(json.dumps(hf_golden("gemma3_tiny"), ensure_ascii=False, indent=1) + "\n")
    smol = OUT / "smollm_tokenizer.json"
    train_smollm_style().save(str(smol))
    (OUT / "smollm.json").write_text(json.dumps(hf_golden("smollm", smol), ensure_ascii=False, indent=1) + "\n")
    o200k = OUT / "o200k_tokenizer.json"
    train_o200k_style().save(str(o200k))
    SPECIAL_TEXTS["o200k"] = ["<|user|>HelloWorld<|endoftext|>", "parseHTTPResponse DON'T e\u0301TAT ǅa 日A",
                              "path/to/x.\n/usr 12345"]
    (OUT / "o200k.json").write_text(json.dumps(hf_golden("o200k", o200k), ensure_ascii=False, indent=1) + "\n")
    strip = OUT / "llama_strip_tokenizer.json"
    llama_strip_tokenizer().save(str(strip))
    SPECIAL_TEXTS["llama_strip"] = STRIP_TEXTS
    (OUT / "llama_strip.json").write_text(json.dumps(hf_golden("llama_strip", strip), ensure_ascii=False, indent=1) + "\n")
    (OUT / "stories260K.json").write_text(json.dumps(stories_golden(), ensure_ascii=False, indent=1) + "\n")
    for name, doc in sentencepiece_style_tokenizers().items():
        path = OUT / f"{name}_tokenizer.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
        (OUT / f"{name}.json").write_text(json.dumps(hf_golden(name, path), ensure_ascii=False, indent=1) + "\n")
    import sentencepiece
    import transformers
    (OUT / "versions.json").write_text(json.dumps({"python": sys.version.split()[0],
                                                   "tokenizers": tokenizers.__version__,
                                                   "transformers": transformers.__version__,
                                                   "sentencepiece": sentencepiece.__version__}, indent=2) + "\n")


if __name__ == "__main__":
    main()
