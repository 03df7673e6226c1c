"""Shared by the encoder benchmark's model makers: a random-weight model
saved with a golden fixture's tokenizer (the benchmark feeds token ids, so
the tokenizer only has to load) and sentence-transformers' modules as the
golden scripts write them."""
import os
import shutil
import sys


def save_with_fixture_tokenizer(model, repo, out, fixture):
    """model.save_pretrained(out) (out emptied first), then
    tests/golden/encoder_models/<fixture>'s tokenizer.json and
    tokenizer_config.json beside it."""
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    tiny = os.path.join(repo, "tests/golden/encoder_models", fixture)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tiny, name), os.path.join(out, name))
    return tiny


def write_pooling(repo, out, hidden, max_seq_length, mode):
    """sentence-transformers' pooling (`mode` "mean" or "cls") + Normalize."""
    sys.path.insert(0, os.path.join(repo, "tools/golden"))
    from encoder_golden_util import write_pooling_modules
    write_pooling_modules(out, hidden, max_seq_length, normalize=True, mode=mode)
