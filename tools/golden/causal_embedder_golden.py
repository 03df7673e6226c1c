#!/usr/bin/env python3
"""Writes the decoder-based embedder golden fixtures from the reference
implementation.

Decoder-only embedding models (Qwen3-Embedding, e5-mistral, gte-Qwen's
causal kind) are a Llama-family body (`model_type` qwen3, qwen2, llama,
mistral) saved as the bare *Model (no "model." prefix, no LM head) or as a
*ForCausalLM, read by sentence-transformers' Transformer module (AutoModel),
each text attending causally to itself, pooled at the last token
(Qwen3-Embedding: its tokenizer appends <|endoftext|>, so that token's state
is the embedding) or by the mean, usually normalised, with instruction
prompts before queries. Qwen2's tokenizer.json NFC-normalizes and splits by
its own regex (single digits) before the byte-level BPE; Llama-3's splits by
its regex (digits in threes) and keeps a ByteLevel post-processor before its
TemplateProcessing.

1. Two byte-level BPEs trained by tokenizers' BpeTrainer on roberta_golden.py's
   corpus: Qwen2's pipeline (NFC, Split(Qwen2 regex) + ByteLevel without its
   own regex, TemplateProcessing "$A <|endoftext|>", as Qwen3-Embedding's
   file appends it) and Llama-3's (no normalizer, Split(Llama-3 regex),
   Sequence[ByteLevel(trim_offsets false), TemplateProcessing
   "<|begin_of_text|> $A"]).
2. Tiny random-weight models (hidden 32, 3 layers, 4 query heads, head_dim 16,
   rope theta 1e6), every parameter redrawn:
     tests/golden/encoder_models/qwen3_embedding_tiny/  Qwen3Model (2 KV heads, q/k norms, tied), saved
                                                        bare; lasttoken pooling + Normalize, max_seq_length
                                                        64, Qwen3-Embedding's prompts (query, document)
     tests/golden/encoder_models/llama_embedder_tiny/   LlamaForCausalLM (1 KV head, untied lm_head kept in
                                                        the file), mean pooling, no Normalize
     tests/golden/encoder_models/mistral_embedder_tiny/ MistralModel (2 KV heads), e5-mistral's kind: the
                                                        SentencePiece-style BPE of stories260K's tok512 in the
                                                        Llama-2 layout (decoder_tokenizer_golden.py's
                                                        tok512_legacy_tokenizer.json: Prepend + Replace
                                                        normalizer, byte_fallback) with the <s> $A </s>
                                                        template a file saved with add_eos_token has
                                                        (transformers 5 reads only tokenizer.json's
                                                        post-processor, as TEI does); lasttoken pooling +
                                                        Normalize; sliding_window 4
     tests/golden/encoder_models/qwen3_reranker_tiny/   Qwen3ForSequenceClassification, 1 label (a reranker
                                                        converted to a score head), Qwen3's tokenizer
                                                        (<|endoftext|> appended and also its pad token, so
                                                        the score is read at the token before it)
     tests/golden/encoder_models/llama_classifier_tiny/ LlamaForSequenceClassification, 3 labels, no pad token
                                                        (the score at the last token)
     tests/golden/encoder_models/embeddinggemma_tiny/   google/embeddinggemma-300m's kind: Gemma3TextModel
                                                        (Gemma3TextConfig, use_bidirectional_attention true)
                                                        saved bare (architectures ["Gemma3TextModel"], no
                                                        "model." prefix), hidden 64, intermediate 96, 4 layers,
                                                        4 heads over 2 KV heads, head_dim 32,
                                                        query_pre_attn_scalar 24, layers 0-2 sliding_attention
                                                        and 3 full_attention, rope theta 10000 (sliding) and
                                                        50000 (full), tied; sliding_window 6 in config.json,
                                                        which transformers turns into (6 // 2) + 1 = 4 and
                                                        reads as |i - j| < 4 (each token attends to itself and
                                                        the 3 tokens on either side, 7 in all; embeddinggemma's
                                                        512 is so |i - j| <= 256), the full layer to every
                                                        token; decoder_make_models.py's Gemma tokenizer
                                                        with the <bos> $A <eos> template embeddinggemma's
                                                        tokenizer has (add_eos_token); sentence-transformers
                                                        modules as embeddinggemma-300m's: mean Pooling
                                                        (include_prompt), 2_Dense 64 -> 128 and 3_Dense
                                                        128 -> 64 (no bias, Identity), Normalize (no
                                                        folder); max_seq_length 64, its query/document prompts
   and tests/golden/encoder_models/qwen3_embedding_tiny.gguf: the same Qwen3 model and tokenizer as llama.cpp's
   convert_hf_to_gguf.py writes them (gguf-py; decoder_make_models.py's tokenizer and gguf_llama_writer's
   tensors, all f32), with qwen3.pooling_type LAST, tokenizer.ggml.add_eos_token (Qwen3-Embedding's GGUF
   files append <|endoftext|> so) and context_length 64 (the directory's max_seq_length).
3. tests/golden/encoder/causal_embedder_golden.json:
     versions    exact library versions, this script
     tokenizer   per model: {text, ids, offsets (bytes)}, decomposed (NFD) texts among them; also
                 "tok512_metaspace": transformers 5's Metaspace (prepend_scheme first) layout of the same
                 vocabulary (tokenizers on that file, as written)
     embeddings  per model: {text, ids, embedding}, computed from transformers' last_hidden_state and
                 asserted equal to SentenceTransformer(dir).encode
     prompted    qwen3_embedding_tiny with prompt_name "query": {text, ids, embedding}
     prompted_models  per model (embeddinggemma_tiny) with prompt_name "query": {text, ids, embedding}
     logits      per classifier: {text, text_pair, ids, logits} from transformers, one input at a time
     gguf        the embeddings cases of qwen3_embedding_tiny whose text NFC leaves as it is (llama.cpp
                 does not normalize): the GGUF file must give the same ids and vectors

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/causal_embedder_golden.py
"""
import json
import os
import unicodedata

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gguf
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from safetensors.torch import save_file
from transformers import (AutoTokenizer, Gemma3TextConfig, Gemma3TextModel, LlamaConfig, LlamaForCausalLM,
                          LlamaForSequenceClassification, MistralConfig, MistralModel, Qwen3Config,
                          Qwen3ForSequenceClassification, Qwen3Model)

from encoder_golden_util import (QUERY_PASSAGE_PAIRS, REPO, byte_offsets, classifier_cases, corpus, save_model_dir,
                                 truncated_ids, versions, write_json, write_mean_pooling_modules)
from decoder_make_models import gguf_tokenizer, train_gemma_tokenizer
from gguf_llama_writer import add_hparams, add_tensors
from roberta_golden import OTHER_SCRIPTS

SCRIPT = "tools/golden/causal_embedder_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/causal_embedder_golden.json")
TOK512 = os.path.join(REPO, "tests/golden/decoder_tokenizers")
MAX_TOKENS = 64

# The regexes exactly as Qwen2's and Llama-3's tokenizer.json files have them
# (engine/tokenizers/pretokenizer.cc recognises them by these strings).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")

# Qwen3-Embedding's config_sentence_transformers.json prompts.
PROMPTS = {"query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:",
           "document": ""}

# embeddinggemma-300m's config_sentence_transformers.json prompts (these two of its list).
GEMMA_PROMPTS = {"query": "task: search result | query: ", "document": "title: none | text: "}

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "How do I reset my password?",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "I don't think it's what we'll need, you're right: 123 apples and 4567 pears.",
    "Line one\n\n  line two\tand tabs   ",
    "x",
    " ".join(["the committee decided that the annual budget would be reallocated"] * 8),
]
# Decomposed (NFD) accents: NFC composes them before the BPE, and the
# offsets point back into the original characters.
DECOMPOSED = [
    unicodedata.normalize("NFD", "Le café était très animé, déjà complet."),
    "Cafe\u0301 and nai\u0308ve, x\u0308\u0301y, A\u030a\u0323b",
    "\u1100\u1161\u11a8 \u1112\u1161\u11ab",  # Hangul jamo -> syllables
]
QUERIES = ["What is the capital of China?", "Explain gravity"]
PAIRS = QUERY_PASSAGE_PAIRS


def build_tokenizer(qwen):
    specials = (["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if qwen
                else ["<|begin_of_text|>", "<|end_of_text|>"])
    tok = Tokenizer(models.BPE())
    if qwen:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX if qwen else LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=1400, min_frequency=2, show_progress=False, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(29 if qwen else 31, OTHER_SCRIPTS), trainer)
    tok.decoder = decoders.ByteLevel()
    ids = {t: tok.token_to_id(t) for t in specials}
    if qwen:
        tok.post_processor = processors.TemplateProcessing(
            single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
            special_tokens=[("<|endoftext|>", ids["<|endoftext|>"])])
    else:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|>:0 $A:0", pair="<|begin_of_text|>:0 $A:0 <|begin_of_text|>:1 $B:1",
                special_tokens=[("<|begin_of_text|>", ids["<|begin_of_text|>"])])])
    tok.no_truncation()
    tok.no_padding()
    return tok, ids


def reinit_(model, seed):
    """Every parameter redrawn, in name order: RMSNorm weights 1 + N(0, 0.1),
    everything else N(0, 0.2)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))


def reinit_gemma_(model, seed):
    """Every parameter redrawn, in name order: Gemma's RMSNorm weights
    N(0, 0.1) (it scales by 1 + weight), everything else N(0, 0.15)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            std = 0.1 if name.endswith("norm.weight") else 0.15
            p.copy_(std * torch.randn(p.shape, generator=gen))


def write_embeddinggemma_modules(d, hidden, dense, seed):
    """embeddinggemma-300m's sentence-transformers modules: Transformer, mean
    Pooling (include_prompt), one Dense per (in, out) of `dense` (no bias,
    Identity; config.json with the four keys the model ships, weights
    linear.weight [out, in] in model.safetensors, drawn N(0, 0.15)),
    Normalize; max_seq_length MAX_TOKENS and its prompts. Returns the Dense
    weights."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    os.makedirs(os.path.join(d, "1_Pooling"))
    write_json(os.path.join(d, "1_Pooling/config.json"),
               {"word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
                "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False, "include_prompt": True})
    gen = torch.Generator().manual_seed(seed)
    weights = []
    for in_features, out_features in dense:
        idx = len(modules)
        path = f"{idx}_Dense"
        os.makedirs(os.path.join(d, path))
        write_json(os.path.join(d, path, "config.json"),
                   {"in_features": in_features, "out_features": out_features, "bias": False,
                    "activation_function": "torch.nn.modules.linear.Identity"})
        w = 0.15 * torch.randn((out_features, in_features), generator=gen)
        save_file({"linear.weight": w.contiguous()}, os.path.join(d, path, "model.safetensors"))
        weights.append(w)
        modules.append({"idx": idx, "name": str(idx), "path": path, "type": "sentence_transformers.models.Dense"})
    idx = len(modules)
    modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Normalize",
                    "type": "sentence_transformers.models.Normalize"})
    write_json(os.path.join(d, "modules.json"), modules)
    write_json(os.path.join(d, "sentence_bert_config.json"), {"max_seq_length": MAX_TOKENS, "do_lower_case": False})
    write_json(os.path.join(d, "config_sentence_transformers.json"),
               {"prompts": GEMMA_PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"})
    return weights


def write_st_modules(d, pooling, normalize, prompts):
    write_mean_pooling_modules(d, 32, MAX_TOKENS, normalize=normalize)
    if pooling == "lasttoken":
        write_json(os.path.join(d, "1_Pooling/config.json"),
                   {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": False,
                    "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
                    "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_lasttoken": True,
                    "include_prompt": True})
    if prompts:
        write_json(os.path.join(d, "config_sentence_transformers.json"),
                   {"prompts": prompts, "default_prompt_name": None, "similarity_fn_name": "cosine"})


def write_qwen3_gguf(path, model, tok):
    """llama.cpp's layout of a Qwen3 embedder: Qwen3's GGUF keeps HF's q/k
    row order; the bare Qwen3Model's names under "model." as the writer
    expects them; tied embeddings (no output.weight)."""
    cfg = model.config
    sd = {"model." + k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    f32 = gguf.GGMLQuantizationType.F32
    w = gguf.GGUFWriter(path, "qwen3")
    add_hparams(w, name="qwen3_embedding_tiny", n_layers=cfg.num_hidden_layers, context=MAX_TOKENS,
                hidden=cfg.hidden_size, ffn=cfg.intermediate_size, n_head=cfg.num_attention_heads,
                n_head_kv=cfg.num_key_value_heads, rope_theta=cfg.rope_parameters["rope_theta"],
                rms_eps=cfg.rms_norm_eps, vocab=cfg.vocab_size, qtype=f32, head_dim=cfg.head_dim)
    gguf_tokenizer(w, tok, "qwen2", "<|endoftext|>", "<|endoftext|>", False)
    w.add_add_eos_token(True)
    w.add_pooling_type(gguf.PoolingType.LAST)
    add_tensors(w, sd, n_layers=cfg.num_hidden_layers, n_head=cfg.num_attention_heads,
                n_head_kv=cfg.num_key_value_heads, qtype=f32, permute=False, tied=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tokenizer_cases(tok):
    cases = []
    for text in TEXTS + DECOMPOSED:
        enc = tok.encode(text)
        cases.append({"text": text, "ids": enc.ids, "offsets": byte_offsets(text, enc.offsets)})
    return cases


def embedding_cases(body, tok, st, pooling, normalize, texts, prompt_name=None, prompts=PROMPTS, dense=()):
    """transformers' last_hidden_state pooled (then through the `dense`
    weights, no bias), per text alone, checked against
    SentenceTransformer.encode of the whole list (padded batches)."""
    prompt = prompts[prompt_name] if prompt_name else ""
    st_embeddings = st.encode(texts, batch_size=4, convert_to_numpy=True, prompt_name=prompt_name)
    cases = []
    for text, st_emb in zip(texts, st_embeddings):
        ids = truncated_ids(tok, prompt + text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = body(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        emb = hidden[-1] if pooling == "lasttoken" else hidden.mean(dim=0)
        for w in dense:
            emb = w @ emb
        if normalize:
            emb = torch.nn.functional.normalize(emb, dim=0)
        assert torch.allclose(emb, torch.tensor(st_emb), atol=1e-4), text
        cases.append({"text": text, "ids": ids, "embedding": [float(x) for x in emb]})
    return cases


def make_embeddinggemma(fixture):
    """embeddinggemma_tiny (see the module docstring)."""
    gtok = train_gemma_tokenizer()
    # What transformers' update_post_processor writes for add_bos_token and
    # add_eos_token, as embeddinggemma-300m's tokenizer.json has it.
    gtok.post_processor = processors.TemplateProcessing(
        single="<bos>:0 $A:0 <eos>:0", pair="<bos>:0 $A:0 <eos>:0 <bos>:1 $B:1 <eos>:1",
        special_tokens=[("<bos>", gtok.token_to_id("<bos>")), ("<eos>", gtok.token_to_id("<eos>"))])
    cfg = Gemma3TextConfig(
        vocab_size=gtok.get_vocab_size(with_added_tokens=True), hidden_size=64, intermediate_size=96,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=24,
        max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=6,
        layer_types=["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 50000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        tie_word_embeddings=True, use_bidirectional_attention=True, hidden_activation="gelu_pytorch_tanh",
        attention_bias=False, final_logit_softcapping=None, attn_logit_softcapping=None,
        attn_implementation="eager", bos_token_id=gtok.token_to_id("<bos>"), eos_token_id=gtok.token_to_id("<eos>"),
        pad_token_id=gtok.token_to_id("<pad>"))
    # Bidirectional: __post_init__ halves the window ((6 // 2) + 1, an
    # exclusive bound |i - j| < 4) and to_dict writes 6 back.
    assert cfg.sliding_window == 4 and cfg.to_dict()["sliding_window"] == 6, cfg.sliding_window
    gemma = Gemma3TextModel(cfg).eval()
    assert all(n.endswith("norm.weight") for n, p in gemma.named_parameters() if p.dim() == 1)
    reinit_gemma_(gemma, 20261225)
    d = save_model_dir("embeddinggemma_tiny", gemma, gtok, {
        "add_bos_token": True, "add_eos_token": True, "bos_token": "<bos>", "eos_token": "<eos>",
        "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": None, "padding_side": "right",
        "tokenizer_class": "GemmaTokenizer", "model_max_length": 2048})
    dense = write_embeddinggemma_modules(d, 64, [(64, 128), (128, 64)], 20261226)
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        saved = json.load(f)
    assert saved["architectures"] == ["Gemma3TextModel"] and saved["sliding_window"] == 6, saved
    # transformers builds the tokenizer from tokenizer.json as written.
    assert AutoTokenizer.from_pretrained(d).backend_tokenizer.to_str() == gtok.to_str()
    st = SentenceTransformer(d, device="cpu")
    fixture["tokenizer"]["embeddinggemma_tiny"] = tokenizer_cases(gtok)
    cases = embedding_cases(gemma, gtok, st, "mean", True, TEXTS + DECOMPOSED, dense=dense)
    assert max(len(e["ids"]) for e in cases) == MAX_TOKENS
    assert all(e["ids"][0] == cfg.bos_token_id and e["ids"][-1] == cfg.eos_token_id for e in cases)
    fixture["embeddings"]["embeddinggemma_tiny"] = cases
    fixture["prompted_models"]["embeddinggemma_tiny"] = embedding_cases(
        gemma, gtok, st, "mean", True, QUERIES, prompt_name="query", prompts=GEMMA_PROMPTS, dense=dense)


def main():
    torch.manual_seed(0)
    fixture = {"versions": versions(SCRIPT), "max_tokens": MAX_TOKENS, "prompts": PROMPTS,
               "tokenizer": {}, "embeddings": {}}

    qtok, qids = build_tokenizer(qwen=True)
    qwen = Qwen3Model(Qwen3Config(
        vocab_size=qtok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, attn_implementation="eager",
        bos_token_id=qids["<|endoftext|>"], eos_token_id=qids["<|im_end|>"],
        pad_token_id=qids["<|endoftext|>"])).eval()
    reinit_(qwen, 20261220)
    d = save_model_dir("qwen3_embedding_tiny", qwen, qtok, {
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "padding_side": "left",
        "tokenizer_class": "Qwen2Tokenizer", "model_max_length": 131072})
    write_st_modules(d, "lasttoken", True, PROMPTS)
    st = SentenceTransformer(d, device="cpu")
    fixture["tokenizer"]["qwen3_embedding_tiny"] = tokenizer_cases(qtok)
    fixture["embeddings"]["qwen3_embedding_tiny"] = embedding_cases(qwen, qtok, st, "lasttoken", True,
                                                                    TEXTS + DECOMPOSED)
    fixture["prompted"] = embedding_cases(qwen, qtok, st, "lasttoken", True, QUERIES, prompt_name="query")
    assert max(len(e["ids"]) for e in fixture["embeddings"]["qwen3_embedding_tiny"]) == MAX_TOKENS
    assert all(e["ids"][-1] == qids["<|endoftext|>"] for e in fixture["embeddings"]["qwen3_embedding_tiny"])
    write_qwen3_gguf(os.path.join(REPO, "tests/golden/encoder_models/qwen3_embedding_tiny.gguf"), qwen, qtok)

    fixture["logits"] = {}
    reranker = Qwen3ForSequenceClassification(Qwen3Config(
        vocab_size=qtok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, attn_implementation="eager",
        num_labels=1, pad_token_id=qids["<|endoftext|>"], eos_token_id=qids["<|im_end|>"])).eval()
    reinit_(reranker, 20261223)
    save_model_dir("qwen3_reranker_tiny", reranker, qtok, {
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 256})
    fixture["logits"]["qwen3_reranker_tiny"] = classifier_cases(reranker, qtok, PAIRS, TEXTS)
    assert all(c["ids"][-1] == qids["<|endoftext|>"] for c in fixture["logits"]["qwen3_reranker_tiny"])
    fixture["gguf"] = [e for e in fixture["embeddings"]["qwen3_embedding_tiny"]
                       if unicodedata.normalize("NFC", e["text"]) == e["text"]]
    assert len(fixture["gguf"]) == len(TEXTS)

    ltok, lids = build_tokenizer(qwen=False)
    llama = LlamaForCausalLM(LlamaConfig(
        vocab_size=ltok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, attn_implementation="eager",
        bos_token_id=lids["<|begin_of_text|>"], eos_token_id=lids["<|end_of_text|>"])).eval()
    reinit_(llama, 20261221)
    d = save_model_dir("llama_embedder_tiny", llama, ltok, {
        "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "pad_token": "<|end_of_text|>",
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072})
    write_st_modules(d, "mean", False, None)
    st = SentenceTransformer(d, device="cpu")
    fixture["tokenizer"]["llama_embedder_tiny"] = tokenizer_cases(ltok)
    fixture["embeddings"]["llama_embedder_tiny"] = embedding_cases(llama.model, ltok, st, "mean", False,
                                                                   TEXTS + DECOMPOSED)

    stok = Tokenizer.from_file(os.path.join(TOK512, "tok512_legacy_tokenizer.json"))
    # What transformers' update_post_processor writes for add_eos_token.
    stok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0 </s>:0", pair="<s>:0 $A:0 </s>:0 <s>:1 $B:1 </s>:1",
        special_tokens=[("<s>", 1), ("</s>", 2)])
    mistral = MistralModel(MistralConfig(
        vocab_size=stok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        # e5-mistral keeps Mistral-v0.1's 4,096-token window; 4 here, so every longer text meets it.
        rope_theta=10000.0, rms_norm_eps=1e-5, sliding_window=4, tie_word_embeddings=False,
        attn_implementation="eager", bos_token_id=1, eos_token_id=2, pad_token_id=2)).eval()
    reinit_(mistral, 20261222)
    d = save_model_dir("mistral_embedder_tiny", mistral, stok, {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>",
        "padding_side": "left",
        "tokenizer_class": "LlamaTokenizerFast", "model_max_length": 131072})
    write_st_modules(d, "lasttoken", True, None)
    # The tokenizer as transformers 5 builds it: its post-processor now ends with </s>.
    mtok = AutoTokenizer.from_pretrained(d).backend_tokenizer
    assert mtok.encode("x").ids[-1] == 2 and mtok.encode("x").ids[0] == 1
    st = SentenceTransformer(d, device="cpu")
    fixture["tokenizer"]["mistral_embedder_tiny"] = tokenizer_cases(mtok)
    fixture["embeddings"]["mistral_embedder_tiny"] = embedding_cases(mistral, mtok, st, "lasttoken", True,
                                                                     TEXTS + DECOMPOSED)
    classifier = LlamaForSequenceClassification(LlamaConfig(
        vocab_size=ltok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-5, attn_implementation="eager", pad_token_id=None,
        bos_token_id=lids["<|begin_of_text|>"], eos_token_id=lids["<|end_of_text|>"],
        id2label={0: "negative", 1: "neutral", 2: "positive"},
        label2id={"negative": 0, "neutral": 1, "positive": 2})).eval()
    reinit_(classifier, 20261224)
    save_model_dir("llama_classifier_tiny", classifier, ltok, {
        "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 256})
    fixture["logits"]["llama_classifier_tiny"] = classifier_cases(classifier, ltok, PAIRS, TEXTS)

    fixture["prompted_models"] = {}
    make_embeddinggemma(fixture)

    fixture["tokenizer"]["tok512_metaspace"] = tokenizer_cases(
        Tokenizer.from_file(os.path.join(TOK512, "tok512_metaspace_tokenizer.json")))
    write_json(OUT_PATH, fixture)
    print("wrote", OUT_PATH)


if __name__ == "__main__":
    main()
