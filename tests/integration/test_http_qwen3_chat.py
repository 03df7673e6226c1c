"""Qwen3's chat template recognised and served end to end, its thinking
switch and thinking given back included.

The server is given a copy of qwen3_tiny (a random-weight Qwen3 decoder with
a ChatML byte-level BPE tokenizer, tools/golden/decoder_make_models.py) whose
tokenizer_config.json carries Qwen3-0.6B's published chat template
(tools/golden/chat_templates/qwen3.jinja), so it must recognise the template
by itself. The reference prompt ids are independent of attnserve's chat and
tokenizer code: transformers' apply_chat_template on that template (with
enable_thinking, tools and reasoning_content as vLLM hands them to it), the
text tokenized by the tokenizers library from the same tokenizer.json
without special tokens added. Both doors are checked: vLLM's /tokenize with
chat_template_kwargs, and the native API's chat prompt. Answers with
thinking off must equal the native API's greedy continuation of exactly
those ids, all of it content under --reasoning-parser=qwen3."""
import json

import pytest

from conftest import REPO, ServerProcess, http_get, model_copy_with_tokenizer_config, post_json

GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
QWEN3 = GOLDEN["templates"]["qwen3"]["jinja"]
CONVERSATIONS = {c["conversation"]: c["messages"] for c in GOLDEN["cases"] if c["format"] == "qwen3"}
TOOLS = next(c["tools"] for c in GOLDEN["cases"] if c["format"] == "qwen3" and "tools" in c)
SOURCE = REPO / "tests/golden/decoder_models/qwen3_tiny"


@pytest.fixture(scope="module")
def model_dir():
    return model_copy_with_tokenizer_config(SOURCE, "qwen3_tiny_chat", {
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "chat_template": QWEN3})


@pytest.fixture(scope="module")
def server(model_dir):
    s = ServerProcess(f"--decoder-model={model_dir}", "--threads=2", "--reasoning-parser=qwen3")
    yield s
    s.close()


def reference_ids(model_dir, messages, tools=None, **options):
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"),
                                               eos_token="<|im_end|>", pad_token="<|endoftext|>")
    text = tok.apply_chat_template(messages, tools=tools, chat_template=QWEN3, tokenize=False, **options)
    return text, tok(text, add_special_tokens=False)["input_ids"]


def openai_messages(messages):
    """The golden messages as an OpenAI client sends them: a call's
    arguments as JSON text (vLLM and this server parse them back)."""
    out = []
    for m in messages:
        m = dict(m)
        if "tool_calls" in m:
            m["tool_calls"] = [dict(c, function=dict(c["function"], arguments=json.dumps(c["function"]["arguments"])))
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def proto_messages(messages):
    """The same as the native API's ChatMessage JSON."""
    out = []
    for m in openai_messages(messages):
        p = {"role": m["role"], "content": m.get("content", "")}
        if "reasoning_content" in m:
            p["reasoning_content"] = m["reasoning_content"]
        if "tool_calls" in m:
            p["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                               for c in m["tool_calls"]]
        out.append(p)
    return out


def test_the_models_own_template_is_recognised(server):
    status, body = http_get(server.url("/v1/model_info"))
    assert status == 200
    assert json.loads(body)["models"][0]["chat_template"] == "qwen3"
    assert "chat template: qwen3 (the model's own)" in server.output()


CASES = ["system_and_user", "think_history", "reasoning_field", "reasoning_field_history",
         "tools_interleaved_thinking", "tools_result_as_user_text"]


@pytest.mark.parametrize("enable_thinking", [None, False])
@pytest.mark.parametrize("conversation", CASES)
def test_vllm_tokenize_is_transformers(server, model_dir, conversation, enable_thinking):
    messages = CONVERSATIONS[conversation]
    tools = TOOLS if conversation.startswith("tools_") else None
    kwargs = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
    text, want = reference_ids(model_dir, messages, tools=tools, add_generation_prompt=True, **kwargs)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n" if enable_thinking is False
                         else "<|im_start|>assistant\n")
    body = {"model": "qwen3_tiny", "messages": openai_messages(messages)}
    if tools:
        body["tools"] = tools
    if kwargs:
        body["chat_template_kwargs"] = kwargs
    status, got = post_json(server, "/tokenize", body)
    assert status == 200, got
    assert got["tokens"] == want


@pytest.mark.parametrize("conversation", ["reasoning_field", "tools_interleaved_thinking"])
def test_native_chat_prompt_is_transformers(server, model_dir, conversation):
    messages = CONVERSATIONS[conversation]
    tools = TOOLS if conversation.startswith("tools_") else None
    _, want = reference_ids(model_dir, messages, tools=tools, add_generation_prompt=True, enable_thinking=False)
    chat = {"messages": proto_messages(messages), "enable_thinking": False}
    if tools:
        chat["tools"] = [json.dumps(t) for t in tools]
    status, body = post_json(server, "/v1/tokenize", {"chat": chat})
    assert status == 200, body
    assert body["token_ids"] == want


def test_thinking_given_back_under_vllms_current_name(server, model_dir):
    # "reasoning" (vLLM's name now; transformers reads it as reasoning_content),
    # and both names with one text, as this server's own answers carry them.
    messages = CONVERSATIONS["reasoning_field"]
    _, want = reference_ids(model_dir, messages, add_generation_prompt=True)
    answer = dict(messages[1])
    reasoning = answer.pop("reasoning_content")
    for given in [{"reasoning": reasoning}, {"reasoning": reasoning, "reasoning_content": reasoning}]:
        status, got = post_json(server, "/tokenize", {"model": "qwen3_tiny",
                                                      "messages": [messages[0], dict(answer, **given)]})
        assert status == 200, got
        assert got["tokens"] == want, given


def test_answer_without_thinking_is_the_greedy_continuation_all_content(server, model_dir):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url("/v1"), api_key="unused", max_retries=0)
    messages = CONVERSATIONS["think_history"]
    _, ids = reference_ids(model_dir, messages, add_generation_prompt=True, enable_thinking=False)
    r = client.chat.completions.create(model="qwen3_tiny", messages=messages, max_tokens=12, temperature=0,
                                       extra_body={"ignore_eos": True,
                                                   "chat_template_kwargs": {"enable_thinking": False}})
    status, native = post_json(server, "/v1/generate", {
        "token_ids": {"ids": ids}, "sampling": {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}})
    assert status == 200, native
    assert not native["text"].startswith("<think>")
    assert r.usage.prompt_tokens == len(ids)
    assert r.usage.completion_tokens == 12
    assert r.choices[0].message.content == native["text"]
    assert r.choices[0].message.model_extra["reasoning_content"] is None


def test_continue_final_message_as_transformers(server, model_dir):
    # The last answer's thinking is shown as the template rewrites it; a
    # final message the template rewrites cannot be continued (transformers
    # refuses it too).
    messages = CONVERSATIONS["plain_answer_last"]
    text, want = reference_ids(model_dir, messages, add_generation_prompt=False, continue_final_message=True)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\nHello ")
    status, body = post_json(server, "/tokenize", {"model": "qwen3_tiny", "messages": messages,
                                                   "add_generation_prompt": False, "continue_final_message": True})
    assert status == 200, body
    assert body["tokens"] == want
    status, body = post_json(server, "/tokenize", {"model": "qwen3_tiny", "messages": CONVERSATIONS["think_twice"],
                                                   "add_generation_prompt": False, "continue_final_message": True})
    assert status == 400, body
    assert "continue_final_message: the qwen3 chat template does not show the final message's content" in \
        body["error"]["message"]


def test_unknown_template_arguments_are_a_400_naming_them(server):
    status, body = post_json(server, "/v1/chat/completions", {
        "model": "qwen3_tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}],
        "chat_template_kwargs": {"enable_thinking": False, "reasoning_effort": "high"}})
    assert status == 400, body
    assert body["error"]["message"].startswith("chat_template_kwargs.reasoning_effort: not supported")
    status, body = post_json(server, "/v1/chat/completions", {
        "model": "qwen3_tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}],
        "chat_template_kwargs": {"enable_thinking": "false"}})
    assert status == 400, body
    assert body["error"]["message"].startswith("chat_template_kwargs.enable_thinking: must be")


def test_a_responses_reasoning_item_is_the_next_answers_thinking(server, model_dir):
    # The Responses API's way of giving thinking back: a reasoning item
    # before the assistant's message, which Qwen3's template then shows
    # (the answer is after the last query): transformers' prompt with that
    # message's reasoning_content, and the native greedy continuation of it.
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url("/v1"), api_key="unused", max_retries=0)
    messages = CONVERSATIONS["reasoning_field"]
    _, ids = reference_ids(model_dir, messages, add_generation_prompt=True)
    item = {"type": "reasoning", "id": "rs_1", "summary": [],
            "content": [{"type": "reasoning_text", "text": messages[1]["reasoning_content"]}]}
    r = client.responses.create(model="qwen3_tiny", max_output_tokens=8, temperature=0,
                                input=[{"role": "user", "content": messages[0]["content"]}, item,
                                       {"role": "assistant", "content": messages[1]["content"]}],
                                extra_body={"ignore_eos": True})
    status, native = post_json(server, "/v1/generate", {
        "token_ids": {"ids": ids}, "sampling": {"max_new_tokens": 8, "temperature": 0, "ignore_eos": True}})
    assert status == 200, native
    assert not native["text"].startswith("<think>") and "</think>" not in native["text"]
    assert r.usage.input_tokens == len(ids)
    # An answer that never closes its thinking is all thinking (vLLM's qwen3
    # parser): a reasoning item alone.
    assert [o.type for o in r.output] == ["reasoning"] and r.output_text == ""
    assert [c.text for c in r.output[0].content] == [native["text"]]


@pytest.mark.parametrize("thinking", [{"type": "disabled"}, {"type": "adaptive"}, None])
def test_anthropics_thinking_switch_is_qwen3s(server, model_dir, thinking):
    # The Messages API's thinking setting as the template's switch: disabled
    # is transformers' prompt with enable_thinking false (the empty think
    # block), adaptive (or none) the prompt with thinking on.
    messages = CONVERSATIONS["think_history"]
    kwargs = {"enable_thinking": False} if thinking == {"type": "disabled"} else {}
    _, want = reference_ids(model_dir, messages, add_generation_prompt=True, **kwargs)
    body = {"model": "qwen3_tiny", "messages": messages}
    if thinking is not None:
        body["thinking"] = thinking
    status, got = post_json(server, "/v1/messages/count_tokens", body)
    assert status == 200, got
    assert got["input_tokens"] == len(want)
