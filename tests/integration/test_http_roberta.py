"""RoBERTa encoders served by the real binary (the tiny random-weight models of
tools/golden/roberta_golden.py, with a real tokenizers-trained byte-level BPE
vocabulary): OpenAI embeddings against sentence-transformers'
SentenceTransformer on the same directory (all-distilroberta-v1's modules),
TEI's /tokenize against Hugging Face tokenizers (ids and byte spans, trimmed
of spaces as RobertaProcessing trims them), TEI's /predict against
transformers' text-classification pipeline on the RobertaForSequenceClassification
model, and /v1/model_info."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, assert_predict_equals_pipeline,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info, post_json)

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "roberta_tiny"
CLASSIFIER = MODELS / "roberta_classifier_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/roberta_golden.json").read_text())
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "I don't think it's what we'll need, you're right",
    "emoji 🙂 and ☃ split across tokens: naïve café",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "numbers 123 4567 and 3.14159",
]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


@pytest.fixture(scope="module")
def classifier():
    yield from encoder_server(CLASSIFIER)


def test_embeddings_equal_sentence_transformers(embedder):
    assert_embeddings_equal_sentence_transformers(embedder, EMBEDDER, TEXTS, "roberta_tiny")


def test_texts_with_spaces_and_specials_as_tokenizer_json_reads_them(embedder):
    # The golden embeddings are transformers' on tokenizers' ids (spaces kept
    # as Ġ tokens, "<mask>" in the text read as that token).
    cases = [c for c in GOLDEN["embeddings"] if c["text"] != c["text"].strip() or "<" in c["text"]]
    assert len(cases) >= 3
    status, body = post_json(embedder, "/embed", {"inputs": [c["text"] for c in cases]})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body), np.array([c["embedding"] for c in cases]), atol=1e-4)


def test_tei_tokenize_equals_tokenizers(embedder):
    assert_tei_tokenize_equals_tokenizers(embedder, EMBEDDER,
                                          [c["text"] for c in GOLDEN["tokenizer"]["roberta"] if c["text"]])


def test_tei_decode_equals_tokenizers(embedder):
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(EMBEDDER / "tokenizer.json"))
    ids = tok.encode(TEXTS[2]).ids
    status, body = post_json(embedder, "/decode", {"ids": ids, "skip_special_tokens": True})
    assert status == 200, body
    assert body == [tok.decode(ids, skip_special_tokens=True)] == [TEXTS[2]]


def test_tei_predict_equals_transformers_pipeline(classifier):
    texts = [c["text"] for c in GOLDEN["logits"]
             if c["text_pair"] is None and c["text"] == c["text"].strip() and len(c["ids"]) < GOLDEN["max_tokens"]]
    assert len(texts) >= 3
    assert_predict_equals_pipeline(classifier, CLASSIFIER, texts)


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "roberta", info
    # 66 position rows less RoBERTa's padding offset.
    assert info["max_positions"] == info["max_input_tokens"] == GOLDEN["max_tokens"], info
