"""vLLM's /tokenize and /detokenize against the real binary on stories260K.

The reference is transformers' tokenizer for the same vocabulary, tok512 as
Llama-2 publishes its tokenizer (tests/golden/decoder_tokenizers/
tok512_legacy_tokenizer.json): vLLM answers /tokenize with that tokenizer's
input_ids and convert_ids_to_tokens, and /detokenize with its decode. A
chat's count is the prompt /v1/chat/completions gives the same messages,
and transformers' rendering of Llama-3.1's template (as in
test_http_openai_tools_auto)."""
import json

import pytest

from conftest import REPO
from test_http_openai import post
from test_http_openai_tools_auto import golden, openai_messages, server, tokenize_text  # noqa: F401 (fixture)

TOKENIZER = REPO / "tests/golden/decoder_tokenizers/tok512_legacy_tokenizer.json"
TEXTS = [c["text"] for c in json.loads((REPO / "tests/golden/decoder_tokenizers/stories260K.json").read_text())["cases"]]


@pytest.fixture(scope="module")
def hf():
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER), bos_token="<s>", eos_token="</s>")


def call(server, path, body):
    status, _, raw = post(server, path, body)
    return status, json.loads(raw)


@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_tokenize_is_transformers_tokenizer(server, hf, add_special_tokens):
    for text in TEXTS:
        status, body = call(server, "/tokenize", {"model": "stories260K", "prompt": text,
                                                  "add_special_tokens": add_special_tokens,
                                                  "return_token_strs": True})
        assert status == 200, body
        ids = hf(text, add_special_tokens=add_special_tokens)["input_ids"]
        assert body == {"count": len(ids), "max_model_len": 2048, "tokens": ids,
                        "token_strs": hf.convert_ids_to_tokens(ids)}, text
    # vLLM's defaults: special tokens added, no token strings.
    status, body = call(server, "/tokenize", {"prompt": "Hello world"})
    assert status == 200 and body["tokens"] == hf("Hello world")["input_ids"] and body["token_strs"] is None, body


def test_detokenize_is_transformers_decode(server, hf):
    for text in TEXTS:
        for ids in (hf(text)["input_ids"], hf(text, add_special_tokens=False)["input_ids"] + [hf.eos_token_id]):
            status, body = call(server, "/detokenize", {"model": "stories260K", "tokens": ids})
            assert status == 200, body
            assert body == {"prompt": hf.decode(ids)}, (text, ids)
    # The native door keeps special tokens the same way when asked to, and
    # skips them as transformers does, a special token mid-text included.
    ids = hf("Hello world")["input_ids"]
    status, body = call(server, "/v1/detokenize", {"token_ids": ids, "skip_special_tokens": False})
    assert status == 200 and body["text"] == hf.decode(ids) == "<s> Hello world", body
    mixed = ids + [hf.bos_token_id] + hf("the cat", add_special_tokens=False)["input_ids"] + [hf.eos_token_id]
    for skip in (True, False):
        status, body = call(server, "/v1/detokenize", {"token_ids": mixed, "skip_special_tokens": skip})
        assert status == 200 and body["text"] == hf.decode(mixed, skip_special_tokens=skip), (skip, body)


@pytest.mark.parametrize("conversation", ["tools_system_user", "tools_call_result", "no_system"])
def test_a_chats_count_is_its_completion_prompt(server, client, conversation):
    case = golden(conversation)
    extra = {"tools": case["tools"]} if "tools" in case else {}
    status, body = call(server, "/tokenize", {"messages": openai_messages(case["messages"]), **extra})
    assert status == 200, body
    bos = "<|begin_of_text|>"
    assert case["text"].startswith(bos)
    assert body["tokens"] == tokenize_text(server, "<s>" + case["text"][len(bos):])
    r = client.chat.completions.create(model="stories260K", messages=openai_messages(case["messages"]),
                                       max_tokens=1, **extra)
    assert body["count"] == r.usage.prompt_tokens


@pytest.mark.parametrize("path, body, message", [
    ("/tokenize", {}, "prompt, messages: exactly one is required"),
    ("/tokenize", {"prompt": "a", "messages": []}, "prompt, messages: exactly one is required"),
    ("/tokenize", {"prompt": 7}, "prompt: must be a string"),
    ("/tokenize", {"prompt": "a", "return_token_strs": "yes"}, "return_token_strs: must be a boolean"),
    ("/tokenize", {"messages": [{"role": "user", "content": "a"}], "add_special_tokens": True},
     "add_special_tokens: not supported (with messages the chat template writes"),
    ("/tokenize", {"messages": [{"role": "wizard", "content": "a"}]}, "messages[0].role"),
    ("/detokenize", {}, "tokens: required"),
    ("/detokenize", {"tokens": [1, "x"]}, "tokens[1]: must be"),
    ("/detokenize", {"tokens": [1, 512]}, "token_ids[1] = 512 is out of range [0, 512)"),
])
def test_bad_requests_are_400s_naming_the_field(server, path, body, message):
    status, answer = call(server, path, body)
    assert status == 400 and message in answer["error"]["message"], answer
