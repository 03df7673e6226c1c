"""Models that carry one of the recognised templates as their own are served
in that format without --chat-template, end to end.

Each case gives a copy of a tiny decoder (tools/golden/decoder_make_models.py)
a tokenizer_config.json holding a published template as that model family
ships it (tools/golden/chat_templates/: Gemma 2's copy of Gemma's template,
typed differently from gemma-7b-it's; Phi-3.5-mini's, which differs from
Phi-3's; Phi-4-mini's and phi-4's on the Phi-3 fixtures; granite-3.0's on the
Granite 3 fixture). The server must name the format by itself, and a chat's prompt ids
must be transformers' apply_chat_template on that text, tokenized by the
tokenizers library from the same tokenizer.json without special tokens
added (qwen3_tiny has no <|user|> token: Phi-3.5's markers are plain text
on both sides, and the start-up log warns of it)."""
import json

import pytest

from conftest import REPO, ServerProcess, http_get, model_copy_with_tokenizer_config, post_json

GOLDEN = json.loads((REPO / "tests/golden/chat_templates/renders.json").read_text())
MODELS = REPO / "tests/golden/decoder_models"
CASES = {
    # (model directory, the template's text, its special tokens, the format it is)
    "gemma-2-2b-it": ("gemma2_tiny", GOLDEN["variants"]["gemma-2-2b-it"]["jinja"],
                      {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"},
                      "gemma"),
    "phi3.5": ("qwen3_tiny", GOLDEN["templates"]["phi3.5"]["jinja"],
               {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, "phi3.5"),
    # Phi-4-mini's and phi-4's own templates on the Phi-3 fixtures (model_type phi3, as those models are)
    "phi4-mini": ("phi3_longrope_tiny", GOLDEN["templates"]["phi4-mini"]["jinja"], {"eos_token": "<|end_of_text|>"},
                  "phi4-mini"),
    "phi4": ("phi3_tiny", GOLDEN["templates"]["phi4"]["jinja"], {"eos_token": "<|end_of_text|>"}, "phi4"),
    # granite-3.0-instruct's template on the Granite 3 fixture (its role markers plain text there)
    "granite3": ("granite_tiny", GOLDEN["templates"]["granite3"]["jinja"], {"eos_token": "<|end_of_text|>"},
                 "granite3"),
}
CONVERSATIONS = {c["conversation"]: c["messages"] for c in GOLDEN["cases"] if c["format"] == "chatml"}


@pytest.fixture(scope="module", params=sorted(CASES))
def served(request):
    model, jinja, special, fmt = CASES[request.param]
    out = model_copy_with_tokenizer_config(MODELS / model, f"{model}_{request.param}_chat",
                                           {**special, "chat_template": jinja})
    s = ServerProcess(f"--decoder-model={out}", "--threads=1")
    yield s, out, jinja, special, fmt
    s.close()


def test_the_format_is_recognised_and_prompts_are_transformers(served):
    transformers = pytest.importorskip("transformers")
    server, out, jinja, special, fmt = served
    status, body = http_get(server.url("/v1/model_info"))
    assert status == 200
    assert json.loads(body)["models"][0]["chat_template"] == fmt
    assert f"chat template: {fmt} (the model's own)" in server.output()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(out / "tokenizer.json"), **special)
    for conversation in ["llama_cpp", "no_system", "system_empty"]:
        messages = CONVERSATIONS[conversation]
        if fmt == "gemma" and messages[0]["role"] == "system":
            continue  # Gemma's template refuses a system message (tested in the renders)
        text = tok.apply_chat_template(messages, chat_template=jinja, tokenize=False, add_generation_prompt=True)
        status, got = post_json(server, "/tokenize", {"model": "m", "messages": messages})
        assert status == 200, got
        assert got["tokens"] == tok(text, add_special_tokens=False)["input_ids"], conversation
