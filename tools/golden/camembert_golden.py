#!/usr/bin/env python3
"""Writes the CamemBERT golden fixtures from the reference implementation.

CamemBERT (camembert-base, sentence-camembert, the French cross-encoders) is
RoBERTa's model (`model_type` "camembert") over a SentencePiece Unigram
vocabulary laid out by fairseq's convention: "<s>NOTUSED" <pad>
"</s>NOTUSED" <unk> "<unk>NOTUSED" first, then the SentencePiece pieces from
its second on (so <s> and </s> are ids 5 and 6, where XLM-R has 0 and 2),
<mask> last.

1. The SentencePiece Unigram model of xlmr_golden.py (trained here the same
   way), as two tokenizer.json layouts:
     hub  transformers' CamembertConverter (the checkpoints' own files):
          Precompiled + Replace(" {2,}", " ") normalizer, Metaspace
          pre-tokenizer, <mask> lstrip
     v5   transformers 5's CamembertTokenizer: Precompiled normalizer,
          WhitespaceSplit + Metaspace pre-tokenizer
2. A tiny random-weight CamembertModel (hidden 32, 2 layers, 4 heads,
   intermediate 64, 66 positions, padding id 1), every parameter
   re-initialised, with sentence-transformers mean pooling:
     tests/golden/encoder_models/camembert_tiny/  (hub layout)
3. tests/golden/encoder/camembert_golden.json:
     versions    exact library versions, this script
     tokenizer   per layout: {text, ids, tokens, offsets (bytes), decoded, decoded_skip_special}
     pairs       per layout: {text, text_pair, max_length, ids, type_ids}
     v5_tokenizer_json  the v5 layout's tokenizer.json
     embeddings  {text, ids, embedding}: the mean of CamembertModel's last hidden state,
                 asserted equal to SentenceTransformer(dir).encode for stripped texts

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/camembert_golden.py
"""
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentencepiece as spm
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import CamembertConfig, CamembertModel, CamembertTokenizer

from encoder_golden_util import (REPO, pair_cases, reinit_, save_model_dir, tokenizer_cases, versions, write_json,
                                 write_mean_pooling_modules)
from xlmr_golden import PAIRS, train_spm

SCRIPT = "tools/golden/camembert_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/camembert_golden.json")
MAX_TOKENS = 64
SPECIALS = [("<s>NOTUSED", 0.0), ("<pad>", 0.0), ("</s>NOTUSED", 0.0), ("<unk>", 0.0), ("<unk>NOTUSED", -100.0)]

TEXTS = [
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "J'aime beaucoup le café au lait, n'est-ce pas ?",
    "Hello  world,   three spaces and\ttab\nnewline",
    "  leading and trailing spaces  ",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ and the ﬁ ligature",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "special tokens inside: a<mask>b, </s> and <s>",
    "fill the   <mask> here",
    "unknown scripts: ሰላም 🙂",
    "x",
    "",
]
EMBED_TEXTS = [t for t in TEXTS if t and t == t.strip() and "<" not in t] + [" ".join(["le chat noir"] * 30)]


def build_tokenizers(proto):
    vocab = SPECIALS + [(p.piece, p.score) for p in proto.pieces[1:]] + [("<mask>", 0.0)]
    ids = {piece: i for i, (piece, _) in enumerate(vocab)}
    charsmap = proto.normalizer_spec.precompiled_charsmap
    hf = CamembertTokenizer(vocab=vocab, _spm_precompiled_charsmap=charsmap)
    v5 = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    # CamembertConverter's file, as camembert-base ships it.
    hub = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    hub.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    hub.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    hub.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    hub.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])])
    hub.add_special_tokens([piece for piece, _ in SPECIALS] + ["<s>", "</s>"]
                           + [AddedToken("<mask>", lstrip=True, special=True)])
    assert (ids["<s>"], ids["</s>"]) == (5, 6)
    for t in (v5, hub):
        t.no_truncation()
        t.no_padding()
    return hf, {"hub": hub, "v5": v5}, len(vocab)


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
    # The v5 file is in no model folder: the test reads it from here.
    fixture["v5_tokenizer_json"] = json.loads(layouts["v5"].to_str())
    # transformers' tokenizer agrees with both files on plain texts.
    for layout in layouts:
        for case in fixture["tokenizer"][layout]:
            if "<" not in case["text"] and case["text"] == case["text"].strip() and "  " not in case["text"]:
                assert hf(case["text"])["input_ids"] == case["ids"], (layout, case["text"])

    config = CamembertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=MAX_TOKENS + 2, type_vocab_size=1,
                             pad_token_id=1, bos_token_id=5, eos_token_id=6, hidden_act="gelu",
                             layer_norm_eps=1e-5, attn_implementation="eager")
    encoder = CamembertModel(config, add_pooling_layer=False).eval()
    reinit_(encoder, 20261216)
    tokenizer_config = {k: str(v) for k, v in hf.init_kwargs.items() if k in (
        "bos_token", "eos_token", "sep_token", "cls_token", "unk_token", "pad_token", "mask_token")}
    tokenizer_config.update({"tokenizer_class": "CamembertTokenizer", "model_max_length": MAX_TOKENS})
    d = save_model_dir("camembert_tiny", encoder, layouts["hub"], tokenizer_config)
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=False)
    st = SentenceTransformer(d, device="cpu")
    st_embeddings = st.encode(EMBED_TEXTS, batch_size=4, convert_to_numpy=True)
    tok = layouts["hub"]
    embeddings = []
    for text, st_emb in zip(EMBED_TEXTS, st_embeddings):
        tok.enable_truncation(MAX_TOKENS)
        ids = tok.encode(text).ids
        tok.no_truncation()
        with torch.no_grad():
            hidden = encoder(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = hidden.mean(dim=0)
        assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    fixture["embeddings"] = embeddings
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH, json.dumps({k: len(v) for k, v in fixture["tokenizer"].items()}))


if __name__ == "__main__":
    main()
