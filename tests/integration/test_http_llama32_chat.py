"""Llama-3.2's chat template (llama3.2) against the real binary: stories260K
served with --chat-template=llama3.2.

Llama-3.2-1B/3B-Instruct's template dates its system block by the clock
(transformers' strftime_now("%d %b %Y"), which vLLM's rendering calls) unless
the request gives chat_template_kwargs' date_string. The references are
transformers' renderings of the published template
(tests/golden/chat_templates/renders.json, tools/golden/chat_templates.py,
rendered there with a fixed clock): with a date_string given, the server's
prompt must be the reference text, tokenized by the server as plain text
(the template writes Llama-3's BOS text; stories260K's BOS is <s>); without
one, the same text with today's date by the server's clock."""
import datetime
import http.client
import json

import pytest

from conftest import REPO, ServerProcess, post_json

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
BOS = GOLDEN["templates"]["llama3.2"]["bos_token"]


def golden(conversation, dated):
    for c in GOLDEN["cases"]:
        if c["format"] == "llama3.2" and c["conversation"] == conversation and c["add_generation_prompt"] and \
                not c["continue_final_message"] and ("date_string" in c) == dated:
            return c
    raise KeyError(conversation)


def openai_messages(messages):
    """A call's arguments as JSON text, as an OpenAI client sends them."""
    return [dict(m, tool_calls=[dict(c, function=dict(c["function"], arguments=json.dumps(c["function"]["arguments"])))
                                for c in m["tool_calls"]]) if "tool_calls" in m else m for m in messages]


@pytest.fixture(scope="module")
def server():
    # Tools shown as indented JSON take 1,200+ of stories260K's tokens.
    s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", "--decoder-context-length=2048",
                      "--chat-template=llama3.2")
    yield s
    s.close()


def tokenize_text(server, text):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", "/v1/tokenize", body=json.dumps({"text": "<s>" + text[len(BOS):], "add_special_tokens": False}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 200, body
    return body["token_ids"]


def served_ids(server, case, **extra):
    body = {"model": "stories260K", "messages": openai_messages(case["messages"]), **extra}
    if "tools" in case:
        body["tools"] = case["tools"]
    status, got = post_json(server, "/tokenize", body)
    assert status == 200, got
    return got["tokens"]


@pytest.mark.parametrize("conversation", ["system_and_user", "no_system", "tools_call_result"])
def test_a_given_date_string_makes_transformers_prompt(server, conversation):
    case = golden(conversation, dated=True)
    assert "Today Date: " + case["date_string"] + "\n" in case["text"]
    assert served_ids(server, case, chat_template_kwargs={"date_string": case["date_string"]}) == \
        tokenize_text(server, case["text"])


@pytest.mark.parametrize("conversation", ["system_and_user", "tools_call_result"])
def test_without_one_the_prompt_is_dated_today(server, conversation):
    case = golden(conversation, dated=False)
    rendered_on = "Today Date: " + case["today"] + "\n"  # the golden script's fixed clock
    assert rendered_on in case["text"]
    # The server's clock, read around the request (a render across midnight
    # shows either date; its zone may be the host's or UTC).
    now = [datetime.datetime.now(), datetime.datetime.now(datetime.timezone.utc)]
    got = served_ids(server, case)
    now += [datetime.datetime.now(), datetime.datetime.now(datetime.timezone.utc)]
    candidates = {t.strftime("%d %b %Y") for t in now}
    wants = [tokenize_text(server, case["text"].replace(rendered_on, "Today Date: " + d + "\n")) for d in candidates]
    assert got in wants, sorted(candidates)


def test_a_date_string_that_is_not_text_is_a_400(server):
    status, body = post_json(server, "/v1/chat/completions", {
        "model": "stories260K", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}],
        "chat_template_kwargs": {"date_string": 20300201}})
    assert status == 400, body
    assert body["error"]["message"].startswith("chat_template_kwargs.date_string: must be a string")
