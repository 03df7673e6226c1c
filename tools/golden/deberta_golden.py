#!/usr/bin/env python3
"""Writes the DeBERTa-v2 golden fixtures from the reference implementation.

DeBERTa-v2 / v3 (`model_type` "deberta-v2": deberta-v3-xsmall ... -large,
mdeberta-v3-base, and the NLI cross-encoders and mxbai-rerank-*-v1 rerankers
fine-tuned from them) is BERT's post-norm encoder with disentangled
attention: each layer adds to its scores a content-to-position term
(query · key-projected relative position embedding) and a
position-to-content term (key · query-projected embedding), read from one
table of relative position embeddings in log buckets, and scales the scores
by 1 / sqrt(head_dim · 3). A sequence classifier pools the first token
through ContextPooler (dense, GELU) into the classifier.

The reference is transformers 5's DebertaV2Model / DebertaV2ForSequenceClassification
and sentence-transformers on the embedder.

1. Tokenizer: a SentencePiece Unigram model trained here with DeBERTa-v3's
   special pieces ([PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3; [MASK] after the
   pieces), written as tokenizer.json in the layout the checkpoints ship
   (transformers' DebertaV2Converter: Strip, Precompiled, Replace " {2,}";
   Metaspace; [CLS] A [SEP] (B [SEP])).
2. Tiny random-weight models (hidden 32, 2 layers, 4 heads, intermediate 64,
   128 positions), every parameter re-initialised:
     tests/golden/encoder_models/deberta_v3_tiny/           DebertaV2Model in deberta-v3's configuration
                                                            (relative_attention, position_buckets 32,
                                                            share_att_key, norm_rel_ebd layer_norm, no
                                                            position table, no token types),
                                                            sentence-transformers mean pooling + Normalize
     tests/golden/encoder_models/deberta_v3_reranker_tiny/  DebertaV2ForSequenceClassification, the same
                                                            configuration, one label
     tests/golden/encoder_models/deberta_v2_tiny/           the other branches: pos_key_proj /
                                                            pos_query_proj (no shared keys), exact relative
                                                            positions clamped at 24, a position table, two
                                                            token types, pos_att_type "c2p|p2c" as a string,
                                                            no table norm; mean pooling
3. tests/golden/encoder/deberta_golden.json:
     versions         exact library versions, this script
     max_tokens       sentence-transformers' max_seq_length
     v5_layout        the normalizer and pre-tokenizer transformers 5 writes for the same vocabulary
     tokenizer        {legacy, v5}: tokenizers' ids, tokens, byte offsets and decodings of texts that
                      exercise the normalizers
     pairs            {legacy, v5}: ids and segments of pairs, cut longest-first
     buckets          make_log_bucket_position for every relative position in [-600, 600] at
                      (bucket_size, max_position) (256, 512) (deberta-v3's) and (32, 128)
     v3_embeddings    deberta_v3_tiny through SentenceTransformer: {text, ids, embedding}
     v2_embeddings    deberta_v2_tiny through SentenceTransformer
     logits           deberta_v3_reranker_tiny: {text, text_pair, ids, logits}

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/deberta_golden.py
"""
import io
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sentencepiece as spm
import torch
from sentence_transformers import SentenceTransformer
from sentencepiece import sentencepiece_model_pb2
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, DebertaV2Model, DebertaV2Tokenizer
from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, classifier_cases, corpus, pair_cases, reinit_,
                                 save_model_dir, tokenizer_cases, truncated_ids, versions, write_json,
                                 write_pooling_modules)

SCRIPT = "tools/golden/deberta_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/deberta_golden.json")
MAX_TOKENS = 128
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=128, hidden_act="gelu", layer_norm_eps=1e-7)
# deberta-v3-base's configuration keys, at the tiny sizes (32 buckets so
# that the test texts reach the logarithmic ones).
V3 = dict(relative_attention=True, position_buckets=32, max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
          share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
          pad_token_id=0)
V2 = dict(relative_attention=True, position_buckets=-1, max_relative_positions=24, pos_att_type="c2p|p2c",
          share_att_key=False, norm_rel_ebd="none", position_biased_input=True, type_vocab_size=2, pad_token_id=0)

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Hello  world,   three spaces and\ttab\nnewline",
    "Café au lait, crème brûlée, and naïve façades.",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 14),
]
# Each exercises a step of one layout's normalizer or pre-tokenizer.
TOKENIZER_TEXTS = TEXTS[:6] + [
    "  leading and trailing spaces  ",
    "e\u0301 composed by a combining accent, A\u0301 and a\u0301\u0302 two",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and the ﬁ ligature",
    "tabs\tand\nnew\r\nlines",
    "[MASK] written in the text, and [CLS]",
    "",
]
PAIR_CASES = [
    ("what is the capital of france?", "Paris is the capital and largest city of France.", MAX_TOKENS),
    (" ".join(["alpha"] * 11), " ".join(["beta"] * 9), 16),
    (" ".join(["gamma"] * 9), " ".join(["delta"] * 9), 17),
]
PAIRS = [
    *QUERY_PASSAGE_PAIRS,
    ("a long query " * 20, "and a long passage " * 30),
]


def train_spm():
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(11, TEXTS)), model_writer=buf, vocab_size=800, model_type="unigram",
        normalization_rule_name="nmt_nfkc", character_coverage=0.9995, num_threads=1, input_sentence_size=0,
        shuffle_input_sentence=False, minloglevel=2, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]")
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(buf.getvalue())
    return proto


def build_tokenizers(proto):
    """DeBERTa-v3's vocabulary (the pieces in order, [MASK] after them) in
    the tokenizer.json layout of the checkpoints (DebertaV2Converter), and
    the one transformers 5's DebertaV2Tokenizer writes (NFC, Strip right,
    Replace of whitespace runs)."""
    vocab = [(p.piece, p.score) for p in proto.pieces] + [("[MASK]", 0.0)]
    assert [v[0] for v in vocab[:4]] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
    hf = DebertaV2Tokenizer(vocab=vocab)
    v5 = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    v5.no_truncation()
    v5.no_padding()
    tok = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    tok.normalizer = normalizers.Sequence([
        normalizers.Strip(), normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")])
    tok.no_truncation()
    tok.no_padding()
    assert tok.encode("a b").ids[0] == 1 and tok.encode("a b").ids[-1] == 2
    return tok, v5, len(vocab)


def tokenizer_config():
    return {"bos_token": "[CLS]", "eos_token": "[SEP]", "cls_token": "[CLS]", "sep_token": "[SEP]",
            "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": "[MASK]", "do_lower_case": False,
            "split_by_punct": False, "tokenizer_class": "DebertaV2Tokenizer", "model_max_length": MAX_TOKENS}


def embedder(name, tok, n_tokens, settings, seed):
    config = DebertaV2Config(vocab_size=n_tokens, attn_implementation="eager", **SIZES, **settings)
    model = DebertaV2Model(config).eval()
    reinit_(model, seed)
    d = save_model_dir(name, model, tok, tokenizer_config())
    write_pooling_modules(d, SIZES["hidden_size"], MAX_TOKENS, normalize=name == "deberta_v3_tiny")
    st = SentenceTransformer(d, device="cpu")
    vectors = st.encode(TEXTS, batch_size=3)
    cases = [{"text": t, "ids": truncated_ids(tok, t, None, MAX_TOKENS), "embedding": [float(x) for x in e]}
             for t, e in zip(TEXTS, vectors)]
    assert max(len(c["ids"]) for c in cases) == MAX_TOKENS  # the long text reaches the limit
    return cases


def reranker(tok, n_tokens):
    config = DebertaV2Config(vocab_size=n_tokens, num_labels=1, attn_implementation="eager", **SIZES, **V3)
    model = DebertaV2ForSequenceClassification(config).eval()
    reinit_(model, 20261214)
    save_model_dir("deberta_v3_reranker_tiny", model, tok, tokenizer_config())
    return classifier_cases(model, tok, PAIRS, TEXTS)


def buckets():
    out = []
    relative = torch.arange(-600, 601)
    for bucket_size, max_position in ((256, 512), (32, 128)):
        b = make_log_bucket_position(relative, bucket_size, max_position).to(torch.long)
        out.append({"bucket_size": bucket_size, "max_position": max_position, "first": -600,
                    "buckets": [int(x) for x in b]})
    return out


def main():
    torch.manual_seed(0)
    tok, v5, n_tokens = build_tokenizers(train_spm())
    fixture = {"versions": versions(SCRIPT, sentencepiece=spm.__version__), "max_tokens": MAX_TOKENS,
               "buckets": buckets()}
    described = json.loads(v5.to_str())
    fixture["v5_layout"] = {"normalizer": described["normalizer"], "pre_tokenizer": described["pre_tokenizer"]}
    fixture["tokenizer"] = {"legacy": tokenizer_cases(tok, TOKENIZER_TEXTS), "v5": tokenizer_cases(v5, TOKENIZER_TEXTS)}
    assert fixture["tokenizer"]["legacy"] != fixture["tokenizer"]["v5"]
    fixture["pairs"] = {"legacy": pair_cases(tok, PAIR_CASES), "v5": pair_cases(v5, PAIR_CASES)}
    fixture["v3_embeddings"] = embedder("deberta_v3_tiny", tok, n_tokens, V3, 20261212)
    fixture["v2_embeddings"] = embedder("deberta_v2_tiny", tok, n_tokens, V2, 20261213)
    fixture["logits"] = reranker(tok, n_tokens)
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
