"""A GGUF decoder stops where llama.cpp stops: at its end-of-generation
tokens (tests/golden/decoder_models/gguf_eog_llamacpp.json, from
tools/golden/gguf_eog_llamacpp.py: llama.cpp's llama_vocab_is_eog over every
id). eog_tiny/model.gguf is stories260K with its last pieces renamed to
llama.cpp's turn and text ends and EOT / EOM / FIM ids set on ordinary
pieces. A logit bias makes each candidate the greedy answer's first token:
an end-of-generation token ends the answer there ("stop", nothing written),
any other is written and the answer runs to its length."""
import json

import pytest

from conftest import REPO, ServerProcess, post_json

MODEL = REPO / "tests/golden/decoder_models/eog_tiny/model.gguf"
EOG = next(f for f in json.loads((REPO / "tests/golden/decoder_models/gguf_eog_llamacpp.json").read_text())["files"]
           if f["file"] == "eog_tiny/model.gguf")


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--decoder-model={MODEL}", "--threads=1")
    yield s
    s.close()


def first_token_forced(server, token_id):
    status, body = post_json(server, "/v1/completions", {
        "model": "eog_tiny", "prompt": "Once upon a time", "max_tokens": 3, "temperature": 0,
        "logit_bias": {str(token_id): 100}})
    assert status == 200, body
    return body["choices"][0]


@pytest.mark.parametrize("token_id", [2, 300, 303, 496, 497, 499, 500, 501, 505, 510])
def test_llama_cpps_end_of_generation_tokens_end_the_answer(server, token_id):
    assert token_id in EOG["eog_ids"]
    choice = first_token_forced(server, token_id)
    assert choice["finish_reason"] == "stop", choice
    assert choice["text"] == ""


@pytest.mark.parametrize("token_id", [299, 508, 509])
def test_other_tokens_do_not(server, token_id):
    assert token_id not in EOG["eog_ids"]
    choice = first_token_forced(server, token_id)
    assert choice["finish_reason"] == "length", choice
