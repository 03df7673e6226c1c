"""GTE encoders (gte-base-en-v1.5's and gte-multilingual-reranker-base's
architecture) served by the real binary from Hugging Face directories: the
tiny random-weight models of tools/golden/gte_golden.py with their configs
in the hub's remote-code layout (`model_type` "new", which
sentence-transformers cannot read offline) against the golden vectors and
logits transformers gave (NTK-scaled rotary frequencies, CLS pooling; the
reranker's tensors under "new."), the same embedder weights under
transformers 5's layout against SentenceTransformer itself, and a variant
the encoder does not run refused at start naming the key."""
import json
import math

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, encoder_server, loaded_model_info,
                      model_copy_with_config, openai_embeddings, post_json)
from test_server_lifecycle import start_failure

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "gte_tiny"
RERANKER = MODELS / "gte_reranker_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/gte_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


def test_embeddings_equal_transformers_with_ntk_scaling(embedder):
    got, body = openai_embeddings(embedder, TEXTS, "gte_tiny")
    want = np.array([c["embedding"] for c in GOLDEN["embeddings"]])
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "new", info
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info
    assert info["max_positions"] == 128, info


def test_transformers_layout_equals_sentence_transformers(server_factory):
    d = model_copy_with_config(EMBEDDER, "gte_transformers_layout", GOLDEN["transformers_config"])
    s = server_factory(f"--encoder-model={d}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, d, TEXTS, "gte_transformers_layout")


def test_tei_rerank_scores_are_the_classifiers_logits(server_factory):
    s = server_factory(f"--encoder-model={RERANKER}", "--threads=2")
    pairs = [c for c in GOLDEN["logits"] if c["text_pair"] is not None]
    assert pairs
    for case in pairs:
        for raw in (True, False):
            status, body = post_json(s, "/rerank", {"query": case["text"], "texts": [case["text_pair"]],
                                                    "raw_scores": raw})
            assert status == 200, body
            logit = case["logits"][0]
            want = logit if raw else 1 / (1 + math.exp(-logit))
            assert body[0]["score"] == pytest.approx(want, abs=1e-4), (case, raw)


def test_absolute_positions_are_refused_at_start():
    config = json.loads((EMBEDDER / "config.json").read_text())
    config["position_embedding_type"] = "absolute"
    d = model_copy_with_config(EMBEDDER, "gte_absolute", config)
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--encoder-model={d}")
    assert rc != 0
    assert f"{d}/config.json" in out and "position_embedding_type \"absolute\"" in out, out
