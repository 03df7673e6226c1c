"""Decoder-based embedders served by the real binary (the tiny random-weight
models of tools/golden/causal_embedder_golden.py: a Qwen3Model with
Qwen3-Embedding's tokenizer pipeline, last-token pooling, Normalize and
instruction prompts; a LlamaForCausalLM with Llama-3's tokenizer and mean
pooling; a MistralModel with the Llama-2-layout SentencePiece BPE, e5-mistral's
kind; a Qwen3ForSequenceClassification reranker and a
LlamaForSequenceClassification classifier; an EmbeddingGemma-style bidirectional
Gemma 3 with Dense modules): OpenAI /v1/embeddings and TEI /embed (with prompt_name) against
sentence-transformers' SentenceTransformer on the same directories, TEI's
/tokenize against Hugging Face tokenizers on NFD input, /v1/model_info, and
the requests such a model refuses."""
import json

import numpy as np
import pytest

from conftest import (REPO, RERANK_DOCS, RERANK_QUERY, ServerProcess, assert_embeddings_equal_sentence_transformers,
                      assert_predict_equals_pipeline, assert_rerank_equals_cross_encoder,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info, openai_embeddings,
                      post_json)

MODELS = REPO / "tests/golden/encoder_models"
QWEN = MODELS / "qwen3_embedding_tiny"
LLAMA = MODELS / "llama_embedder_tiny"
MISTRAL = MODELS / "mistral_embedder_tiny"
RERANKER = MODELS / "qwen3_reranker_tiny"
CLASSIFIER = MODELS / "llama_classifier_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/causal_embedder_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]["qwen3_embedding_tiny"]]


@pytest.fixture(scope="module")
def qwen():
    yield from encoder_server(QWEN)


def test_embeddings_equal_sentence_transformers(qwen):
    _, body = assert_embeddings_equal_sentence_transformers(qwen, QWEN, TEXTS, "qwen3_embedding_tiny")
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"]["qwen3_embedding_tiny"])


def test_tei_embed_with_the_query_prompt(qwen):
    st = pytest.importorskip("sentence_transformers")
    queries = [c["text"] for c in GOLDEN["prompted"]]
    model = st.SentenceTransformer(str(QWEN), device="cpu")
    want = model.encode(queries, prompt_name="query", convert_to_numpy=True)
    status, body = post_json(qwen, "/embed", {"inputs": queries, "prompt_name": "query"})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body), want, atol=1e-4)
    # Without the prompt the vectors differ: the instruction reached the model.
    status, plain = post_json(qwen, "/embed", {"inputs": queries})
    assert status == 200, plain
    assert np.abs(np.array(plain) - want).max() > 1e-2


def test_tei_tokenize_equals_tokenizers_on_decomposed_text(qwen):
    texts = [TEXTS[0], "Cafe\u0301 na\u0131\u0308ve 12345", "\u1100\u1161\u11a8 x"]
    assert_tei_tokenize_equals_tokenizers(qwen, QWEN, texts)


def test_model_info_names_the_architecture_and_limit(qwen):
    info = loaded_model_info(qwen)
    assert info["architecture"] == "qwen3", info
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info


def test_refusals_name_the_field(qwen):
    status, body = post_json(qwen, "/embed_sparse", {"inputs": ["x"]})
    assert status in (400, 424), body
    status, body = post_json(qwen, "/v1/encode", {"inputs": [{"text": "x"}], "attention_layers": [0]})
    assert status == 400, body
    assert "attention_layers" in json.dumps(body), body
    # The server is still there and answers.
    status, body = post_json(qwen, "/embed", {"inputs": "still here"})
    assert status == 200, body


def test_llama_mean_pooling_equals_sentence_transformers(server_factory):
    texts = [c["text"] for c in GOLDEN["embeddings"]["llama_embedder_tiny"]]
    s = server_factory(f"--encoder-model={LLAMA}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, LLAMA, texts, "llama_embedder_tiny")


def test_mistral_sentencepiece_embedder_equals_sentence_transformers(server_factory):
    texts = [c["text"] for c in GOLDEN["embeddings"]["mistral_embedder_tiny"]]
    s = server_factory(f"--encoder-model={MISTRAL}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, MISTRAL, texts, "mistral_embedder_tiny")
    assert_tei_tokenize_equals_tokenizers(s, MISTRAL, [texts[0], texts[3], "caf\u00e9 \u2713 ok"])


def test_embeddinggemma_equals_sentence_transformers(server_factory):
    """EmbeddingGemma's kind: a bidirectional Gemma 3 body (windows of |i - j| <= 3
    on three layers), mean pooling, two Dense modules, Normalize, its query
    prompt; the vectors, the prompt's and /tokenize against
    sentence-transformers and tokenizers; dimensions up to the Dense output;
    and --decoder-model refusing it."""
    st = pytest.importorskip("sentence_transformers")
    gemma = MODELS / "embeddinggemma_tiny"
    texts = [c["text"] for c in GOLDEN["embeddings"]["embeddinggemma_tiny"]]
    s = server_factory(f"--encoder-model={gemma}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, gemma, texts, "embeddinggemma_tiny")
    assert_tei_tokenize_equals_tokenizers(s, gemma, [texts[0], texts[3], "caf\u00e9 \u2713  ok"])
    queries = [c["text"] for c in GOLDEN["prompted_models"]["embeddinggemma_tiny"]]
    want = st.SentenceTransformer(str(gemma), device="cpu").encode(queries, prompt_name="query",
                                                                    convert_to_numpy=True)
    status, body = post_json(s, "/embed", {"inputs": queries, "prompt_name": "query"})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body), want, atol=1e-4)
    status, body = post_json(s, "/v1/embeddings", {"input": ["x"], "model": "embeddinggemma_tiny",
                                                   "dimensions": 65})
    assert status == 400 and "dimensions" in json.dumps(body) and "64" in json.dumps(body), body
    with pytest.raises(Exception) as err:
        ServerProcess(f"--decoder-model={gemma}", "--threads=1").close()
    assert "use_bidirectional_attention" in str(err.value), err.value


def test_gguf_embedder_equals_transformers(server_factory):
    """The same Qwen3 model as a llama.cpp GGUF file: the vectors
    transformers gives (for texts NFC leaves unchanged: llama.cpp does not
    normalize), normalised as llama.cpp's server does."""
    cases = GOLDEN["gguf"]
    s = server_factory(f"--encoder-model={MODELS / 'qwen3_embedding_tiny.gguf'}", "--threads=2")
    got, body = openai_embeddings(s, [c["text"] for c in cases], "qwen3_embedding_tiny")
    np.testing.assert_allclose(got, np.array([c["embedding"] for c in cases]), atol=1e-4)
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in cases)
    info = loaded_model_info(s)
    assert info["architecture"] == "qwen3", info


def test_decoder_reranker_equals_cross_encoder(server_factory):
    s = server_factory(f"--encoder-model={RERANKER}", "--threads=2")
    assert_rerank_equals_cross_encoder(s, RERANKER, RERANK_QUERY, RERANK_DOCS, truncate=True)
    # A cross-encoder's states are not sentence embeddings.
    status, body = post_json(s, "/embed", {"inputs": "x"})
    assert status == 400, body


def test_decoder_classifier_equals_transformers_pipeline(server_factory):
    texts = [c["text"] for c in GOLDEN["logits"]["llama_classifier_tiny"] if c["text_pair"] is None]
    s = server_factory(f"--encoder-model={CLASSIFIER}", "--threads=2")
    assert_predict_equals_pipeline(s, CLASSIFIER, texts, truncate=True)
