"""MPNet encoders served by the real binary (the tiny random-weight models of
tools/golden/mpnet_golden.py: all-mpnet-base-v2's architecture and modules,
with a BERT-uncased WordPiece vocabulary and RoBERTa's template): OpenAI
embeddings against sentence-transformers' SentenceTransformer on the same
directory up to the 130-token limit (relative distances past 128), TEI's
/tokenize against Hugging Face tokenizers, TEI's /predict against the golden
transformers logits, and /v1/model_info."""
import json

import pytest

from conftest import (REPO, ServerProcess, assert_embeddings_equal_sentence_transformers,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info, post_json)

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "mpnet_tiny"
CLASSIFIER = MODELS / "mpnet_classifier_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/mpnet_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


def test_embeddings_equal_sentence_transformers(embedder):
    _, body = assert_embeddings_equal_sentence_transformers(embedder, EMBEDDER, TEXTS, "mpnet_tiny")
    # The long text is at the 130-token limit (TEI's truncate, OpenAI's none: cut).
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_tei_tokenize_equals_tokenizers(embedder):
    assert_tei_tokenize_equals_tokenizers(embedder, EMBEDDER, TEXTS[:7])


def test_tei_predict_equals_transformers_logits():
    cases = [c for c in GOLDEN["logits"] if c["text_pair"] is not None]
    s = ServerProcess(f"--encoder-model={CLASSIFIER}", "--threads=2")
    try:
        status, body = post_json(s, "/predict", {"inputs": [[c["text"], c["text_pair"]] for c in cases],
                                                 "raw_scores": True})
    finally:
        s.close()
    assert status == 200, body
    for got, c in zip(body, cases):
        by_label = {p["label"]: p["score"] for p in got}
        assert [by_label[f"LABEL_{k}"] for k in range(2)] == pytest.approx(c["logits"], abs=1e-4), c["text"]


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "mpnet", info
    assert info["max_positions"] == info["max_input_tokens"] == GOLDEN["max_tokens"], info
