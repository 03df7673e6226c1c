"""OpenAI's Responses API (/v1/responses) against the real binary and
stories260K with Llama-2-chat's template, through the official `openai`
client (responses.create, responses.stream, responses.parse).

The references are independent of attnserve's chat code, as in
test_http_openai_chat.py: the prompt ids are transformers' rendering of the
template tokenized by sentencepiece (tests/golden/chat_templates/renders.json),
and every answer must equal the native API's greedy continuation of exactly
those ids. The streamed events are checked against the client's own
accumulation of them (the final response it builds must equal the one the
server sends last, and the unstreamed answer)."""
import json

import jsonschema
import openai
import pydantic
import pytest

from test_http_openai_chat import PROMPTS, chat_gguf, native_greedy, server  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key="none", max_retries=0)


def as_input(messages):
    """Chat messages as Responses input items (content as input_text parts)."""
    return [{"type": "message", "role": m["role"],
             "content": [{"type": "input_text" if m["role"] != "assistant" else "output_text", "text": m["content"]}]}
            for m in messages]


def test_a_conversation_answers_the_native_greedy_continuation(server, client):
    case = PROMPTS["llama_cpp"]
    expected, native = native_greedy(server, case["ids"], 16)
    r = client.responses.create(model="stories260K", input=as_input(case["messages"]), max_output_tokens=16,
                                temperature=0)
    assert r.object == "response" and r.id.startswith("resp_")
    assert r.output_text == expected
    assert len(r.output) == 1 and r.output[0].type == "message" and r.output[0].role == "assistant"
    # The token limit cut it: incomplete, for that reason.
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.input_tokens == len(case["ids"]) and r.usage.output_tokens == 16
    assert r.usage.total_tokens == len(case["ids"]) + 16
    assert r.max_output_tokens == 16 and r.temperature == 0 and r.store is False


def test_logprobs_are_the_native_apis_streamed_or_not(server, client):
    case = PROMPTS["llama_cpp"]
    kwargs = dict(model="stories260K", input=as_input(case["messages"]), max_output_tokens=6, temperature=0,
                  include=["message.output_text.logprobs"], top_logprobs=3)
    r = client.responses.create(**kwargs)
    _, native = native_greedy(server, case["ids"], 6, logprobs=3)
    got = r.output[0].content[0].logprobs
    assert len(got) == len(native["logprobs"]) == 6
    for entry, want in zip(got, native["logprobs"]):
        assert entry.logprob == pytest.approx(want["logprob"], abs=1e-6)
        assert [t.logprob for t in entry.top_logprobs] == pytest.approx([t["logprob"] for t in want["top"]], abs=1e-6)
        assert entry.top_logprobs[0].token == entry.token  # greedy: the chosen token is the most likely
    streamed = []
    with client.responses.stream(**kwargs) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                streamed += event.logprobs
    final = event.response.output[0].content[0].logprobs  # the stream's last event, response.incomplete
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in got]
    assert [(e.token, e.logprob) for e in final] == [(e.token, e.logprob) for e in got]


def test_instructions_are_the_system_message_and_a_string_input_the_user_turn(server, client):
    case = PROMPTS["system_and_user"]
    expected, _ = native_greedy(server, case["ids"], 12)
    r = client.responses.create(model="stories260K", instructions=case["messages"][0]["content"],
                                input=case["messages"][1]["content"], max_output_tokens=12, temperature=0)
    assert r.output_text == expected
    assert r.instructions == case["messages"][0]["content"]


def test_the_event_stream_builds_the_same_response(server, client):
    case = PROMPTS["no_system"]
    expected, _ = native_greedy(server, case["ids"], 10)
    whole = client.responses.create(model="stories260K", input=as_input(case["messages"]), max_output_tokens=10,
                                    temperature=0)
    types, deltas = [], []
    with client.responses.stream(model="stories260K", input=as_input(case["messages"]), max_output_tokens=10,
                                 temperature=0) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        # Cut by the token limit, the stream ends with response.incomplete
        # (as OpenAI's does), which carries the response; the client's
        # get_final_response waits for response.completed only.
        final = event.response
    assert "".join(deltas) == expected == final.output_text == whole.output_text
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete"]
    assert set(types[4:-4]) == {"response.output_text.delta"}
    assert final.status == "incomplete" and final.usage.output_tokens == 10
    assert final.output[0].id == whole.output[0].id.replace(whole.id[5:], final.id[5:])


def test_sequence_numbers_count_every_event_from_zero(server):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/responses", body=json.dumps({"input": "Hello", "max_output_tokens": 5,
                                                           "temperature": 0, "stream": True}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
    blocks = [b for b in r.read().decode().split("\n\n") if b]
    conn.close()
    events = []
    for block in blocks:
        name, data = block.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        events.append(json.loads(data[6:]))
        assert events[-1]["type"] == name[7:]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert "[DONE]" not in blocks[-1]


def test_structured_output_through_parse(server, client):
    class Pet(pydantic.BaseModel):
        name: str
        age: pydantic.conint(ge=0, le=30)

    r = client.responses.parse(model="stories260K", input="Describe a pet.", text_format=Pet, max_output_tokens=80,
                               temperature=0)
    assert isinstance(r.output_parsed, Pet)
    assert json.loads(r.output_text) == r.output_parsed.model_dump()


TOOLS = [{"type": "function", "name": "get_weather", "description": "The weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                       "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                         "required": ["city", "days"]}},
         {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}]


def test_a_named_function_gives_a_function_call_item_streamed_or_not(server, client):
    choice = {"type": "function", "name": "get_weather"}
    r = client.responses.create(model="stories260K", input="Weather in Paris?", tools=TOOLS, tool_choice=choice,
                                max_output_tokens=60, temperature=0)
    assert [o.type for o in r.output] == ["function_call"]
    call = r.output[0]
    assert call.name == "get_weather" and call.call_id and call.status == "completed"
    jsonschema.validate(json.loads(call.arguments), TOOLS[0]["parameters"])
    assert r.status == "completed"
    assert r.tools[0].name == "get_weather"  # echoed in the Responses shape

    deltas = []
    with client.responses.stream(model="stories260K", input="Weather in Paris?", tools=TOOLS, tool_choice=choice,
                                 max_output_tokens=60, temperature=0) as stream:
        for event in stream:
            if event.type == "response.function_call_arguments.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert len(deltas) > 1
    assert "".join(deltas) == final.output[0].arguments == call.arguments


def test_required_calls_one_of_the_functions(server, client):
    """tool_choice "required" with parallel_tool_calls false: exactly one
    call, to one of the tools, whose arguments follow its schema; the stream
    gives the same call."""
    kwargs = dict(model="stories260K", input="Weather or time?", tools=TOOLS, tool_choice="required",
                  parallel_tool_calls=False, max_output_tokens=120, temperature=0)
    r = client.responses.create(**kwargs)
    assert r.status == "completed" and r.parallel_tool_calls is False
    assert [o.type for o in r.output] == ["function_call"]
    schema = next(t for t in TOOLS if t["name"] == r.output[0].name)["parameters"]
    jsonschema.validate(json.loads(r.output[0].arguments), schema)
    with client.responses.stream(**kwargs) as stream:
        final = stream.get_final_response()
    assert [(o.name, o.arguments) for o in final.output] == [(o.name, o.arguments) for o in r.output]


@pytest.mark.parametrize("body,status,needle", [
    ({"input": "a", "previous_response_id": "resp_1"}, 400, "previous_response_id: not supported"),
    ({"input": "a", "store": True}, 400, "store: not supported"),
    ({"input": "a", "background": True}, 400, "background: not supported"),
    ({"input": "a", "include": ["reasoning.encrypted_content"]}, 400, "include[0]: not supported"),
    ({"input": "a", "top_logprobs": 50}, 400, "top_logprobs"),
    ({"input": "a", "reasoning": {"effort": "high"}}, 400, "reasoning.effort: not supported"),
    ({"input": "a", "truncation": "auto"}, 400, "truncation: not supported"),
    ({"input": "a", "tools": [{"type": "web_search"}]}, 400, "tools[0].type: not supported"),
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"},
                                             {"type": "input_image", "image_url": "x"}]}]}, 400,
     "input[0].content[1].type: not supported"),
    ({"input": [{"role": "user", "content": "a"}, {"type": "item_reference", "id": "msg_1"}]}, 400,
     "input[1].type: not supported"),
    ({"input": [{"role": "user", "content": "a"}, {"type": "reasoning", "summary": [], "encrypted_content": "gA"}]},
     400, "input[1].encrypted_content: not supported"),
    ({"input": [{"role": "pirate", "content": "a"}]}, 400, "input[0]"),
    ({"instructions": "x", "input": [{"role": "user", "content": "a"}, {"role": "pirate", "content": "b"}]}, 400,
     "input[1]"),
    ({"input": "a", "max_output_tokens": 0}, 400, "max_output_tokens"),
    ({"input": "a", "temperature": "hot"}, 400, "temperature"),
    ({"input": "a", "text": {"format": {"type": "grammar"}}}, 400, "text.format.type: not supported"),
    ({"input": "a", "tool_choice": {"type": "function", "name": "nope"}, "tools": TOOLS}, 400, "nope"),
    ({}, 400, "input: required"),
    ({"input": []}, 400, "input: must not be empty"),
    # The llama2 template has no tool turns: a call and its output are refused.
    ({"input": [{"role": "user", "content": "a"},
                {"type": "function_call", "call_id": "c1", "name": "get_time", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "noon"}], "tools": TOOLS}, 400,
     "input[1]"),
])
def test_refusals_name_the_responses_field(server, body, status, needle):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/responses", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = json.loads(r.read())
    conn.close()
    assert r.status == status, out
    assert needle in out["error"]["message"], out
