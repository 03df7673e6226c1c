"""xgrammar over a vocabulary of the 256 single bytes, byte 0 standing for
the end of output: what the JSON-schema and regex golden scripts read
documents with, a byte at a time."""
import xgrammar as xgr


def byte_compiler():
    """A GrammarCompiler whose token i is byte i (token 0: the end)."""
    vocab = [bytes([b]) for b in range(256)]
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=256, stop_token_ids=[0])
    return xgr.GrammarCompiler(info, max_threads=1)


def reads(compiled, doc: bytes):
    """How many of doc's first bytes the grammar's matcher takes (it takes a
    byte only if some document goes on from it), and whether it takes the
    whole document then its end."""
    m = xgr.GrammarMatcher(compiled)
    for i, b in enumerate(doc):
        # byte 0 is the stand-in end token here; the grammar never takes it in text
        if b == 0 or not m.accept_token(b):
            return i, False
    return len(doc), m.accept_token(0)
