"""--reasoning-parser against the real binary: stories260K served with the
chatml template and vLLM's deepseek_r1 or qwen3 parser, read by the
official openai client. stories260K writes stories, not thoughts: a
guided_choice makes it write a reasoning model's answer, which the parser
must set apart as the message's "reasoning" (and "reasoning_content"),
whole and streamed. The splitting rules themselves are checked case by case
in server_http_gateway_test (ReasoningParsersSetTheThinkingApart)."""
import json

import pytest

from conftest import REPO, ServerProcess, post_json

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
THOUGHT = "<think>\nThe user wants a story.\n</think>\n\nOnce upon a time."
MESSAGES = [{"role": "user", "content": "Tell me a story."}]


@pytest.fixture(scope="module", params=["qwen3", "deepseek_r1"])
def server(request):
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=512",
                      "--chat-template=chatml", f"--reasoning-parser={request.param}")
    s.parser = request.param
    yield s
    s.close()


def extra(obj, key):
    return (obj.model_extra or {}).get(key)


def test_the_thinking_is_set_apart_whole_and_streamed(server, client):
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=100, temperature=0,
                                       extra_body={"guided_choice": [THOUGHT]})
    message = r.choices[0].message
    assert extra(message, "reasoning") == "\nThe user wants a story.\n"
    assert extra(message, "reasoning_content") == extra(message, "reasoning")
    assert message.content == "\n\nOnce upon a time."
    assert r.choices[0].finish_reason == "stop"

    reasoning, content, order = "", "", []
    for chunk in client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=100,
                                                temperature=0, stream=True,
                                                extra_body={"guided_choice": [THOUGHT]}):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if extra(delta, "reasoning"):
            assert extra(delta, "reasoning_content") == extra(delta, "reasoning")
            reasoning += extra(delta, "reasoning")
            order.append("r")
        if delta.content:
            content += delta.content
            order.append("c")
    assert reasoning == extra(message, "reasoning") and content == message.content
    assert order == sorted(order, key=lambda k: k == "c") and "r" in order and "c" in order


def test_an_answer_without_thinking(server, client):
    # A story, no tags: qwen3 reads thinking as off (all content); deepseek_r1
    # as thinking that never ended (all reasoning), as vLLM's parsers do.
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=12, temperature=0)
    message = r.choices[0].message
    plain = client.chat.completions.create(model="stories260K", messages=MESSAGES + [], max_tokens=12,
                                           temperature=0, extra_body={"guided_regex": "[^<]*"})
    text = plain.choices[0].message.content if server.parser == "qwen3" else extra(plain.choices[0].message,
                                                                                   "reasoning")
    assert text
    if server.parser == "qwen3":
        assert message.content == text and extra(message, "reasoning") is None
    else:
        assert extra(message, "reasoning") == text and message.content is None


def test_json_is_held_after_the_thinking(server, client):
    # As vLLM's structured outputs with a reasoning parser: the model thinks
    # first and the format holds what follows "</think>". stories260K never
    # closes a thought, so its answer stays the free one (thinking that never
    # ended), not JSON forced from the first token.
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=20, temperature=0,
                                       response_format={"type": "json_object"})
    free = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=20, temperature=0)
    assert r.choices[0].message.content == free.choices[0].message.content
    assert extra(r.choices[0].message, "reasoning") == extra(free.choices[0].message, "reasoning")
    assert r.choices[0].finish_reason == "length"
    # Where Qwen3's template has closed the thinking in the prompt (its
    # switch off), JSON holds the answer from its first token, and none of
    # it is thinking; DeepSeek-R1's parser always waits for the thinking.
    off = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=20, temperature=0,
                                         response_format={"type": "json_object"},
                                         extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    if server.parser == "qwen3":
        assert off.choices[0].message.content.lstrip().startswith("{")
        assert extra(off.choices[0].message, "reasoning") is None
    else:
        assert extra(off.choices[0].message, "reasoning") == extra(free.choices[0].message, "reasoning")


def test_native_constrain_after_frees_the_text_until_it(server):
    # The proto's constrain_after, as the gateway sets it ("</think>"), here
    # on words stories260K writes: its free story up to them, JSON after.
    status, plain = post_json(server, "/v1/generate", {"text": "Once upon a time",
                                                      "sampling": {"max_new_tokens": 40, "temperature": 0}})
    assert status == 200, plain
    marker = plain["text"][:12].rstrip()  # ends a token: the next token is held
    status, held = post_json(server, "/v1/generate", {"text": "Once upon a time", "sampling": {
        "max_new_tokens": 200, "temperature": 0, "response_format": "RESPONSE_FORMAT_JSON_OBJECT",
        "constrain_after": marker}})
    assert status == 200, held
    assert held["text"].startswith(marker), held["text"]
    value = held["text"][len(marker):]
    assert value.lstrip().startswith("{"), held["text"]
    if held["finish_reason"] == "FINISH_REASON_STOP":
        json.loads(value)
    status, body = post_json(server, "/v1/generate", {"text": "Once upon a time", "sampling": {
        "max_new_tokens": 5, "constrain_after": "x"}})
    assert status == 400 and "constrain_after: only with" in json.dumps(body), body
