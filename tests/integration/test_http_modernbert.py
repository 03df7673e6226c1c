"""ModernBERT encoders served by the real binary (the tiny random-weight models
of tools/golden/modernbert_golden.py: a byte-level BPE with [CLS] ... [SEP],
global and local layers with rotary positions): OpenAI embeddings against
sentence-transformers' SentenceTransformer on the same directory up to the
100-token limit (far past the local layers' window), TEI's /tokenize against
Hugging Face tokenizers, TEI's /rerank against sentence-transformers'
CrossEncoder on the mean-pooled reranker, TEI's /predict against
transformers' text-classification pipeline on the cls-pooled classifier
(its config in the older key layout), and /v1/model_info."""
import json

import pytest

from conftest import (REPO, RERANK_DOCS, RERANK_QUERY, assert_embeddings_equal_sentence_transformers,
                      assert_predict_equals_pipeline, assert_rerank_equals_cross_encoder,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info)

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "modernbert_tiny"
RERANKER = MODELS / "modernbert_reranker_tiny"
CLASSIFIER = MODELS / "modernbert_classifier_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/modernbert_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


def test_embeddings_equal_sentence_transformers(embedder):
    _, body = assert_embeddings_equal_sentence_transformers(embedder, EMBEDDER, TEXTS, "modernbert_tiny")
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_tei_tokenize_equals_tokenizers(embedder):
    assert_tei_tokenize_equals_tokenizers(embedder, EMBEDDER, TEXTS[:6])


def test_tei_rerank_equals_cross_encoder(server_factory):
    s = server_factory(f"--encoder-model={RERANKER}", "--threads=2")
    assert_rerank_equals_cross_encoder(s, RERANKER, RERANK_QUERY, RERANK_DOCS, truncate=True)


def test_tei_predict_equals_transformers_pipeline(server_factory):
    texts = [c["text"] for c in GOLDEN["logits"]["modernbert_classifier_tiny"] if c["text_pair"] is None]
    s = server_factory(f"--encoder-model={CLASSIFIER}", "--threads=2")
    assert_predict_equals_pipeline(s, CLASSIFIER, texts, truncate=True)


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "modernbert", info
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info
    assert info["max_positions"] == 128, info
