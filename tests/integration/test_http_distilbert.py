"""DistilBERT encoders served by the real binary (the tiny random-weight models
of tools/golden/distilbert_golden.py: msmarco-distilbert-base-v4's modules
and distilbert-base-uncased-finetuned-sst-2-english's head and labels, with a
BERT-uncased WordPiece vocabulary): OpenAI embeddings against
sentence-transformers' SentenceTransformer on the same directory up to the
64-token limit, TEI's /tokenize against Hugging Face tokenizers, TEI's
/predict against transformers' text-classification pipeline (texts) and the
golden logits (pairs, whose segments DistilBERT never reads), and
/v1/model_info."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, assert_predict_equals_pipeline,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info, post_json)

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "distilbert_tiny"
CLASSIFIER = MODELS / "distilbert_classifier_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/distilbert_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


@pytest.fixture(scope="module")
def classifier():
    yield from encoder_server(CLASSIFIER)


def test_embeddings_equal_sentence_transformers(embedder):
    want, body = assert_embeddings_equal_sentence_transformers(embedder, EMBEDDER, TEXTS, "distilbert_tiny")
    # No Normalize module: the raw mean, as sentence-transformers returns it.
    assert abs(np.linalg.norm(want[0]) - 1.0) > 0.05
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_tei_tokenize_equals_tokenizers(embedder):
    assert_tei_tokenize_equals_tokenizers(embedder, EMBEDDER, TEXTS[:7])


def test_tei_predict_equals_transformers_pipeline(classifier):
    texts = [c["text"] for c in GOLDEN["logits"] if c["text_pair"] is None and len(c["ids"]) < GOLDEN["max_tokens"]]
    assert len(texts) >= 5
    assert_predict_equals_pipeline(classifier, CLASSIFIER, texts)


def test_tei_predict_pairs_equal_transformers_logits(classifier):
    cases = [c for c in GOLDEN["logits"] if c["text_pair"] is not None]
    status, body = post_json(classifier, "/predict", {"inputs": [[c["text"], c["text_pair"]] for c in cases],
                                                      "raw_scores": True})
    assert status == 200, body
    for got, c in zip(body, cases):
        by_label = {p["label"]: p["score"] for p in got}
        assert [by_label["NEGATIVE"], by_label["POSITIVE"]] == pytest.approx(c["logits"], abs=1e-4), c["text"]


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "distilbert", info
    assert info["max_positions"] == info["max_input_tokens"] == GOLDEN["max_tokens"], info
