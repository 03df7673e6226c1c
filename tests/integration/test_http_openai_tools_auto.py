"""tool_choice "auto" and tool turns against the real binary: stories260K
served with --chat-template=llama3.1 --tool-call-parser=llama3_json.

The prompt the server builds from OpenAI-style messages with tools, a call
and its result is checked against transformers' rendering of Llama-3.1's
published template (tests/golden/chat_templates/renders.json, from
tools/golden/chat_templates.py): its text, tokenized by the server as plain
text, must be the chat's prompt, and the chat's greedy answer the native
API's greedy continuation of those ids. stories260K writes stories, not
calls, so "auto" answers here are content unless a logit bias makes the
answer begin with "{": then the server holds it to one call's schema (the
lazy JSON schema format) and it is a call. What the parser makes of a free
call is checked against vLLM's algorithm in server_http_gateway_test."""
import json

import pytest

from conftest import REPO, ServerProcess
from test_http_openai_chat import native_greedy
from test_server_lifecycle import start_failure

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())


def golden(conversation, add_generation_prompt=True):
    for c in GOLDEN["cases"]:
        if c["format"] == "llama3.1" and c["conversation"] == conversation and \
                c["add_generation_prompt"] == add_generation_prompt and not c["continue_final_message"]:
            return c
    raise KeyError(conversation)


def openai_messages(messages):
    """The golden's messages as an OpenAI client sends them: a call's
    arguments as JSON text (the template was given them as an object), the
    text beside calls kept (null where there is none)."""
    out = []
    for m in messages:
        m = dict(m)
        if "tool_calls" in m:
            m["content"] = m.get("content")
            m["tool_calls"] = [{**c, "function": {**c["function"],
                                                  "arguments": json.dumps(c["function"]["arguments"],
                                                                          ensure_ascii=False)}}
                               for c in m["tool_calls"]]
        out.append(m)
    return out


@pytest.fixture(scope="module")
def server():
    # Tools shown as indented JSON take 1,200+ of stories260K's small-vocabulary
    # tokens: a longer context than it was trained with (rotary, as llama.cpp's -c).
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=2048",
                      "--chat-template=llama3.1", "--tool-call-parser=llama3_json")
    yield s
    s.close()


def tokenize_text(server, text):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/tokenize", body=json.dumps({"text": text, "add_special_tokens": False}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 200, body
    return body["token_ids"]


@pytest.mark.parametrize("conversation", ["tools_system_user", "tools_call_result", "tools_call_result_answer",
                                          "call_result_no_tools"])
def test_tools_calls_and_results_make_transformers_prompt(server, client, conversation):
    case = golden(conversation)
    # The template writes the model's BOS: stories260K's is <s>, not Llama-3's.
    bos = GOLDEN["templates"]["llama3.1"]["bos_token"]
    assert case["text"].startswith(bos)
    assert_chat_continues_the_prompt(server, client, case, tokenize_text(server, "<s>" + case["text"][len(bos):]))


def assert_chat_continues_the_prompt(server, client, case, ids):
    """The golden case's conversation (and tools) as a chat: its prompt is
    `ids`, and its answer the native API's greedy continuation of them,
    prose that "auto" leaves as content."""
    extra = {"tools": case["tools"]} if "tools" in case else {}
    r = client.chat.completions.create(model="stories260K", messages=openai_messages(case["messages"]),
                                       max_tokens=16, temperature=0, **extra)
    assert r.usage.prompt_tokens == len(ids), (r.usage, len(ids))
    expected, _ = native_greedy(server, ids, 16)
    choice = r.choices[0]
    assert choice.message.tool_calls is None and choice.message.content == expected, choice
    assert choice.finish_reason in ("stop", "length")


def test_auto_streams_prose_as_content(server, client):
    case = golden("tools_user")
    stream = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                            tool_choice="auto", max_tokens=12, temperature=0, stream=True)
    text, finish = "", None
    for chunk in stream:
        delta = chunk.choices[0].delta
        assert not delta.tool_calls
        text += delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
    whole = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                           max_tokens=12, temperature=0)
    assert text == whole.choices[0].message.content and text
    assert finish == whole.choices[0].finish_reason


def test_template_refusals_are_400s_naming_them(client):
    openai = pytest.importorskip("openai")
    case = golden("tools_call_result")
    two_calls = openai_messages(case["messages"])
    two_calls[2]["tool_calls"] = two_calls[2]["tool_calls"] * 2
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="stories260K", messages=two_calls, tools=case["tools"], max_tokens=4)
    assert "chat.messages[2]: This model only supports single tool-calls at once! (the llama3.1 chat template)" \
        in str(e.value), str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="stories260K", messages=[{"role": "system", "content": "x"}],
                                       tools=case["tools"], max_tokens=4)
    assert "Cannot put tools in the first user message" in str(e.value), str(e.value)


def test_a_parser_without_a_template_that_shows_tools_refuses_to_start():
    rc, out = start_failure("--grpc-port=0", "--http-port=0", f"--decoder-model={DECODER}", "--chat-template=llama2",
                            "--tool-call-parser=llama3_json")
    assert rc != 0
    assert "--tool-call-parser=llama3_json: needs a chat template that shows tools (--chat-template=llama3.1, " \
           "qwen2.5, qwen3, llama3.2); the chat template here is llama2" in out, out[-2000:]
    rc, out = start_failure("--grpc-port=0", "--http-port=0", "--tool-call-parser=xml")
    assert rc != 0 and "--tool-call-parser=xml: must be llama3_json, hermes or empty" in out, out[-2000:]


def test_grpc_chat_takes_tools_calls_and_results(server, client, proto_modules):
    """The same conversation through gRPC Generate's ChatPrompt (tools as
    JSON texts, a call's arguments as JSON text) gives the same prompt and
    greedy answer as the OpenAI door."""
    import grpc
    pb, pb_grpc = proto_modules
    case = golden("tools_call_result")
    messages = []
    for m in openai_messages(case["messages"]):
        calls = [pb.ChatToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                 for c in m.get("tool_calls", [])]
        messages.append(pb.ChatMessage(role=m["role"], content=m.get("content") or "", tool_calls=calls,
                                       tool_call_id=m.get("tool_call_id", "")))
    chat = pb.ChatPrompt(messages=messages, tools=[json.dumps(t) for t in case["tools"]])
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        out = list(stub.Generate(pb.GenerateRequest(chat=chat, sampling=pb.SamplingParams(max_new_tokens=8,
                                                                                        temperature=0)),
                                 timeout=60))
        bad = pb.ChatPrompt(messages=messages, tools=["{not json"])
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(pb.GenerateRequest(chat=bad, sampling=pb.SamplingParams(max_new_tokens=2)),
                               timeout=60))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "chat.tools[0]: not valid JSON" in e.value.details(), e.value.details()
    r = client.chat.completions.create(model="stories260K", messages=openai_messages(case["messages"]),
                                       tools=case["tools"], max_tokens=8, temperature=0)
    assert out[-1].usage.prompt_tokens == r.usage.prompt_tokens
    assert "".join(m.text for m in out) == r.choices[0].message.content


def responses_input(messages):
    """The golden's messages as Responses API input items: calls as
    function_call items, results as function_call_output items."""
    items = []
    for m in openai_messages(messages):
        if m.get("tool_calls"):
            items += [{"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in m["tool_calls"]]
        elif m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        else:
            items.append({"role": m["role"], "content": m["content"]})
    return items


@pytest.mark.parametrize("conversation", ["tools_call_result", "tools_call_result_answer"])
def test_responses_function_call_items_make_transformers_prompt(server, client, conversation):
    """/v1/responses with a call and its output as input items, and the tools
    in the Responses shape: the prompt is transformers' rendering of the
    same conversation (its token count), and the answer the native greedy
    continuation of it."""
    case = golden(conversation)
    bos = GOLDEN["templates"]["llama3.1"]["bos_token"]
    ids = tokenize_text(server, "<s>" + case["text"][len(bos):])
    tools = [{"type": "function", **t["function"]} for t in case["tools"]]
    r = client.responses.create(model="stories260K", input=responses_input(case["messages"]), tools=tools,
                                max_output_tokens=16, temperature=0)
    assert r.usage.input_tokens == len(ids), (r.usage, len(ids))
    expected, _ = native_greedy(server, ids, 16)
    assert [o.type for o in r.output] == ["message"] and r.output_text == expected


def anthropic_messages(messages):
    """The golden's messages in Anthropic's shape: the system prompt apart,
    calls as tool_use blocks, results as tool_result blocks."""
    system, out = None, []
    for m in messages:
        if m["role"] == "system":
            system = m["content"]
        elif m.get("tool_calls"):
            out.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": c["function"]["arguments"]}
                for c in m["tool_calls"]]})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": m["tool_call_id"],
                                                     "content": m["content"]}]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return system, out


@pytest.mark.parametrize("conversation", ["tools_call_result", "tools_call_result_answer"])
def test_anthropic_tool_use_and_result_blocks_make_transformers_prompt(server, conversation):
    """/v1/messages through the anthropic SDK with a tool_use block and its
    tool_result: the prompt is transformers' rendering of the same
    conversation (its token count), and the answer the native greedy
    continuation of it."""
    import anthropic
    case = golden(conversation)
    bos = GOLDEN["templates"]["llama3.1"]["bos_token"]
    ids = tokenize_text(server, "<s>" + case["text"][len(bos):])
    tools = [{"name": t["function"]["name"], **({"description": t["function"]["description"]}
                                                 if "description" in t["function"] else {}),
              "input_schema": t["function"]["parameters"]} for t in case["tools"]]
    system, messages = anthropic_messages(case["messages"])
    client = anthropic.Anthropic(base_url=server.url(""), api_key="none", max_retries=0)
    extra = {"system": system} if system else {}
    m = client.messages.create(model="stories260K", messages=messages, tools=tools, max_tokens=16,
                               extra_body={"temperature": 0}, **extra)
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == len(ids), (m.usage, len(ids))
    # count_tokens counts the same prompt, the tools shown in it included.
    assert client.messages.count_tokens(model="stories260K", messages=messages, tools=tools,
                                        **extra).input_tokens == len(ids)
    expected, _ = native_greedy(server, ids, 16)
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == expected


# Tools whose arguments hold no free text, so that a bias towards "{" (which
# acts at every step) can begin a call without filling a string with braces.
CALL_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather forecast",
        "parameters": {"type": "object", "properties": {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["unit", "days"]}}},
    {"type": "function", "function": {
        "name": "get_time", "parameters": {"type": "object", "properties": {
            "zone": {"type": "string", "enum": ["utc", "local"]}}, "required": ["zone"]}}},
]
CALL_MESSAGES = [{"role": "user", "content": "Will it rain?"}]


def open_brace_token(server):
    """stories260K writes "{" only as its byte token <0x7B>."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/detokenize", body=json.dumps({"token_ids": [3 + ord("{")]}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert json.loads(r.read())["text"] == "{"
    return 3 + ord("{")


def test_auto_call_the_model_begins_is_held_to_the_tools_schemas(server, client):
    """Biased to begin with "{", stories260K's "auto" answer is a call to one
    of the tools whose arguments their schema accepts; it is JSON schema
    mode's answer to the same prompt held to the call schema from the start
    (tool_choice "none", so the same tools are shown); and streamed, it comes
    as the openai client's stream helper puts together into the same call,
    its name first and then its arguments in more than one piece."""
    import jsonschema
    bias = {"logit_bias": {str(open_brace_token(server)): 100}}
    r = client.chat.completions.create(model="stories260K", messages=CALL_MESSAGES, tools=CALL_TOOLS,
                                       tool_choice="auto", max_tokens=64, temperature=0, extra_body=bias)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.content is None and len(choice.message.tool_calls) == 1, choice
    call = choice.message.tool_calls[0]
    tool = next(t["function"] for t in CALL_TOOLS if t["function"]["name"] == call.function.name)
    jsonschema.validate(json.loads(call.function.arguments), tool["parameters"])

    one_call = {"anyOf": [{"type": "object", "properties": {
        "name": {"type": "string", "enum": [t["function"]["name"]]},
        "parameters": t["function"]["parameters"]}, "required": ["name", "parameters"]} for t in CALL_TOOLS]}
    strict = client.chat.completions.create(
        model="stories260K", messages=CALL_MESSAGES, tools=CALL_TOOLS, tool_choice="none", max_tokens=64,
        temperature=0, extra_body=bias,
        response_format={"type": "json_schema", "json_schema": {"name": "call", "schema": one_call}})
    assert strict.choices[0].message.content == \
        f'{{"name": "{call.function.name}", "parameters": {call.function.arguments}}}'
    assert strict.usage.prompt_tokens == r.usage.prompt_tokens

    argument_pieces = 0
    with client.beta.chat.completions.stream(model="stories260K", messages=CALL_MESSAGES, tools=CALL_TOOLS,
                                             tool_choice="auto", max_tokens=64, temperature=0,
                                             extra_body=bias) as stream:
        for event in stream:
            if event.type == "tool_calls.function.arguments.delta":
                argument_pieces += 1
                assert event.name == call.function.name
            assert event.type != "content.delta" or not event.delta, event  # the role chunk's ""
        streamed = stream.get_final_completion().choices[0]
    assert argument_pieces > 1
    assert streamed.finish_reason == "tool_calls"
    assert streamed.message.tool_calls[0].function.name == call.function.name
    assert streamed.message.tool_calls[0].function.arguments == call.function.arguments


def test_auto_call_cut_by_the_token_limit_keeps_the_call_begun(server, client):
    """max_tokens cuts the call: as with tool_choice "required", the call
    begun with its arguments so far and finish_reason "length", streamed and
    not alike."""
    bias = {"logit_bias": {str(open_brace_token(server)): 100}}
    r = client.chat.completions.create(model="stories260K", messages=CALL_MESSAGES, tools=CALL_TOOLS,
                                       max_tokens=40, temperature=0, extra_body=bias)
    choice = r.choices[0]
    assert choice.finish_reason == "length" and choice.message.tool_calls, choice
    arguments = choice.message.tool_calls[0].function.arguments
    assert arguments.startswith("{")
    with pytest.raises(ValueError):
        json.loads(arguments)
    stream = client.chat.completions.create(model="stories260K", messages=CALL_MESSAGES, tools=CALL_TOOLS,
                                            max_tokens=40, temperature=0, extra_body=bias, stream=True)
    name, streamed, finish = None, "", None
    for chunk in stream:
        for c in chunk.choices[0].delta.tool_calls or []:
            name = c.function.name or name
            streamed += c.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert (name, streamed, finish) == (choice.message.tool_calls[0].function.name, arguments, "length")


def test_native_lazy_json_schema_format(server):
    """The proto's RESPONSE_FORMAT_LAZY_JSON_SCHEMA through the native JSON
    API (gRPC's messages): free text where the model does not begin the
    value, JSON schema mode's output where it does."""
    import http.client
    schema = json.dumps({"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}},
                         "required": ["unit"]})

    def generate(**sampling):
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        conn.request("POST", "/v1/generate", body=json.dumps({"text": "Once upon a time", "sampling": {
            "max_new_tokens": 32, "temperature": 0, **sampling}}), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        body = json.loads(r.read())
        assert r.status == 200, body
        return body["text"]

    lazy = {"response_format": "RESPONSE_FORMAT_LAZY_JSON_SCHEMA", "json_schema": schema}
    assert generate(**lazy) == generate() and not generate().startswith("{")
    bias = {"logit_bias": {str(open_brace_token(server)): 100}}
    begun = generate(**lazy, **bias)
    assert begun == generate(response_format="RESPONSE_FORMAT_JSON_SCHEMA", json_schema=schema, **bias)
    assert json.loads(begun)["unit"] in ("celsius", "fahrenheit")
