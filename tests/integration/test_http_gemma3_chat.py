"""Gemma 3's chat template recognised and served end to end.

The server is given a copy of gemma3_tiny (a random-weight Gemma 3 text
decoder with a Gemma-layout tokenizer holding <start_of_turn> and
<end_of_turn>, tools/golden/decoder_make_models.py) whose
tokenizer_config.json carries gemma-3-1b-it's published chat template
(tools/golden/chat_templates/gemma3.jinja), so it must recognise the template
by itself. The reference prompt ids are independent of attnserve's chat and
tokenizer code: transformers' apply_chat_template on that template, the text
tokenized by the tokenizers library from the same tokenizer.json, without
special tokens added (as apply_chat_template tokenizes). Answers must equal
the native API's greedy continuation of exactly those ids."""
import json

import pytest

from conftest import REPO, ServerProcess, http_get, model_copy_with_tokenizer_config, post_json

GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
GEMMA3 = GOLDEN["templates"]["gemma3"]["jinja"]
CONVERSATIONS = {c["conversation"]: c["messages"] for c in GOLDEN["cases"] if c["format"] == "gemma3"}
SOURCE = REPO / "tests/golden/decoder_models/gemma3_tiny"


@pytest.fixture(scope="module")
def model_dir():
    return model_copy_with_tokenizer_config(SOURCE, "gemma3_tiny_chat", {
        "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>",
        "chat_template": GEMMA3})


@pytest.fixture(scope="module")
def server(model_dir):
    s = ServerProcess(f"--decoder-model={model_dir}", "--threads=2")
    yield s
    s.close()


def reference_ids(model_dir, messages, **options):
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"), bos_token="<bos>",
                                               eos_token="<eos>", pad_token="<pad>", unk_token="<unk>")
    text = tok.apply_chat_template(messages, chat_template=GEMMA3, tokenize=False, **options)
    return text, tok(text, add_special_tokens=False)["input_ids"]


def test_the_models_own_template_is_recognised(server):
    status, body = http_get(server.url("/v1/model_info"))
    assert status == 200
    assert json.loads(body)["models"][0]["chat_template"] == "gemma3"
    assert "chat template: gemma3 (the model's own)" in server.output()


@pytest.mark.parametrize("conversation", ["system_and_user", "llama_cpp", "system_spaces", "no_system"])
def test_chat_prompt_ids_are_transformers(server, model_dir, conversation):
    messages = CONVERSATIONS[conversation]
    text, want = reference_ids(model_dir, messages, add_generation_prompt=True)
    if messages[0]["role"] == "system":
        # The system text opens the first user turn: the case this format exists for.
        assert text.startswith("<bos><start_of_turn>user\n" + messages[0]["content"] + "\n\n")
    status, body = post_json(server, "/v1/tokenize", {"chat": {"messages": messages}})
    assert status == 200, body
    assert body["token_ids"] == want


def test_chat_answer_is_the_greedy_continuation_of_the_reference_prompt(server, model_dir):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url("/v1"), api_key="unused", max_retries=0)
    messages = CONVERSATIONS["system_and_user"]
    _, ids = reference_ids(model_dir, messages, add_generation_prompt=True)
    r = client.chat.completions.create(model="gemma3_tiny", messages=messages, max_tokens=12, temperature=0,
                                       extra_body={"ignore_eos": True})
    status, native = post_json(server, "/v1/generate", {
        "token_ids": {"ids": ids}, "sampling": {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}})
    assert status == 200, native
    assert r.usage.prompt_tokens == len(ids)
    assert r.usage.completion_tokens == 12
    assert r.choices[0].message.content == native["text"]


@pytest.mark.parametrize("conversation", ["parts_user", "parts_system", "parts_mixed"])
def test_content_arrays_reach_the_template_as_parts(server, model_dir, conversation):
    # vLLM hands Gemma 3's template the parts (it iterates them): each text
    # trimmed, joined with nothing; a system message's first part only.
    messages = CONVERSATIONS[conversation]
    text, want = reference_ids(model_dir, messages, add_generation_prompt=True)
    last = messages[-1]["content"]
    assert "".join(part["text"].strip() for part in last) + "<end_of_turn>" in text
    status, body = post_json(server, "/tokenize", {"model": "gemma3_tiny", "messages": messages})
    assert status == 200, body
    assert body["tokens"] == want


def test_continue_final_message_as_transformers(server, model_dir):
    messages = CONVERSATIONS["partial_answer"]
    text, want = reference_ids(model_dir, messages, add_generation_prompt=False, continue_final_message=True)
    assert text.endswith("<start_of_turn>model\nThe colour is")  # Gemma trims: the space goes
    status, body = post_json(server, "/v1/tokenize", {
        "chat": {"messages": messages, "add_generation_prompt": False, "continue_final_message": True}})
    assert status == 200, body
    assert body["token_ids"] == want


def test_turns_out_of_order_are_a_400_naming_the_message(server):
    status, body = post_json(server, "/v1/chat/completions", {
        "model": "gemma3_tiny", "max_tokens": 2,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "Hi"}]})
    assert status == 400, body
    assert body["error"]["message"] == ("chat.messages[1]: Conversation roles must alternate "
                                        "user/assistant/user/assistant/... (the gemma3 chat template)")
