"""JinaBERT (jina-embeddings-v2's architecture: ALiBi, GeGLU) served by the
real binary, from the Hugging Face directory (its config in the hub's
layout: `model_type` "bert" with `position_embedding_type` "alibi") and
from llama.cpp's jina-bert-v2 GGUF file of the same weights, against
tools/golden/jina_bert_golden.py's reference (a numpy transcription of
Jina's forward, checked by the script against llama.cpp); and a variant the
encoder does not run refused at start naming the key."""
import json

import numpy as np
import pytest

from conftest import REPO, encoder_server, loaded_model_info, model_copy_with_config, openai_embeddings
from test_server_lifecycle import start_failure

MODELS = REPO / "tests/golden/encoder_models"
MODEL = MODELS / "jina_bert_tiny"
GGUF = MODELS / "jina_bert_tiny.gguf"
FUSED_GGUF = MODELS / "jina_bert_fused_tiny.gguf"
GOLDEN = json.loads((REPO / "tests/golden/encoder/jina_bert_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["embeddings"]]
WANT = np.array([c["embedding"] for c in GOLDEN["embeddings"]])


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(MODEL)


def test_embeddings_equal_the_reference(embedder):
    got, body = openai_embeddings(embedder, TEXTS, "jina_bert_tiny")
    np.testing.assert_allclose(got, WANT, atol=1e-4)
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in GOLDEN["embeddings"])


def test_model_info_names_the_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["max_input_tokens"] == GOLDEN["max_tokens"], info
    assert info["max_positions"] == 256, info


@pytest.mark.parametrize("gguf", [GGUF, FUSED_GGUF], ids=["split_ffn", "fused_ffn_up"])
def test_gguf_file_gives_the_same_embeddings(server_factory, gguf):
    s = server_factory(f"--encoder-model={gguf}", "--threads=2")
    got, _ = openai_embeddings(s, TEXTS, "jina_bert_tiny")
    np.testing.assert_allclose(got, WANT, atol=1e-4)
    assert loaded_model_info(s)["architecture"] == "jina-bert-v2"


def test_reglu_is_refused_at_start():
    config = json.loads((MODEL / "config.json").read_text())
    config["feed_forward_type"] = "reglu"
    out_dir = model_copy_with_config(MODEL, "jina_bert_reglu", config)
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--encoder-model={out_dir}")
    assert rc != 0
    assert f"{out_dir}/config.json" in out and "feed_forward_type \"reglu\"" in out, out
