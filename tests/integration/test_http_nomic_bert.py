"""Nomic BERT (nomic-embed-text's architecture) served by the real binary from
a Hugging Face directory: the tiny random-weight model of
tools/golden/nomic_bert_golden.py with its config.json in the hub's layout
(Nomic's remote-code keys, which sentence-transformers cannot read offline)
against the golden vectors sentence-transformers gave, TEI's prompt_name
with the model's own prompts (search_query: ...), the same weights under
transformers 5's config layout against SentenceTransformer itself, and a
variant the encoder does not run refused at start naming the key."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, encoder_server, loaded_model_info,
                      model_copy_with_config, openai_embeddings, post_json)
from test_server_lifecycle import start_failure

MODEL = REPO / "tests/golden/encoder_models/nomic_bert_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/nomic_bert_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(MODEL)


def test_embeddings_equal_sentence_transformers_golden(embedder):
    got, body = openai_embeddings(embedder, TEXTS, "nomic_bert_tiny")
    want = np.array([c["embedding"] for c in GOLDEN["embeddings"]])
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_tei_prompt_name_prepends_the_models_prompt(embedder):
    for case in GOLDEN["prompted"]:
        status, body = post_json(embedder, "/embed", {"inputs": [case["text"]], "prompt_name": case["prompt_name"]})
        assert status == 200, body
        want = GOLDEN["embeddings"][case["index"]]["embedding"]
        np.testing.assert_allclose(body[0], want, atol=1e-4)
    status, body = post_json(embedder, "/embed", {"inputs": ["x"], "prompt_name": "no_such_prompt"})
    assert status == 400 and "no_such_prompt" in json.dumps(body), body


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "nomic_bert", info
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info
    assert info["max_positions"] == 128, info


def test_transformers_layout_equals_sentence_transformers(server_factory):
    d = model_copy_with_config(MODEL, "nomic_bert_transformers_layout", GOLDEN["transformers_config"])
    s = server_factory(f"--encoder-model={d}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, d, TEXTS, "nomic_bert_transformers_layout")


def test_dynamic_ntk_scaling_is_refused_at_start():
    config = json.loads((MODEL / "config.json").read_text())
    config["rotary_scaling_factor"] = 2.0
    d = model_copy_with_config(MODEL, "nomic_bert_ntk", config)
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--encoder-model={d}")
    assert rc != 0
    assert f"{d}/config.json" in out and "rotary_scaling_factor 2" in out, out
