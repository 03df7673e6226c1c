"""--reasoning-parser against the real binary: stories260K served with the
chatml template and vLLM's deepseek_r1 or qwen3 parser, read by the
official openai client. stories260K writes stories, not thoughts: served
with --structured-outputs-in-reasoning (a format holds the whole answer), a
guided_choice makes it write a reasoning model's answer, which the parser
must set apart as the message's "reasoning" (and "reasoning_content"),
whole and streamed. Served without it, every format waits for "</think>",
which stories260K never writes. The splitting rules themselves are checked
case by case in server_http_gateway_test (ReasoningParsersSetTheThinkingApart)."""
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


@pytest.fixture(scope="module")
def forcing(server):
    """The same parser with --structured-outputs-in-reasoning, and its openai
    client as .client: a guided_choice holds the whole answer."""
    openai = pytest.importorskip("openai")
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=512",
                      "--chat-template=chatml", f"--reasoning-parser={server.parser}",
                      "--structured-outputs-in-reasoning")
    s.parser = server.parser
    s.client = openai.OpenAI(base_url=s.url("/v1"), api_key="unused", max_retries=0)
    yield s
    s.close()


def extra(obj, key):
    return (obj.model_extra or {}).get(key)


def test_the_thinking_is_set_apart_whole_and_streamed(forcing):
    client = forcing.client
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


def test_an_answer_without_thinking(forcing):
    # A story, no tags: thinking that never ended (all reasoning), as vLLM's
    # parsers read it (its qwen3 parser since the Qwen3 templates that write
    # "<think>" into the prompt); with qwen3's switch off (the prompt closed
    # the thinking) all content, whatever the answer writes.
    client, server = forcing.client, forcing
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=12, temperature=0)
    message = r.choices[0].message
    plain = client.chat.completions.create(model="stories260K", messages=MESSAGES + [], max_tokens=12,
                                           temperature=0, extra_body={"guided_regex": "[^<]*"})
    text = extra(plain.choices[0].message, "reasoning")
    assert text
    assert extra(message, "reasoning") == text and message.content is None
    off = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=100, temperature=0,
                                         extra_body={"guided_choice": [THOUGHT],
                                                     "chat_template_kwargs": {"enable_thinking": False}})
    if server.parser == "qwen3":
        assert off.choices[0].message.content == THOUGHT and extra(off.choices[0].message, "reasoning") is None
    else:
        assert extra(off.choices[0].message, "reasoning") == "\nThe user wants a story.\n"


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


def test_a_thinking_budget_ends_the_thinking_then_the_answer_follows(server, client):
    # vLLM's thinking_token_budget: stories260K never closes a thought; with
    # a budget of 6 tokens it thinks for 6 (its free answer's first 6), the
    # server writes "</think>" (SentencePiece spells it with a space before),
    # and the rest of max_tokens is the answer, held to a format that waits
    # for the thinking. Both parsers read what precedes "</think>" as the
    # thinking.
    def split(message):
        assert "</think>" not in message.content
        return extra(message, "reasoning"), message.content

    first = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=6,
                                           temperature=0).choices[0].message
    six = (extra(first, "reasoning") or "") + (first.content or "")
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=30, temperature=0,
                                       extra_body={"thinking_token_budget": 6})
    thought, answer = split(r.choices[0].message)
    assert thought.rstrip() == six.rstrip() and answer
    assert r.usage.completion_tokens == 30 and r.choices[0].finish_reason == "length"
    held = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=30, temperature=0,
                                          extra_body={"thinking_token_budget": 6, "guided_choice": ["yes", "no"]})
    held_thought, held_answer = split(held.choices[0].message)
    assert held_thought.rstrip() == six.rstrip() and held_answer in ("yes", "no")
    assert held.choices[0].finish_reason == "stop"
    # Streamed, the same thinking and answer.
    reasoning, content = "", ""
    for chunk in client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=30,
                                                temperature=0, stream=True,
                                                extra_body={"thinking_token_budget": 6}):
        if chunk.choices:
            reasoning += extra(chunk.choices[0].delta, "reasoning") or ""
            content += chunk.choices[0].delta.content or ""
    message = r.choices[0].message
    assert (reasoning, content) == (extra(message, "reasoning") or "", message.content)
    bad = post_json(server, "/v1/chat/completions", {"messages": MESSAGES, "thinking_token_budget": -3})
    assert bad[0] == 400 and "thinking_token_budget: -3, must be >= 0" in json.dumps(bad[1])
    # The native door takes the budget and the end text itself.
    status, native = post_json(server, "/v1/generate", {"text": "Once upon a time", "sampling": {
        "max_new_tokens": 12, "temperature": 0, "thinking_token_budget": 4, "thinking_end": "</think>"}})
    assert status == 200 and "</think>" in native["text"], native
    status, free = post_json(server, "/v1/generate", {"text": "Once upon a time", "sampling": {
        "max_new_tokens": 4, "temperature": 0}})
    assert native["text"].startswith(free["text"].rstrip())


def test_the_servers_thinking_budget_is_the_default(server, client):
    # --thinking-token-budget: the budget of requests that send none (a
    # request's own overrides it); the same answers as with it sent.
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=512",
                      "--chat-template=chatml", f"--reasoning-parser={server.parser}", "--thinking-token-budget=6")
    try:
        for sent, default in (({}, {"thinking_token_budget": 6}), ({"thinking_token_budget": 9},) * 2):
            body = {"messages": MESSAGES, "max_tokens": 20, "temperature": 0}
            status, got = post_json(s, "/v1/chat/completions", {**body, **sent})
            assert status == 200, got
            want = client.chat.completions.create(model="stories260K", extra_body=default, **body)
            assert got["choices"][0]["message"]["reasoning"] == extra(want.choices[0].message, "reasoning")
            assert got["choices"][0]["message"]["content"] == want.choices[0].message.content
            assert want.choices[0].message.content  # the forced end came, and an answer after it
    finally:
        s.close()


@pytest.mark.parametrize("held", [{"guided_choice": [THOUGHT]}, {"guided_regex": "(yes|no)"},
                                  {"guided_json": {"type": "object"}}])
def test_guided_formats_wait_for_the_thinking_too(server, client, held):
    # As vLLM's structured outputs: a choice or a regex holds what follows
    # "</think>" as JSON does, so stories260K's answer (a thought that never
    # ends) is its free one; with qwen3's switch off, held from the first token.
    r = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=20, temperature=0,
                                       extra_body=held)
    free = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=20, temperature=0)
    assert r.choices[0].message.content == free.choices[0].message.content
    assert extra(r.choices[0].message, "reasoning") == extra(free.choices[0].message, "reasoning")
    assert r.choices[0].finish_reason == "length"
    off = client.chat.completions.create(model="stories260K", messages=MESSAGES, temperature=0,
                                         max_tokens=20 if server.parser == "deepseek_r1" else 100,
                                         extra_body={**held, "chat_template_kwargs": {"enable_thinking": False}})
    if server.parser == "deepseek_r1":
        assert extra(off.choices[0].message, "reasoning") == extra(free.choices[0].message, "reasoning")
    elif "guided_choice" in held:  # the prompt closed the thinking: all of it is the answer
        assert extra(off.choices[0].message, "reasoning") is None
        assert off.choices[0].message.content == THOUGHT
    elif "guided_regex" in held:
        assert off.choices[0].message.content in ("yes", "no") and off.choices[0].finish_reason == "stop"
    else:
        assert off.choices[0].message.content.lstrip().startswith("{")


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


def test_a_lazy_trigger_waits_for_constrain_after_on_the_native_door(server):
    # hermes' held calls with a reasoning parser (RESPONSE_FORMAT_LAZY_JSON_SCHEMA
    # with lazy_trigger and constrain_after "</think>"), here on the story's
    # own words: the trigger (the end of its first four tokens) written
    # before constrain_after's text (the end of its first twelve) holds
    # nothing; without constrain_after it holds a call right after it.
    def generate(sampling):
        status, body = post_json(server, "/v1/generate", {"text": "Once upon a time",
                                                         "sampling": {"temperature": 0, **sampling}})
        assert status == 200, body
        return body["text"]
    head, thought = generate({"max_new_tokens": 4}), generate({"max_new_tokens": 12})
    trigger, marker = head[-6:], thought[-6:]
    assert thought.startswith(head) and thought.find(trigger) == len(head) - 6, thought
    assert thought.find(marker) == len(thought) - 6, thought
    schema = {"type": "object", "properties": {"name": {"type": "string", "enum": ["now"]},
                                               "arguments": {"type": "object", "properties": {}}},
              "required": ["name", "arguments"]}
    lazy = {"max_new_tokens": 40, "response_format": "RESPONSE_FORMAT_LAZY_JSON_SCHEMA",
            "json_schema": json.dumps(schema), "lazy_trigger": trigger}
    unwaited = generate(lazy)
    assert unwaited.startswith(head + '{"name": "now", "arguments": {}}'), unwaited
    waited = generate({**lazy, "constrain_after": marker})
    assert waited.startswith(thought), waited


def test_the_responses_api_gives_the_thinking_as_a_reasoning_item(server, client):
    # The same prompt as the chat's (one user turn): both parsers read
    # stories260K's story as thinking the limit cut (a reasoning item alone,
    # every token a reasoning token).
    chat = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=12, temperature=0)
    thinking = extra(chat.choices[0].message, "reasoning")
    kwargs = dict(model="stories260K", input=MESSAGES[0]["content"], max_output_tokens=12, temperature=0)
    r = client.responses.create(**kwargs)
    assert r.status == "incomplete" and len(r.output) == 1
    item = r.output[0]
    assert item.type == "reasoning" and item.id.startswith("rs_") and item.summary == []
    assert [(c.type, c.text) for c in item.content] == [("reasoning_text", thinking)]
    assert r.output_text == "" and r.usage.output_tokens_details.reasoning_tokens == 12
    streamed, deltas = None, ""
    with client.responses.stream(**kwargs) as stream:
        for event in stream:
            if event.type == "response.reasoning_text.delta":
                deltas += event.delta
            if event.type == "response.incomplete":  # the SDK's final response wants "completed"
                streamed = event.response
    assert deltas == (thinking or "")
    assert [o.model_dump(exclude={"id"}) for o in streamed.output] == [o.model_dump(exclude={"id"}) for o in r.output]
    # Given back as input (the client's own reasoning item), the thinking is
    # the next assistant turn's; the chatml template shows none, so the
    # answer is the one to the conversation without it.
    turn = [{"role": "user", "content": "Tell me a story."}]
    after = [{"role": "assistant", "content": "The end."}, {"role": "user", "content": "Again."}]
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Hm."}]}
    with_thinking = client.responses.create(model="stories260K", input=turn + [item] + after, max_output_tokens=6,
                                            temperature=0)
    without = client.responses.create(model="stories260K", input=turn + after, max_output_tokens=6, temperature=0)
    assert [o.model_dump(exclude={"id"}) for o in with_thinking.output] == \
        [o.model_dump(exclude={"id"}) for o in without.output]
    assert with_thinking.usage.input_tokens == without.usage.input_tokens


def test_the_messages_api_gives_the_thinking_as_a_thinking_block(server, client):
    # The anthropic SDK against the same prompt: both parsers read the story
    # as thinking the limit cut (a thinking block alone, streamed as
    # thinking_delta); with thinking disabled qwen3's is text (the prompt
    # closed the thinking; chatml shows no switch, so the same story);
    # thinking blocks given back are taken (chatml shows no thinking: the
    # same answer as without them).
    anthropic = pytest.importorskip("anthropic")
    messages = anthropic.Anthropic(base_url=server.url(""), api_key="none", max_retries=0).messages
    chat = client.chat.completions.create(model="stories260K", messages=MESSAGES, max_tokens=12, temperature=0)
    thinking = extra(chat.choices[0].message, "reasoning")
    kwargs = dict(model="stories260K", max_tokens=12, messages=MESSAGES,
                  extra_body={"temperature": 0})  # the SDK no longer sends it
    m = messages.create(**kwargs)
    assert m.stop_reason == "max_tokens"
    assert [(b.type, b.thinking, b.signature) for b in m.content] == [("thinking", thinking, "")]
    off = messages.create(**kwargs, thinking={"type": "disabled"})
    if server.parser == "qwen3":
        assert [(b.type, b.text) for b in off.content] == [("text", thinking)]
    else:
        assert [b.model_dump() for b in off.content] == [b.model_dump() for b in m.content]
    with messages.stream(**kwargs) as stream:
        deltas = "".join(e.delta.thinking for e in stream
                         if e.type == "content_block_delta" and e.delta.type == "thinking_delta")
        final = stream.get_final_message()
    assert deltas == (thinking or "")
    assert [b.model_dump() for b in final.content] == [b.model_dump() for b in m.content]
    # Thinking switched on is served with a parser (chatml has no switch:
    # the same answer); budget_tokens as Anthropic checks it.
    on = messages.create(**kwargs, thinking={"type": "adaptive"})
    assert [b.model_dump() for b in on.content] == [b.model_dump() for b in m.content]
    with pytest.raises(anthropic.BadRequestError) as e:
        messages.create(**kwargs, thinking={"type": "enabled", "budget_tokens": 1024})
    assert "thinking.budget_tokens = 1024: must be less than max_tokens (12)" in e.value.body["error"]["message"]
    given = [MESSAGES[0], {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Hm.", "signature": ""}, {"type": "text", "text": "The end."}]},
        {"role": "user", "content": "Again."}]
    plain = [MESSAGES[0], {"role": "assistant", "content": "The end."}, {"role": "user", "content": "Again."}]
    with_thinking = messages.create(**dict(kwargs, messages=given, max_tokens=6))
    without = messages.create(**dict(kwargs, messages=plain, max_tokens=6))
    assert with_thinking.content == without.content and with_thinking.usage == without.usage
