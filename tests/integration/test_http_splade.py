"""SPLADE sparse embedding models served by the real binary (the tiny
random-weight masked-language models of tools/golden/splade_golden.py, saved
by sentence-transformers' SparseEncoder): TEI's /embed_sparse and gRPC
Encode against SparseEncoder.encode on the same directories (BERT with
SpladePooling max + relu, DistilBERT with max + log1p_relu), the dense
routes refusing them and /embed_sparse refusing a dense model, TEI's /info
and /embed_all."""
import json

import numpy as np
import pytest

from conftest import REPO, ServerProcess, http_get, post_json

MODELS = REPO / "tests/golden/encoder_models"
GOLDEN = json.loads((REPO / "tests/golden/encoder/splade_golden.json").read_text())
TEXTS = [c["text"] for c in GOLDEN["models"]["splade_tiny"]["cases"]]


@pytest.fixture(scope="module", params=["splade_tiny", "splade_distil_tiny"])
def splade(request):
    s = ServerProcess(f"--encoder-model={MODELS / request.param}", "--threads=2")
    s.model = request.param
    yield s
    s.close()


def dense(entries, vocab):
    out = np.zeros(vocab, dtype=np.float32)
    for e in entries:
        out[e["index"]] = e["value"]
    return out


def sparse_encoder_reference(model):
    st = pytest.importorskip("sentence_transformers")
    encoder = st.SparseEncoder(str(MODELS / model), device="cpu")
    return encoder.encode(TEXTS, convert_to_tensor=True).to_dense().numpy()


def test_embed_sparse_equals_sparse_encoder(splade):
    want = sparse_encoder_reference(splade.model)
    status, body = post_json(splade, "/embed_sparse", {"inputs": TEXTS, "truncate": True})
    assert status == 200, body
    assert len(body) == len(TEXTS)
    vocab = want.shape[1]
    for text, entries, row in zip(TEXTS, body, want):
        indices = [e["index"] for e in entries]
        assert indices == sorted(indices) and all(e["value"] > 0 for e in entries), text
        np.testing.assert_allclose(dense(entries, vocab), row, atol=1e-4, err_msg=text)
        assert 0 < len(entries) < vocab / 2, text  # sparse
    # One string, as TEI takes it.
    status, body = post_json(splade, "/embed_sparse", {"inputs": TEXTS[0]})
    assert status == 200, body
    np.testing.assert_allclose(dense(body[0], vocab), want[0], atol=1e-4)


def test_grpc_encode_answers_the_sparse_embedding(splade, pb, proto_modules):
    import grpc
    _, pb_grpc = proto_modules
    want = sparse_encoder_reference(splade.model)
    with grpc.insecure_channel(splade.grpc_target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        (info,) = stub.GetModelInfo(pb.GetModelInfoRequest()).models
        assert info.pooling == "splade"
        request = pb.EncodeRequest()
        for t in TEXTS:
            request.inputs.add(text=t)
        response = stub.Encode(request, timeout=60)
        for row, r in zip(want, response.results):
            assert len(r.embedding.values) == 0
            got = np.zeros(len(row), dtype=np.float32)
            got[list(r.sparse_embedding.indices)] = list(r.sparse_embedding.values)
            np.testing.assert_allclose(got, row, atol=1e-4)
        # A dense pooling asked of it: the hidden states pooled, no sparse vector.
        cls = pb.EncodeRequest(pooling=pb.POOLING_CLS)
        cls.inputs.add(text=TEXTS[0])
        r = stub.Encode(cls, timeout=60).results[0]
        assert len(r.embedding.values) == info.hidden_size and not r.HasField("sparse_embedding")


def test_dense_routes_refuse_a_splade_model(splade):
    status, body = post_json(splade, "/embed", {"inputs": "hello"})
    assert status == 400 and body["error"].startswith("/embed answers dense embeddings"), body
    assert "/embed_sparse" in body["error"]
    status, body = post_json(splade, "/v1/embeddings", {"input": "hello"})
    assert status == 400 and "SPLADE model" in body["error"]["message"], body
    status, body = post_json(splade, "/v1/score", {"text_1": "a", "text_2": "b"})
    assert status == 400 and "SPLADE model" in body["error"]["message"], body
    # Token states are the encoder's, dense whatever the pooling.
    status, body = post_json(splade, "/embed_all", {"inputs": "hello"})
    assert status == 200 and len(body[0][0]) == 32, body


def test_tei_info_names_splade_pooling(splade):
    status, raw = http_get(f"http://127.0.0.1:{splade.http_port}/info")
    assert status == 200, raw
    assert json.loads(raw)["model_type"] == {"embedding": {"pooling": "splade"}}


def test_embed_sparse_refuses_a_dense_model_and_bad_input(server_factory):
    s = server_factory(f"--encoder-model={MODELS / 'distilbert_tiny'}", "--threads=2")
    status, body = post_json(s, "/embed_sparse", {"inputs": "hello"})
    assert status == 400 and body["error"].startswith("/embed_sparse answers sparse embeddings"), body
    status, body = post_json(s, "/embed_sparse", {"inputs": []})
    assert status == 400 and "inputs" in body["error"], body
