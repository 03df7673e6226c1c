"""XLM-RoBERTa encoders served by the real binary (the tiny random-weight
models of tools/golden/xlmr_golden.py, with a real sentencepiece-trained
Unigram vocabulary and nmt_nfkc charsmap): OpenAI embeddings against
sentence-transformers' SentenceTransformer on the same directory, TEI's
/tokenize against Hugging Face tokenizers (ids and byte spans through the
Precompiled normalizer), and TEI's /rerank against sentence-transformers'
CrossEncoder on the XLMRobertaForSequenceClassification reranker."""
import json

import numpy as np
import pytest

from conftest import (REPO, assert_embeddings_equal_sentence_transformers, assert_rerank_equals_cross_encoder,
                      assert_tei_tokenize_equals_tokenizers, encoder_server, loaded_model_info, openai_embeddings,
                      post_json)

MODELS = REPO / "tests/golden/encoder_models"
EMBEDDER = MODELS / "xlmr_tiny"
RERANKER = MODELS / "xlmr_reranker_tiny"
GOLDEN = json.loads((REPO / "tests/golden/encoder/xlmr_golden.json").read_text())
# Multilingual texts with nothing sentence-transformers would strip.
TEXTS = [
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ and the ﬁ ligature",
    "what is the capital of france?",
]
QUERY = "what is the capital of france?"
DOCUMENTS = [
    "Paris is the capital and largest city of France.",
    "París es la capital de Francia.",
    "Berlin ist die Hauptstadt Deutschlands.",
    "Bananas are a good source of potassium.",
]


@pytest.fixture(scope="module")
def embedder():
    yield from encoder_server(EMBEDDER)


@pytest.fixture(scope="module")
def reranker():
    yield from encoder_server(RERANKER)


def test_embeddings_equal_sentence_transformers(embedder):
    assert_embeddings_equal_sentence_transformers(embedder, EMBEDDER, TEXTS, "xlmr_tiny")


def test_embeddings_keep_spaces_and_special_texts_as_tokenizer_json_reads_them(embedder):
    # The golden embeddings are transformers' on tokenizers' ids (spaces kept,
    # "<pad>" / "<mask>" in the text read as those tokens).
    cases = [c for c in GOLDEN["embeddings"] if c["text"] != c["text"].strip() or "<" in c["text"]]
    assert len(cases) >= 2
    status, body = post_json(embedder, "/embed", {"inputs": [c["text"] for c in cases], "normalize": False})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body), np.array([c["embedding"] for c in cases]), atol=1e-4)


def test_dimensions_equal_sentence_transformers_truncate_dim(embedder):
    st = pytest.importorskip("sentence_transformers")
    want = st.SentenceTransformer(str(EMBEDDER), device="cpu", truncate_dim=8).encode(TEXTS, convert_to_numpy=True)
    got, body = openai_embeddings(embedder, TEXTS, "xlmr_tiny", dimensions=8)
    np.testing.assert_allclose(got, want, atol=1e-4)
    status, body = post_json(embedder, "/v1/embeddings", {"input": TEXTS, "model": "xlmr_tiny", "dimensions": 33})
    assert status == 400 and "dimensions: 33 is outside [1, 32]" in body["error"]["message"], body


def test_tei_left_truncation_keeps_the_end_of_the_text(embedder):
    case = GOLDEN["left_truncation"]
    status, body = post_json(embedder, "/embed", {"inputs": case["text"], "normalize": False, "truncate": True,
                                                  "truncation_direction": "Left"})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body[0]), np.array(case["embedding"]), atol=1e-4)


def test_tei_prompt_name_equals_sentence_transformers(embedder):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(EMBEDDER), device="cpu")
    for name in ("query", "passage"):
        want = model.encode(TEXTS, prompt_name=name, normalize_embeddings=True, convert_to_numpy=True)
        status, body = post_json(embedder, "/embed", {"inputs": TEXTS, "prompt_name": name})
        assert status == 200, body
        np.testing.assert_allclose(np.array(body), want, atol=1e-4)
    status, body = post_json(embedder, "/embed", {"inputs": TEXTS, "prompt_name": "instruct"})
    assert status == 400 and body["error_type"] == "Validation", body
    assert "prompt_name \"instruct\" is not one of the model's prompts (passage, query)" in body["error"], body
    # gRPC's field through the native route: the same request message.
    status, body = post_json(embedder, "/v1/encode", {"inputs": [{"text": TEXTS[0]}], "promptName": "query"})
    assert status == 200, body
    np.testing.assert_allclose(np.array(body["results"][0]["embedding"]["values"]),
                               model.encode([TEXTS[0]], prompt_name="query")[0], atol=1e-4)


def test_tei_tokenize_equals_tokenizers(embedder):
    assert_tei_tokenize_equals_tokenizers(embedder, EMBEDDER,
                                          [c["text"] for c in GOLDEN["tokenizer"]["legacy"] if c["text"]])


def test_tei_rerank_equals_cross_encoder(reranker):
    want, body = assert_rerank_equals_cross_encoder(reranker, RERANKER, QUERY, DOCUMENTS)
    assert [r["index"] for r in body] == list(np.argsort(-want, kind="stable"))


def test_model_info_names_the_architecture_and_limit(embedder):
    info = loaded_model_info(embedder)
    assert info["architecture"] == "xlm-roberta", info
    # 66 position rows less RoBERTa's padding offset.
    assert info["max_positions"] == info["max_input_tokens"] == GOLDEN["max_tokens"], info
