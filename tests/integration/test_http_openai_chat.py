"""Chat completions against the real binary and stories260K: the official
`openai` client on /v1/chat/completions, and gRPC Generate's chat prompt.

The server is given a copy of stories260K's GGUF whose tokenizer.chat_template
is Llama-2-chat's published template (written in with gguf's own
gguf_new_metadata), so it must recognise the template by itself. The
references are independent of attnserve's chat code: the prompt ids are
transformers' rendering of that template tokenized by the sentencepiece
library (tests/golden/chat_templates/renders.json, from
tools/golden/chat_templates.py), and the answers must equal the native API's
greedy continuation of exactly those ids."""
import json
import subprocess
import sys

import grpc
import pytest

from conftest import REPO, ServerProcess, http_get, metric

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
LLAMA2 = GOLDEN["templates"]["llama2"]["jinja"]
PROMPTS = {c["conversation"]: c for c in GOLDEN["stories260K_llama2_ids"]}


@pytest.fixture(scope="module")
def chat_gguf():
    # Under the checkout: the server runs in the project's Debian root, which
    # sees the checkout but not this machine's /tmp.
    out = REPO / ".cache/test-data/stories260K-llama2-chat.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", "--force", "--chat-template", LLAMA2,
                    str(DECODER), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def server(chat_gguf):
    s = ServerProcess(f"--decoder-model={chat_gguf}", "--threads=2", "--decoder-context-length=512")
    yield s
    s.close()


def native_greedy(server, ids, max_new_tokens, logprobs=0):
    """The native API's greedy continuation of `ids`: (text, response json)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    sampling = {"max_new_tokens": max_new_tokens, "temperature": 0}
    if logprobs:
        sampling.update({"logprobs": True, "top_logprobs": logprobs})
    conn.request("POST", "/v1/generate", body=json.dumps({"token_ids": {"ids": ids}, "sampling": sampling}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 200, body
    return body.get("text", ""), body


def test_the_models_own_template_is_recognised(server):
    status, body = http_get(server.url("/v1/model_info"))
    assert status == 200
    assert json.loads(body)["models"][0]["chat_template"] == "llama2"
    assert "chat template: llama2 (the model's own)" in server.output()


@pytest.mark.parametrize("conversation", ["system_and_user", "no_system", "whitespace_unicode"])
def test_chat_answer_is_the_greedy_continuation_of_the_reference_prompt(server, client, conversation):
    case = PROMPTS[conversation]
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=24,
                                       temperature=0)
    expected, _ = native_greedy(server, case["ids"], 24)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == expected
    assert r.choices[0].finish_reason in ("length", "stop")
    assert r.usage.prompt_tokens == len(case["ids"])


def test_continue_final_message_continues_the_assistants_words(server, client):
    case = PROMPTS["partial_answer"]
    assert case["continue_final_message"] and case["text"].endswith("The colour is ")
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=12,
                                       temperature=0,
                                       extra_body={"continue_final_message": True, "add_generation_prompt": False})
    expected, _ = native_greedy(server, case["ids"], 12)
    assert r.choices[0].message.content == expected
    assert r.usage.prompt_tokens == len(case["ids"])


def test_stream_opens_with_the_role_and_adds_up_to_the_answer(server, client):
    case = PROMPTS["no_system"]
    whole = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=20,
                                           temperature=0)
    chunks = list(client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=20,
                                                 temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == len(case["ids"])


def test_continuous_usage_stats_in_a_chat_stream(server, client):
    """vLLM's continuous usage on chat: the role chunk counts the prompt and
    no completion tokens, each later chunk the tokens so far."""
    case = PROMPTS["no_system"]
    chunks = list(client.chat.completions.create(
        model="stories260K", messages=case["messages"], max_tokens=10, temperature=0, stream=True, logprobs=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True}))
    prompt = len(case["ids"])
    assert (chunks[0].usage.prompt_tokens, chunks[0].usage.completion_tokens) == (prompt, 0)
    made = 0
    for c in chunks[1:-1]:
        made += len(c.choices[0].logprobs.content)
        assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens) == (prompt, made, prompt + made)
    assert made == chunks[-1].usage.completion_tokens == 10


def test_logprobs_are_the_native_apis(server, client):
    case = PROMPTS["system_and_user"]
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=6,
                                       temperature=0, logprobs=True, top_logprobs=3)
    _, native = native_greedy(server, case["ids"], 6, logprobs=3)
    positions = native["logprobs"]
    content = r.choices[0].logprobs.content
    assert len(content) == len(positions) == r.usage.completion_tokens
    for got, want in zip(content, positions):
        assert got.logprob == pytest.approx(want["logprob"], abs=1e-6)
        assert [t.logprob for t in got.top_logprobs] == pytest.approx([t["logprob"] for t in want["top"]], abs=1e-6)
        assert got.top_logprobs[0].token == got.token  # greedy: the chosen token is the most likely
        assert bytes(got.bytes) == got.token.encode()


def test_vllm_prompt_logprobs_score_the_chat_prompt_once(server, client):
    """vLLM's prompt_logprobs on a chat: the response's "prompt_logprobs"
    covers the reference prompt's ids (null first), each entry the prompt
    token and the k best, and the scores are the native API's."""
    case = PROMPTS["system_and_user"]
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=2,
                                       temperature=0, n=2, extra_body={"prompt_logprobs": 2})
    scores = r.model_extra["prompt_logprobs"]
    assert len(scores) == len(case["ids"]) == r.usage.prompt_tokens // 2 and scores[0] is None
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/generate", body=json.dumps({"token_ids": {"ids": case["ids"]}, "sampling": {
        "max_new_tokens": 1, "temperature": 0, "prompt_logprobs": True, "prompt_top_logprobs": 2}}),
        headers={"Content-Type": "application/json"})
    native = json.loads(conn.getresponse().read())["prompt_tokens"]
    for got, want in zip(scores[1:], native[1:]):
        own = got[str(want["token_id"])]
        assert own["logprob"] == pytest.approx(want["logprobs"]["logprob"], abs=1e-6)
        assert own["rank"] == want["logprobs"]["rank"] >= 1
        best = [t["token_id"] for t in want["logprobs"]["top"]]
        assert len(best) == 2 and {int(k) for k in got} == set(best) | {want["token_id"]}
        for rank, token in enumerate(best, 1):
            if token != want["token_id"]:
                assert got[str(token)]["rank"] == rank


def test_vllm_return_token_ids_on_a_chat(server, client):
    """vLLM's return_token_ids on a chat: "prompt_token_ids" is the reference
    rendering's ids (transformers + sentencepiece), "token_ids" the native
    API's greedy answer to them, unstreamed and streamed (the prompt's ids
    on the role chunk)."""
    case = PROMPTS["system_and_user"]
    _, native = native_greedy(server, case["ids"], 8)
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8, temperature=0,
                                       extra_body={"return_token_ids": True})
    assert r.model_extra["prompt_token_ids"] == case["ids"]
    assert r.choices[0].model_extra["token_ids"] == native["token_ids"]
    chunks = list(client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8,
                                                 temperature=0, stream=True, extra_body={"return_token_ids": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra["prompt_token_ids"] == case["ids"]
    assert not any(c.model_extra.get("prompt_token_ids") for c in chunks[1:])
    assert [i for c in chunks[1:] for i in c.choices[0].model_extra["token_ids"]] == native["token_ids"]


def test_n_choices_each_answer(server, client):
    case = PROMPTS["system_and_user"]
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8, n=2,
                                       temperature=0)
    expected, _ = native_greedy(server, case["ids"], 8)
    assert [c.index for c in r.choices] == [0, 1]
    assert [c.message.content for c in r.choices] == [expected, expected]
    assert r.usage.prompt_tokens == 2 * len(case["ids"])


def test_what_the_template_or_the_server_refuses_is_a_400_naming_it(client):
    openai = pytest.importorskip("openai")
    cases = [
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], {},
         "chat.messages[1]: Conversation roles must alternate user/assistant/user/assistant/... "
         "(the llama2 chat template)"),
        ([{"role": "tool", "content": "42", "tool_call_id": "x"}], {}, "messages[0].role: not supported"),
        ([{"role": "user", "content": "a"}], {"tools": [{"type": "function", "function": {"name": "f"}}]},
         "tool_choice: not supported (\"auto\" (OpenAI's default once tools are given) needs a tool-call parser"),
        ([{"role": "user", "content": "a"}], {"tools": [{"type": "function", "function": {"name": "f"}}],
                                              "tool_choice": {"type": "function", "function": {"name": "g"}}},
         "tool_choice.function.name: \"g\" is not one of the tools"),
        ([{"role": "user", "content": "a"}], {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "string", "format": "idn-email"}}}}}], "tool_choice": "required"},
         "items.anyOf[0].properties.parameters.properties.x: 'format' \"idn-email\" is not supported"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}], {},
         "messages[0].content[0].type: not supported"),
    ]
    for messages, extra, message in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="stories260K", messages=messages, max_tokens=4, **extra)
        assert message in str(e.value), str(e.value)


def test_grpc_generate_takes_a_chat_prompt(server, proto_modules):
    pb, pb_grpc = proto_modules
    case = PROMPTS["system_and_user"]
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        request = pb.GenerateRequest(
            chat=pb.ChatPrompt(messages=[pb.ChatMessage(role=m["role"], content=m["content"])
                                         for m in case["messages"]]),
            sampling=pb.SamplingParams(max_new_tokens=10, temperature=0))
        messages = list(stub.Generate(request, timeout=60))
        expected, _ = native_greedy(server, case["ids"], 10)
        assert "".join(m.text for m in messages) == expected
        assert messages[-1].usage.prompt_tokens == len(case["ids"])
        # Without a token limit a chat may run to the end of the context.
        unlimited = list(stub.Generate(pb.GenerateRequest(chat=request.chat, sampling=pb.SamplingParams(
            temperature=0, ignore_eos=True)), timeout=120))
        assert sum(len(m.token_ids) for m in unlimited) == 512 - len(case["ids"])


@pytest.fixture(scope="module")
def plain_server():
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=512")
    yield s
    s.close()


def test_without_a_template_chat_is_refused_naming_the_flag(plain_server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=plain_server.url("/v1"), api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Hi"}])
    assert "the model has no chat template; start the server with --chat-template=" in str(e.value)
    status, body = http_get(plain_server.url("/v1/model_info"))
    assert json.loads(body)["models"][0].get("chat_template", "") == ""
    # The completions door is unaffected.
    r = client.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=4, temperature=0)
    assert r.choices[0].text


def test_tokenize_counts_a_chats_prompt_tokens(server):
    import http.client
    case = PROMPTS["llama_cpp"]

    def tokenize(body):
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        conn.request("POST", "/v1/tokenize", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())

    status, body = tokenize({"model": "MODEL_KIND_DECODER", "chat": {"messages": case["messages"]}})
    assert status == 200, body
    assert body["token_ids"] == case["ids"]
    status, body = tokenize({"chat": {"messages": case["messages"]}, "text": "also"})
    assert status == 400 and "chat: give either text or chat" in body["error"]["message"]
    status, body = tokenize({"chat": {"messages": [{"role": "user", "content": "a"},
                                                   {"role": "user", "content": "b"}]}})
    assert status == 400 and "chat.messages[1]" in body["error"]["message"]


def test_huggingface_hub_chat_completion(server):
    """huggingface_hub's InferenceClient.chat_completion, as written for TGI's
    OpenAI-compatible route, streaming and not."""
    hub = pytest.importorskip("huggingface_hub")
    client = hub.InferenceClient(base_url=server.url(""))
    case = PROMPTS["no_system"]
    expected, _ = native_greedy(server, case["ids"], 16)
    out = client.chat_completion(messages=case["messages"], max_tokens=16, temperature=0)
    assert out.choices[0].message.content == expected
    assert out.usage.prompt_tokens == len(case["ids"])
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       client.chat_completion(messages=case["messages"], max_tokens=16, temperature=0, stream=True)
                       if c.choices)
    assert streamed == expected


def test_a_repeated_conversation_takes_its_prompt_from_the_prefix_cache(server, client):
    """A chat's next request (the same system prompt and history) finds the
    earlier prompt's full blocks still cached after it ended."""
    from conftest import metric, wait_for_metric
    case = PROMPTS["llama_cpp"]
    hits = "attnserve_prefix_cache_hit_tokens_total"
    first = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8,
                                           temperature=0)
    wait_for_metric(server, "attnserve_running_sequences", 0)
    h0 = metric(server, hits, default=0.0)
    again = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8,
                                           temperature=0)
    # Every full 16-token block but the one holding the last prompt token.
    assert metric(server, hits) - h0 == (len(case["ids"]) - 1) // 16 * 16
    assert again.choices[0].message.content == first.choices[0].message.content
    # OpenAI's usage field for it, read by the openai client.
    assert again.usage.prompt_tokens_details.cached_tokens == (len(case["ids"]) - 1) // 16 * 16


def test_a_stream_of_two_choices_opens_each_with_its_role(server, client):
    case = PROMPTS["system_and_user"]
    expected, _ = native_greedy(server, case["ids"], 6)
    chunks = list(client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=6,
                                                 temperature=0, n=2, stream=True))
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
        assert mine[0].delta.role == "assistant" and mine[0].delta.content == ""
        assert all(c.delta.role is None for c in mine[1:])
        assert "".join(c.delta.content or "" for c in mine) == expected
        assert [c.finish_reason for c in mine if c.finish_reason] == ["length"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 12


QWEN2_TINY = REPO / "tests/golden/decoder_models/qwen2_tiny"


@pytest.fixture(scope="module")
def qwen_server():
    # A tiny random Qwen2 (Hugging Face directory) whose vocabulary has
    # <|im_end|> (id 2) as a special token apart from its EOS (<|endoftext|>,
    # id 0): served in the qwen2 chat format.
    s = ServerProcess(f"--decoder-model={QWEN2_TINY}", "--threads=1", "--chat-template=qwen2")
    yield s
    s.close()


def test_a_chat_ends_at_the_formats_end_of_turn_token(qwen_server):
    """logit_bias makes <|im_end|> the only likely token: a chat answer ends
    there as at EOS (finish_reason "stop", no stop_reason), while a plain
    completion with the same bias runs on, since it is not the model's EOS."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=qwen_server.url("/v1"), api_key="unused", max_retries=0)
    assert "a chat's answer also ends at token 2 <|im_end|>" in qwen_server.output()
    chat = client.chat.completions.create(model="qwen2_tiny", messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=8, temperature=0, logit_bias={"2": 100})
    assert chat.choices[0].finish_reason == "stop"
    assert chat.choices[0].model_extra["stop_reason"] is None
    assert chat.usage.completion_tokens == 1
    plain = client.completions.create(model="qwen2_tiny", prompt="hi", max_tokens=8, temperature=0,
                                      logit_bias={"2": 100})
    assert plain.choices[0].finish_reason == "length" and plain.usage.completion_tokens == 8
    # ignore_eos keeps a chat going past it too.
    on = client.chat.completions.create(model="qwen2_tiny", messages=[{"role": "user", "content": "hi"}],
                                        max_tokens=8, temperature=0, logit_bias={"2": 100},
                                        extra_body={"ignore_eos": True})
    assert on.usage.completion_tokens == 8


# JSON mode. stories260K writes stories, not objects, so a bias towards the
# byte token "}" (<0x7D>, id 128) lets its answers close; the checks do not
# depend on which text it writes: Python's json module is the judge.
BRACE_BIAS = {"128": 10}


def test_json_object_response_format_answers_with_one_json_object(server, client):
    case = PROMPTS["system_and_user"]
    plain = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=48,
                                           temperature=0, logit_bias=BRACE_BIAS)
    with pytest.raises(ValueError):
        json.loads(plain.choices[0].message.content)  # without the constraint: no JSON
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=400,
                                       temperature=0, logit_bias=BRACE_BIAS,
                                       response_format={"type": "json_object"})
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    assert isinstance(json.loads(choice.message.content), dict), choice.message.content
    # The native API and gRPC's field give the same answer for the same ids.
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    sampling = {"max_new_tokens": 400, "temperature": 0, "logit_bias": BRACE_BIAS,
                "response_format": "RESPONSE_FORMAT_JSON_OBJECT"}
    conn.request("POST", "/v1/generate", body=json.dumps({"token_ids": {"ids": case["ids"]}, "sampling": sampling}),
                 headers={"Content-Type": "application/json"})
    native = json.loads(conn.getresponse().read())
    assert native["text"] == choice.message.content
    # Streamed, the deltas add up to the same object.
    chunks = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=400,
                                            temperature=0, logit_bias=BRACE_BIAS,
                                            response_format={"type": "json_object"}, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == choice.message.content
    # The token table and the masks it cached are accounted for.
    assert metric(server, "attnserve_json_mask_bytes") > 512 * 2


def test_json_object_sampled_answers_are_json_or_cut_by_the_token_limit(server, client):
    closed = 0
    for seed in range(8):
        r = client.completions.create(model="stories260K", prompt="Lily said", max_tokens=120, temperature=1.0,
                                      seed=seed, logit_bias=BRACE_BIAS,
                                      extra_body={"response_format": {"type": "json_object"}})
        choice = r.choices[0]
        if choice.finish_reason == "stop":
            assert isinstance(json.loads(choice.text), dict), choice.text
            closed += 1
        else:
            assert choice.finish_reason == "length"
            assert r.usage.completion_tokens == 120
            with pytest.raises(ValueError):
                json.loads(choice.text)
    assert closed > 0


def test_guided_regex_holds_the_whole_answer(server, client):
    """vLLM's guided_regex (and structured_outputs.regex): the answer matches
    the regex whole; it may end once it matches (finish "stop")."""
    import re
    regex = r"(Once|One day), [a-z]+( [a-z]+){2,6}\."
    r = client.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=40, temperature=0,
                                  extra_body={"guided_regex": regex})
    assert r.choices[0].finish_reason == "stop", r.choices[0].text
    assert re.fullmatch(regex, r.choices[0].text), r.choices[0].text
    for seed in range(3):
        case = PROMPTS["system_and_user"]
        r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=24,
                                           temperature=1.0, seed=seed,
                                           extra_body={"structured_outputs": {"regex": r"\d{4}-\d{2}-\d{2}|unknown"}})
        assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}|unknown", r.choices[0].message.content)
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="stories260K", prompt="x", max_tokens=4, extra_body={"guided_regex": "a(?=b)"})
    assert "regex: at offset 3" in str(e.value), str(e.value)


def test_guided_choice_answers_with_one_of_the_choices(server, client):
    choices = [" Lily", " Tom", " a dragon", " Sue and her dog"]
    for seed in range(6):
        r = client.completions.create(model="stories260K", prompt="Once upon a time, there was", max_tokens=16,
                                      temperature=1.2, seed=seed, extra_body={"guided_choice": choices})
        assert r.choices[0].text in choices, r.choices[0].text
        assert r.choices[0].finish_reason == "stop"
    # vLLM's newer spelling, on chat, streamed: the deltas add up to a choice.
    case = PROMPTS["system_and_user"]
    chunks = client.chat.completions.create(model="stories260K", messages=case["messages"], temperature=0,
                                            stream=True, extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text in ("yes", "no")
    # The same over gRPC's proto fields, through the native JSON door.
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    sampling = {"max_new_tokens": 16, "temperature": 0, "response_format": "RESPONSE_FORMAT_CHOICE",
                "choice": choices}
    conn.request("POST", "/v1/generate", body=json.dumps({"text": "Once upon a time, there was", "sampling": sampling}),
                 headers={"Content-Type": "application/json"})
    native = json.loads(conn.getresponse().read())
    assert native["text"] in choices, native


PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "pet": {"enum": ["cat", "dog", None]},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name", "age", "pet"], "additionalProperties": False}


def test_json_schema_response_format_answers_with_an_instance_of_the_schema(server, client):
    import jsonschema
    case = PROMPTS["system_and_user"]
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
    # Byte tokens 37 '"' and 96 ']' favoured: the story model's strings and
    # arrays then end within the limit.
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=200,
                                       temperature=0, logit_bias={"37": 6, "96": 10}, response_format=fmt)
    content = r.choices[0].message.content
    assert r.choices[0].finish_reason == "stop", content
    value = json.loads(content)
    jsonschema.validate(value, PERSON)
    # Written the one way: json.dumps' separators, the schema's property order.
    assert content == json.dumps(value, ensure_ascii=False), content
    assert list(value)[:3] == ["name", "age", "pet"]
    # Sampled answers, on /v1/completions through vLLM's guided_json.
    for seed in range(4):
        r = client.completions.create(model="stories260K", prompt="Lily said", max_tokens=200, temperature=1.0,
                                      seed=seed, logit_bias={"37": 6}, extra_body={"guided_json": PERSON})
        if r.choices[0].finish_reason == "stop":
            jsonschema.validate(json.loads(r.choices[0].text), PERSON)
    # A pattern holds a string to it, whole (as xgrammar reads one).
    import re
    coded = {"type": "object", "properties": {"code": {"type": "string", "pattern": "[A-Z]{2}-\\d{3}"},
                                              "tags": {"type": "array", "maxItems": 3,
                                                       "items": {"type": "string", "pattern": "#[a-z]{1,8}"}}},
             "required": ["code", "tags"]}
    whole = 0
    for seed in range(3):
        r = client.completions.create(model="stories260K", prompt="Lily said", max_tokens=60, temperature=1.0,
                                      seed=seed, extra_body={"guided_json": coded})
        if r.choices[0].finish_reason == "stop":
            whole += 1
            value = json.loads(r.choices[0].text)
            assert re.fullmatch(r"[A-Z]{2}-\d{3}", value["code"]), value
            assert len(value["tags"]) <= 3 and all(re.fullmatch(r"#[a-z]{1,8}", t) for t in value["tags"]), value
    assert whole > 0
    # What the schema mode does not implement is a 400 naming it.
    openai = pytest.importorskip("openai")
    bad = {"type": "json_schema", "json_schema": {"name": "p", "schema": {
        "type": "object", "properties": {"code": {"type": "string", "format": "idn-email"}}}}}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8,
                                       response_format=bad)
    assert "properties.code: 'format' \"idn-email\" is not supported" in str(e.value), str(e.value)


def test_openai_parse_helper_with_a_pydantic_model(server, client):
    """The openai client's structured-output helper: a pydantic model (a
    nested model by $ref, Optional fields as anyOf with null, an enum,
    bounds on a string's length, an integer and a list) sent as a strict
    json_schema, the answer read back (and so validated) into the model."""
    import enum
    from typing import List, Optional

    import pydantic

    class Color(str, enum.Enum):
        red = "red"
        green = "green"

    class Pet(pydantic.BaseModel):
        name: str
        color: Color

    class Person(pydantic.BaseModel):
        name: str = pydantic.Field(max_length=16)
        age: Optional[int] = pydantic.Field(ge=0, le=120)
        best: Optional[Pet]
        pets: List[Pet] = pydantic.Field(max_length=2)

    case = PROMPTS["system_and_user"]
    # Byte tokens 37 '"' and 96 ']' favoured: the story model's strings and
    # arrays then end within the limit; 126 '{' makes it write the nested
    # model rather than null.
    r = client.chat.completions.parse(model="stories260K", messages=case["messages"], max_tokens=250,
                                      temperature=0, logit_bias={"37": 6, "96": 13, "126": 11},
                                      response_format=Person)
    message = r.choices[0].message
    assert r.choices[0].finish_reason == "stop", message.content
    person = message.parsed
    assert isinstance(person, Person), message.content
    assert isinstance(person.best, Pet) and person.best.color in (Color.red, Color.green), message.content
    # The story model writes long strings and big numbers unless held.
    assert len(person.name) <= 16 and (person.age is None or 0 <= person.age <= 120), message.content
    assert message.content == json.dumps(person.model_dump(mode="json"), ensure_ascii=False), message.content
    # A recursive model (a reply thread) is unrolled 8 levels deep: the
    # answer is read back into it; '{' favoured, so the story model nests
    # as deep as it may.
    class Comment(pydantic.BaseModel):
        text: str = pydantic.Field(max_length=12)
        reply: Optional["Comment"]

    r = client.chat.completions.parse(model="stories260K", messages=case["messages"], max_tokens=400,
                                      temperature=0, logit_bias={"37": 6, "126": 30}, response_format=Comment)
    message = r.choices[0].message
    assert r.choices[0].finish_reason == "stop", message.content
    comment, levels = message.parsed, 0
    while comment is not None:
        assert isinstance(comment, Comment), message.content
        comment, levels = comment.reply, levels + 1
    # The openai client writes the top model inline, beside its $defs copy,
    # which is unrolled 8 deep under it: 9 levels, the last one's reply null.
    assert levels == 9, message.content


def test_openai_parse_with_formats_and_lengths(server, client):
    """pydantic's EmailStr, AnyUrl with a length limit, IPv6Address and
    timedelta become formats email, uri (with minLength 1 and maxLength),
    ipv6 and duration; the answer held to them is read back by pydantic's own
    validators (email-validator, the url crate, ipaddress, its duration
    parser). The story model would write an email's local part and a
    duration's digits until the token limit: maxLength beside a format
    (which xgrammar drops) ends them."""
    import datetime
    import ipaddress
    from typing import Annotated

    import pydantic

    class Contact(pydantic.BaseModel):
        email: Annotated[pydantic.EmailStr, pydantic.Field(max_length=20)]
        site: Annotated[pydantic.AnyUrl, pydantic.UrlConstraints(max_length=24)]
        server: ipaddress.IPv6Address
        wait: Annotated[datetime.timedelta, pydantic.Field(json_schema_extra={"maxLength": 7})]

    schema = Contact.model_json_schema()
    assert schema["properties"]["site"] == {"format": "uri", "maxLength": 24, "minLength": 1, "title": "Site",
                                            "type": "string"}, schema
    # Byte tokens 67 '@', 37 '"' and 467 ':' favoured, so each field gets
    # past its first part.
    r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Tell me a story."}],
                                      max_tokens=300, temperature=0, logit_bias={"67": 30, "37": 12, "467": 10},
                                      response_format=Contact)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    contact = choice.message.parsed
    assert isinstance(contact, Contact), choice.message.content
    raw = json.loads(choice.message.content)
    assert len(raw["email"]) <= 20 and len(raw["site"]) <= 24 and len(raw["wait"]) <= 7, raw
    assert isinstance(contact.server, ipaddress.IPv6Address) and isinstance(contact.wait, datetime.timedelta), raw


def test_openai_parse_with_bounded_floats(server, client):
    """pydantic's bounds on floats (Field(ge=, le=), gt=, lt=, confloat)
    become minimum / maximum / exclusiveMinimum / exclusiveMaximum of
    numbers; the answer is read back (and so validated) by pydantic. Written
    as xgrammar writes a bounded number: no exponent, at most six fractional
    digits, so the story model cannot run on writing digits."""
    import re
    from typing import Optional

    import pydantic

    class Reading(pydantic.BaseModel):
        confidence: float = pydantic.Field(ge=0, le=1)
        celsius: float = pydantic.Field(gt=-40, lt=60.5)
        debt: pydantic.confloat(le=-0.25)
        lat: Optional[float] = pydantic.Field(ge=-90, le=90)

    schema = Reading.model_json_schema()
    assert schema["properties"]["celsius"] == {"exclusiveMaximum": 60.5, "exclusiveMinimum": -40,
                                               "title": "Celsius", "type": "number"}, schema
    # Byte token 49 '.' favoured: the story model writes fractions.
    r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Tell me a story."}],
                                      max_tokens=120, temperature=0, logit_bias={"49": 8},
                                      response_format=Reading)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    reading = choice.message.parsed
    assert isinstance(reading, Reading), choice.message.content
    numbers = re.findall(r"-?[0-9][0-9.eE+-]*", choice.message.content)
    assert len(numbers) >= 3 and all(re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]{1,6})?", n) for n in numbers), numbers
    assert "." in choice.message.content, choice.message.content
    # Seeded sampling at temperature 1: every answer that ends is in range.
    ended = 0
    for seed in range(4):
        r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Go on."}],
                                          max_tokens=120, temperature=1.0, seed=seed, response_format=Reading)
        if r.choices[0].finish_reason == "stop":
            assert isinstance(r.choices[0].message.parsed, Reading), r.choices[0].message.content
            ended += 1
    assert ended >= 2
    # Bounds no number meets are a 400 naming the field.
    import openai

    class Empty(pydantic.BaseModel):
        p: float = pydantic.Field(gt=0.5, le=0.5)

    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "x"}],
                                      max_tokens=8, response_format=Empty)
    assert "properties.p: no number lies within its bounds" in str(e.value), str(e.value)


def test_openai_parse_with_dicts_and_any(server, client):
    """pydantic's dict[str, X], dict and Any: objects of the model's own
    keys and any values, written as json.dumps writes them; the answer is
    read back into the model."""
    from typing import Any, Dict

    import pydantic

    class Inventory(pydantic.BaseModel):
        counts: Dict[str, pydantic.conint(ge=0, le=100)]
        notes: dict
        extra: Any

    schema = Inventory.model_json_schema()
    assert schema["properties"]["counts"] == {"additionalProperties": {"maximum": 100, "minimum": 0,
                                                                       "type": "integer"},
                                              "title": "Counts", "type": "object"}, schema
    # '"' (piece 436) and '}' (byte token 128) favoured, commas (piece 432,
    # byte token 47) not: keys and objects end.
    r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Count them."}],
                                      max_tokens=150, temperature=0,
                                      logit_bias={"436": 6, "128": 4, "432": -100, "47": -100},
                                      response_format=Inventory)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    inventory = choice.message.parsed
    assert isinstance(inventory, Inventory), choice.message.content
    assert inventory.counts and all(0 <= v <= 100 for v in inventory.counts.values()), choice.message.content
    # json.dumps' form: parsing and writing again gives the same text.
    assert json.dumps(json.loads(choice.message.content), ensure_ascii=False) == choice.message.content


def test_extra_keys_after_the_declared_ones(server, client):
    """additionalProperties beside properties (pydantic's extra="allow", or
    typed extras): the declared members, then keys of the model's own
    choosing whose values follow the extras' schema. The story model,
    favouring '"' (piece 436), writes empty keys until the token limit; the
    text so far has the declared members first, then only free ones."""
    import re

    import pydantic

    class Card(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        name: str = pydantic.Field(max_length=8)

    assert Card.model_json_schema()["additionalProperties"] is True
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["name", "age"], "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}}
    r = client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Who is it?"}],
                                       max_tokens=60, temperature=0, logit_bias={"436": 8},
                                       response_format={"type": "json_schema",
                                                        "json_schema": {"name": "card", "schema": schema}})
    choice = r.choices[0]
    text = choice.message.content
    head = re.match(r'\{"name": "[^"]{0,8}", "age": [0-9]{1,2}', text)
    assert head, text
    members = re.findall(r', "([^"]*)": ([0-9]+)', text[head.end():])
    assert len(members) >= 3 and all(k not in ("name", "age") and 0 <= int(v) <= 9 for k, v in members), text
    # pydantic's own model: extras of any type, read back into it.
    r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Who is it?"}],
                                      max_tokens=60, temperature=0, logit_bias={"436": 10, "432": -100, "47": -100},
                                      response_format=Card)
    assert r.choices[0].finish_reason == "stop" and isinstance(r.choices[0].message.parsed, Card), r.choices[0]


def test_openai_parse_with_tuples(server, client):
    """pydantic's tuple[X, Y] (prefixItems) and tuple[X, ...]: each position
    held to its own schema; the answer read back into the model."""
    from typing import List, Tuple

    import pydantic

    class Route(pydantic.BaseModel):
        start: Tuple[pydantic.confloat(ge=-90, le=90), pydantic.confloat(ge=-180, le=180)]
        stops: List[Tuple[str, pydantic.conint(ge=0, le=99)]] = pydantic.Field(max_length=2)
        tags: Tuple[str, ...] = pydantic.Field(max_length=2)

    schema = Route.model_json_schema()
    assert schema["properties"]["start"]["prefixItems"] == [{"maximum": 90, "minimum": -90, "type": "number"},
                                                            {"maximum": 180, "minimum": -180, "type": "number"}]
    r = client.chat.completions.parse(model="stories260K", messages=[{"role": "user", "content": "Where to?"}],
                                      max_tokens=150, temperature=0, logit_bias={"436": 6, "96": 4},
                                      response_format=Route)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    route = choice.message.parsed
    assert isinstance(route, Route) and len(route.start) == 2, choice.message.content
    assert all(isinstance(name, str) and isinstance(n, int) for name, n in route.stops), choice.message.content


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"]}}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}},
                                       "required": ["zone"]}}}


def test_tool_calls_named_and_required(server, client):
    """tool_choice as vLLM does it with any model: a named function's
    arguments follow its parameters schema; "required" gives one or more
    calls to the tools. Checked with the openai client, streamed and not."""
    import jsonschema
    import openai
    case = PROMPTS["system_and_user"]
    named = {"type": "function", "function": {"name": "get_weather"}}
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=120,
                                       temperature=0, logit_bias={"37": 6}, tools=[WEATHER_TOOL, TIME_TOOL],
                                       tool_choice=named)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), WEATHER_TOOL["function"]["parameters"])
    # Streamed: the deltas add up to the same call.
    chunks = list(client.chat.completions.create(
        model="stories260K", messages=case["messages"], max_tokens=120, temperature=0, logit_bias={"37": 6},
        tools=[WEATHER_TOOL, TIME_TOOL], tool_choice=named, stream=True))
    deltas = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert deltas[0][0].id.startswith("call_") and deltas[0][0].function.name == "get_weather"
    assert "".join(d[0].function.arguments or "" for d in deltas) == call.function.arguments
    assert chunks[-1].choices[0].finish_reason == "stop"

    # "required": a list of calls, each to one of the tools. Commas (piece
    # 432, byte token 47) disfavoured: the story model then closes the list
    # rather than writing calls until the token limit.
    # Streamed, each call's id and name come once, then its arguments as
    # they are written; the openai client's stream helper puts them
    # together into the same calls as the answer not streamed.
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER_TOOL, TIME_TOOL)}
    kwargs = dict(model="stories260K", messages=case["messages"], max_tokens=200, temperature=0,
                  logit_bias={"37": 6, "432": -100, "47": -100}, tools=[WEATHER_TOOL, TIME_TOOL],
                  tool_choice="required")
    r = client.chat.completions.create(**kwargs)
    calls = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls" and calls, r.choices[0]
    for c in calls:
        jsonschema.validate(json.loads(c.function.arguments), schemas[c.function.name])
    with client.chat.completions.stream(**kwargs) as events:
        argument_deltas = sum(1 for e in events if e.type == "tool_calls.function.arguments.delta")
        streamed = events.get_final_completion().choices[0]
    assert streamed.finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in streamed.message.tool_calls] == \
        [(c.function.name, c.function.arguments) for c in calls]
    assert all(c.id.startswith("call_") and c.id.endswith(f"_0_{i}")  # the response's id differs
               for i, c in enumerate(streamed.message.tool_calls))
    assert argument_deltas > len(calls), argument_deltas  # arguments came in pieces, not whole at the end
    # parallel_tool_calls false: exactly one call, even where the story model
    # would go on writing calls (no comma bias here).
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=120,
                                       temperature=0, logit_bias={"37": 6}, tools=[WEATHER_TOOL, TIME_TOOL],
                                       tool_choice="required", parallel_tool_calls=False)
    assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
    assert len(r.choices[0].message.tool_calls) == 1
    # OpenAI's default with tools is "auto": refused by name, as vLLM without a parser.
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="stories260K", messages=case["messages"], max_tokens=8,
                                       tools=[WEATHER_TOOL])
    assert "tool_choice: not supported" in str(e.value), str(e.value)


def test_openai_pydantic_function_tool(server, client):
    """The openai client's pydantic_function_tool with its parse helper: the
    call's arguments read back into the model."""
    import openai
    import pydantic

    class GetWeather(pydantic.BaseModel):
        city: str = pydantic.Field(max_length=20)
        days: int = pydantic.Field(ge=1, le=7)

    case = PROMPTS["system_and_user"]
    r = client.chat.completions.parse(model="stories260K", messages=case["messages"], max_tokens=80,
                                      temperature=0, logit_bias={"37": 6},
                                      tools=[openai.pydantic_function_tool(GetWeather)],
                                      tool_choice={"type": "function", "function": {"name": "GetWeather"}})
    (call,) = r.choices[0].message.tool_calls
    assert isinstance(call.function.parsed_arguments, GetWeather), call
    assert 1 <= call.function.parsed_arguments.days <= 7





