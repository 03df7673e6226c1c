"""tool_choice "auto" and tool turns against the real binary: stories260K
served with --chat-template=qwen2.5 --tool-call-parser=hermes.

The prompt the server builds from OpenAI-style messages with tools, text
beside calls, and results in a row is checked against transformers'
rendering of Qwen2.5-Instruct's template (tests/golden/chat_templates/
renders.json, from tools/golden/chat_templates.py): its text, tokenized by
the server, must be the chat's prompt (the template writes no BOS), and the
chat's greedy answer the native API's greedy continuation of those ids.
stories260K writes stories, not calls: its free answers are content, and a
guided_choice makes it write a hermes call, which the official openai
client then reads as tool_calls beside the text before it, whole and
streamed. What the parser makes of other answers is checked against vLLM's
algorithm in server_http_gateway_test."""
import json

import pytest

from conftest import REPO, ServerProcess
from test_http_openai_tools_auto import assert_chat_continues_the_prompt, tokenize_text

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
CALL_TEXT = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
             '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>')


def golden(conversation):
    for c in GOLDEN["cases"]:
        if c["format"] == "qwen2.5" and c["conversation"] == conversation and c["add_generation_prompt"] and \
                not c["continue_final_message"]:
            return c
    raise KeyError(conversation)


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=2048",
                      "--chat-template=qwen2.5", "--tool-call-parser=hermes")
    yield s
    s.close()


@pytest.mark.parametrize("conversation", ["tools_system_user", "tools_text_calls_results", "call_result_no_tools"])
def test_tools_calls_and_results_make_transformers_prompt(server, client, conversation):
    case = golden(conversation)
    # Qwen2.5's template writes no BOS.
    assert_chat_continues_the_prompt(server, client, case, tokenize_text(server, case["text"]))


def test_a_hermes_answer_is_calls_beside_its_text(server, client):
    case = golden("tools_user")
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                       max_tokens=200, temperature=0, extra_body={"guided_choice": [CALL_TEXT]})
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.content == "Let me check.\n"
    calls = choice.message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == \
        [("get_weather", {"city": "Paris"}), ("now", {})]
    assert calls[0].function.arguments == '{"city": "Paris"}'  # json.dumps' spacing, as vLLM writes it
    assert len({c.id for c in calls}) == 2 and all(c.type == "function" for c in calls)

    stream = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                            max_tokens=200, temperature=0, stream=True,
                                            extra_body={"guided_choice": [CALL_TEXT]})
    content, streamed, finish = "", [], None
    for chunk in stream:
        delta = chunk.choices[0].delta
        assert not (delta.content and streamed), "content after the calls"
        content += delta.content or ""
        streamed += delta.tool_calls or []
        finish = chunk.choices[0].finish_reason or finish
    assert content == "Let me check.\n" and finish == "tool_calls"
    assert [(c.index, c.function.name, c.function.arguments) for c in streamed] == \
        [(0, "get_weather", '{"city": "Paris"}'), (1, "now", "{}")]


def test_a_broken_call_is_content_all_of_it(server, client):
    case = golden("tools_user")
    broken = 'Let me check.\n<tool_call>\n{"name": "now"}\n</tool_call>'
    r = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                       max_tokens=200, temperature=0, extra_body={"guided_choice": [broken]})
    assert r.choices[0].message.tool_calls is None and r.choices[0].message.content == broken
    assert r.choices[0].finish_reason == "stop"


def test_auto_streams_prose_as_content(server, client):
    case = golden("tools_user")
    stream = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                            max_tokens=12, temperature=0, stream=True)
    text = ""
    for chunk in stream:
        assert not chunk.choices[0].delta.tool_calls
        text += chunk.choices[0].delta.content or ""
    whole = client.chat.completions.create(model="stories260K", messages=case["messages"], tools=case["tools"],
                                           max_tokens=12, temperature=0)
    assert text == whole.choices[0].message.content and text


def native_generate(server, sampling, text="Once upon a time"):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/generate", body=json.dumps({"text": text, "sampling": sampling}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    return r.status, body


def test_a_lazy_trigger_holds_the_value_after_it_on_the_native_door(server):
    """RESPONSE_FORMAT_LAZY_JSON_SCHEMA with lazy_trigger, the form hermes
    calls are held in (after "<tool_call>\\n"), through /v1/generate: the
    trigger is the end of the model's own first four tokens, so the story
    is written up to it, then a value the schema accepts."""
    status, plain = native_generate(server, {"max_new_tokens": 4, "temperature": 0})
    assert status == 200, plain
    head = plain["text"]
    trigger = head[-6:]
    assert len(trigger) == 6 and head.find(trigger) == len(head) - 6, head
    schema = {"anyOf": [{"type": "object", "properties": {"name": {"type": "string", "enum": ["now"]},
                                                          "arguments": {"type": "object", "properties": {}}},
                         "required": ["name", "arguments"]}]}
    status, held = native_generate(server, {"max_new_tokens": 120, "temperature": 0,
                                            "response_format": "RESPONSE_FORMAT_LAZY_JSON_SCHEMA",
                                            "json_schema": json.dumps(schema), "lazy_trigger": trigger})
    assert status == 200, held
    text = held["text"]
    assert text.startswith(head), (head, text)
    value, end = json.JSONDecoder().raw_decode(text[len(head):])
    assert value == {"name": "now", "arguments": {}}, text
    assert text[len(head):len(head) + end] == '{"name": "now", "arguments": {}}'
    # Refusals name the field.
    status, bad = native_generate(server, {"max_new_tokens": 4, "lazy_trigger": "x"})
    assert status == 400 and "lazy_trigger: only with the lazy JSON schema format" in json.dumps(bad), bad
