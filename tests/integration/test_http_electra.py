"""ELECTRA encoders (the electra discriminators and the ms-marco-electra
cross-encoders) served by the real binary from Hugging Face directories: the
tiny random-weight models of tools/golden/electra_golden.py against
sentence-transformers run here on the same directories (SentenceTransformer
for the embedder; CrossEncoder for the reranker, whose narrower embedding
tables are projected and whose pairs carry segment 1), and a variant the
encoder does not run refused at start naming the key."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, assert_rerank_equals_classifier_goldens,
                      encoder_server, loaded_model_info, model_copy_with_config)
from test_server_lifecycle import start_failure

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "electra_tiny"
RERANKER = MODELS / "electra_reranker_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/electra_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def reranker():
    yield from encoder_server(RERANKER)


def test_embeddings_equal_sentence_transformers(server_factory):
    s = server_factory(f"--encoder-model={EMBEDDER}", "--threads=2")
    want, _ = assert_embeddings_equal_sentence_transformers(s, EMBEDDER, TEXTS, "electra_tiny")
    np.testing.assert_allclose(want, [c["embedding"] for c in GOLDEN["embeddings"]], atol=1e-5)
    assert loaded_model_info(s)["architecture"] == "electra"


def test_rerank_equals_cross_encoder(reranker):
    assert_rerank_equals_classifier_goldens(reranker, RERANKER, GOLDEN["logits"], TEXTS[:3])


def test_relative_positions_are_refused_at_start():
    config = json.loads((EMBEDDER / "config.json").read_text())
    config["position_embedding_type"] = "relative_key"
    d = model_copy_with_config(EMBEDDER, "electra_relative", config)
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--encoder-model={d}")
    assert rc != 0
    assert f"{d}/config.json" in out and "position_embedding_type \"relative_key\"" in out, out
