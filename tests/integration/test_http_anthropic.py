"""Anthropic's Messages API (/v1/messages) against the real binary and
stories260K with Llama-2-chat's template, through the official `anthropic`
SDK (messages.create, messages.stream).

The references are independent of attnserve's chat code, as in
test_http_openai_chat.py: the prompt ids are transformers' rendering of the
template tokenized by sentencepiece (tests/golden/chat_templates/renders.json),
and every answer must equal the native API's greedy continuation of exactly
those ids. The stream is checked against the SDK's own accumulation of its
events and against the unstreamed answer."""
import json

import anthropic
import jsonschema
import pytest

from test_http_openai_chat import PROMPTS, chat_gguf, native_greedy, server  # noqa: F401 (fixtures)


# The SDK no longer takes sampling parameters (Claude's current models fix
# them); the API still does, as llama.cpp's and vLLM's do, so they go in the
# body as older clients and raw HTTP send them.
GREEDY = {"extra_body": {"temperature": 0}}


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url(""), api_key="none", max_retries=0)


def split_system(messages):
    system = [m["content"] for m in messages if m["role"] == "system"]
    return (system[0] if system else None), [m for m in messages if m["role"] != "system"]


def test_a_conversation_answers_the_native_greedy_continuation(server, client):
    case = PROMPTS["llama_cpp"]
    expected, _ = native_greedy(server, case["ids"], 16)
    system, messages = split_system(case["messages"])
    m = client.messages.create(model="stories260K", system=system, messages=messages, max_tokens=16, **GREEDY)
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == expected
    assert m.stop_reason == "max_tokens" and m.stop_sequence is None
    assert m.usage.output_tokens == 16
    # Anthropic counts cache reads apart from input_tokens.
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == len(case["ids"])


def test_count_tokens_counts_the_prompt_a_message_gets(server, client):
    """/v1/messages/count_tokens: transformers' prompt ids' count, and the
    usage of the same conversation's message."""
    for name in ("llama_cpp", "system_and_user", "whitespace_unicode"):
        case = PROMPTS[name]
        system, messages = split_system(case["messages"])
        extra = {"system": system} if system else {}
        counted = client.messages.count_tokens(model="stories260K", messages=messages, **extra)
        assert counted.input_tokens == len(case["ids"]), name


def test_system_as_text_blocks_and_content_as_blocks(server, client):
    case = PROMPTS["system_and_user"]
    expected, _ = native_greedy(server, case["ids"], 12)
    m = client.messages.create(model="stories260K", system=[{"type": "text", "text": case["messages"][0]["content"]}],
                               messages=[{"role": "user",
                                          "content": [{"type": "text", "text": case["messages"][1]["content"]}]}],
                               max_tokens=12, **GREEDY)
    assert m.content[0].text == expected


def test_the_stream_builds_the_same_message(server, client):
    case = PROMPTS["no_system"]
    expected, _ = native_greedy(server, case["ids"], 10)
    kwargs = dict(model="stories260K", messages=case["messages"], max_tokens=10, **GREEDY)
    whole = client.messages.create(**kwargs)
    types, text, started = [], "", None
    with client.messages.stream(**kwargs) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "text":
                text += event.text
            if event.type == "message_start":
                started = event.message.usage
        final = stream.get_final_message()
    assert text == expected == final.content[0].text == whole.content[0].text
    assert types[0] == "message_start" and types[1] == "content_block_start"
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert final.stop_reason == "max_tokens"
    # message_start splits the prompt as message_delta does (the prefix
    # cache's part apart: the unstreamed request just ran the same prompt, so
    # its full blocks may be cached); message_delta counts the output, and
    # the SDK's final message has its counts.
    assert started.input_tokens + started.cache_read_input_tokens == len(case["ids"])
    assert (started.input_tokens, started.cache_read_input_tokens) == (final.usage.input_tokens,
                                                                       final.usage.cache_read_input_tokens)
    assert started.output_tokens == 0 and final.usage.output_tokens == 10


def test_message_start_splits_off_the_prompt_the_cache_gave(server, client):
    """With the conversation's prompt held in the prefix cache by a native
    stream, a streamed message's message_start counts the cached blocks in
    cache_read_input_tokens (> 0) and the rest in input_tokens, as the
    message_delta at its end counts them (Anthropic's split, which an SDK
    that keeps message_start's counts reports)."""
    import http.client
    case = PROMPTS["no_system"]
    hold = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    hold.request("POST", "/v1/generate_stream", headers={"Content-Type": "application/json"},
                 body=json.dumps({"token_ids": {"ids": case["ids"]},
                                  "sampling": {"max_new_tokens": 400, "temperature": 0, "ignore_eos": True}}))
    r = hold.getresponse()
    assert r.status == 200 and r.fp.readline()  # its first token: the prompt's blocks are published
    try:
        system, messages = split_system(case["messages"])
        kwargs = dict(model="stories260K", messages=messages, max_tokens=4, **GREEDY)
        if system is not None:
            kwargs["system"] = system
        with client.messages.stream(**kwargs) as stream:
            started = next(e for e in stream if e.type == "message_start").message.usage
            final = stream.get_final_message()
    finally:
        hold.sock.close()
        hold.close()
    assert started.cache_read_input_tokens > 0, started
    assert started.input_tokens + started.cache_read_input_tokens == len(case["ids"])
    assert (started.input_tokens, started.cache_read_input_tokens) == (final.usage.input_tokens,
                                                                       final.usage.cache_read_input_tokens)


def test_a_stop_sequence_ends_the_answer_and_is_named(server, client):
    case = PROMPTS["no_system"]
    expected, _ = native_greedy(server, case["ids"], 16)
    word = expected.split()[2]
    m = client.messages.create(model="stories260K", messages=case["messages"], max_tokens=16, **GREEDY,
                               stop_sequences=[word])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == word
    assert expected.startswith(m.content[0].text) and word not in m.content[0].text


TOOLS = [{"name": "get_weather", "description": "The weather in a city.",
          "input_schema": {"type": "object",
                           "properties": {"city": {"type": "string", "maxLength": 20},
                                          "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                           "required": ["city", "days"]}}]


def streamed_tool_input(client, kwargs):
    """The input_json deltas of a streamed message, and the SDK's final message."""
    pieces = []
    with client.messages.stream(**kwargs) as stream:
        for event in stream:
            if event.type == "input_json":
                pieces.append(event.partial_json)
        return pieces, stream.get_final_message()


def test_a_named_tool_gives_a_tool_use_block_streamed_or_not(server, client):
    kwargs = dict(model="stories260K", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS,
                  tool_choice={"type": "tool", "name": "get_weather"}, max_tokens=60, **GREEDY)
    m = client.messages.create(**kwargs)
    assert [b.type for b in m.content] == ["tool_use"] and m.stop_reason == "tool_use"
    block = m.content[0]
    assert block.name == "get_weather" and block.id
    jsonschema.validate(block.input, TOOLS[0]["input_schema"])
    pieces, final = streamed_tool_input(client, kwargs)
    assert len(pieces) > 1
    assert final.content[0].input == block.input and final.stop_reason == "tool_use"
    assert json.loads("".join(pieces)) == block.input


def test_a_tool_call_cut_by_max_tokens_keeps_its_input_so_far(server, client):
    """max_tokens cuts the named call: the unstreamed answer's tool_use block
    has the input the anthropic SDK makes of the streamed deltas (jiter's
    partial mode), stop_reason max_tokens both ways."""
    import jiter
    kwargs = dict(model="stories260K", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS,
                  tool_choice={"type": "tool", "name": "get_weather"}, **GREEDY)
    # The shortest limit that cuts the call after a whole member (greedy:
    # the same text at every limit).
    for limit in range(12, 60, 2):
        m = client.messages.create(max_tokens=limit, **kwargs)
        assert m.stop_reason == "max_tokens" and [b.type for b in m.content] == ["tool_use"], m
        if m.content[0].input:
            break
    kwargs["max_tokens"] = limit
    pieces, final = streamed_tool_input(client, kwargs)
    written = "".join(pieces)
    with pytest.raises(ValueError):
        json.loads(written)
    assert m.content[0].input == final.content[0].input == jiter.from_json(written.encode(), partial_mode=True)
    assert m.content[0].input  # a whole member was written
    assert final.stop_reason == "max_tokens" and final.content[0].name == m.content[0].name == "get_weather"


def test_any_tool_calls_one_of_them(server, client):
    m = client.messages.create(model="stories260K", messages=[{"role": "user", "content": "Weather?"}], tools=TOOLS,
                               tool_choice={"type": "any", "disable_parallel_tool_use": True}, max_tokens=80,
                               **GREEDY)
    assert [b.type for b in m.content] == ["tool_use"] and m.stop_reason == "tool_use"
    jsonschema.validate(m.content[0].input, TOOLS[0]["input_schema"])


def test_structured_output_through_parse(server, client):
    import typing

    import pydantic

    # (the SDK moves bounds such as minimum into descriptions, as Claude's
    # structured outputs refuse them: an enum holds the answer short)
    class Pet(pydantic.BaseModel):
        name: str
        species: typing.Literal["cat", "dog", "bird"]

    m = client.messages.parse(model="stories260K", messages=[{"role": "user", "content": "Describe a pet."}],
                              output_format=Pet, max_tokens=80, **GREEDY)
    assert isinstance(m.parsed_output, Pet)
    assert json.loads(m.content[0].text) == m.parsed_output.model_dump()


def test_errors_are_anthropics_shape_naming_the_field(server, client):
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", messages=[{"role": "user", "content": "a"}], max_tokens=5,
                               extra_body={"temperature": 1.5})
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert "temperature" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", max_tokens=5,
                               messages=[{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])
    assert "messages[1].role" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", max_tokens=5, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]}])
    assert "messages[0].content[0].type: not supported" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", max_tokens=5, messages=[{"role": "user", "content": "a"}],
                               thinking={"type": "enabled", "budget_tokens": 1024})
    assert "thinking: not supported" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", max_tokens=5000, messages=[{"role": "user", "content": "a"}])
    assert "max_tokens" in e.value.body["error"]["message"]
    # The llama2 template has no tool turns: a tool_result is refused by name.
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="stories260K", max_tokens=5, tools=TOOLS, messages=[
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",
                                               "input": {"city": "Oslo", "days": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cold"}]}])
    assert "messages[1]" in e.value.body["error"]["message"]


def test_the_key_may_come_as_x_api_key(server_factory, chat_gguf):  # noqa: F811
    s = server_factory(f"--decoder-model={chat_gguf}", "--threads=1", "--api-key=k-42")
    ok = anthropic.Anthropic(base_url=s.url(""), api_key="k-42", max_retries=0)
    m = ok.messages.create(model="stories260K", messages=[{"role": "user", "content": "Hi"}], max_tokens=3)
    assert m.usage.output_tokens == 3
    bad = anthropic.Anthropic(base_url=s.url(""), api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        bad.messages.create(model="stories260K", messages=[{"role": "user", "content": "Hi"}], max_tokens=3)
    assert e.value.body["error"]["type"] == "authentication_error"
