"""DeBERTa-v2 / v3 encoders (deberta-v3's, mdeberta's and the rerankers
fine-tuned from them, such as the NLI cross-encoders and mxbai-rerank-v1)
served by the real binary from Hugging Face directories: the tiny
random-weight models of tools/golden/deberta_golden.py against
sentence-transformers run here on the same directories (SentenceTransformer
for the embedders, CrossEncoder for the reranker), the golden logits, and a
variant the encoder does not run refused at start naming the key."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, assert_rerank_equals_classifier_goldens,
                      encoder_server, loaded_model_info, model_copy_with_config)
from test_server_lifecycle import start_failure

MODELS = REPO / "tests/golden/encoder_models"
V3 = MODELS / "deberta_v3_tiny"
V2 = MODELS / "deberta_v2_tiny"
RERANKER = MODELS / "deberta_v3_reranker_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/deberta_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["v3_embeddings"]]


@pytest.fixture(scope="module")
def v3():
    yield from encoder_server(V3)


@pytest.fixture(scope="module")
def reranker():
    yield from encoder_server(RERANKER)


def test_v3_embeddings_equal_sentence_transformers(v3):
    want, body = assert_embeddings_equal_sentence_transformers(v3, V3, TEXTS, "deberta_v3_tiny")
    np.testing.assert_allclose(want, [c["embedding"] for c in GOLDEN["v3_embeddings"]], atol=1e-5)
    # The long text is cut at the limit, as sentence-transformers cuts it.
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["v3_embeddings"])


def test_v2_branches_equal_sentence_transformers(server_factory):
    s = server_factory(f"--encoder-model={V2}", "--threads=2")
    assert_embeddings_equal_sentence_transformers(s, V2, TEXTS, "deberta_v2_tiny")


def test_model_info_names_the_architecture_and_limit(v3):
    info = loaded_model_info(v3)
    assert info["architecture"] == "deberta-v2", info
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info


def test_rerank_equals_cross_encoder(reranker):
    assert_rerank_equals_classifier_goldens(reranker, RERANKER, GOLDEN["logits"], TEXTS[:3])


def test_convolution_layer_is_refused_at_start():
    config = json.loads((V3 / "config.json").read_text())
    config["conv_kernel_size"] = 3
    d = model_copy_with_config(V3, "deberta_conv", config)
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--encoder-model={d}")
    assert rc != 0
    assert f"{d}/config.json" in out and "conv_kernel_size 3 is not supported" in out, out
