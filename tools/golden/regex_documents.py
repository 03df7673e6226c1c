#!/usr/bin/env python3
"""Reference verdicts for the engine's regex mode (vLLM's guided_regex;
engine/sampling/regex_dfa.h through CompileRegexConstraint): for each of a
set of regular expressions, documents with
  - "prefix": how many of the document's first bytes xgrammar's regex
    matcher takes (GrammarCompiler.compile_regex, what vLLM uses; it refuses
    a byte as soon as no match can go on from it), and
  - "accepted": whether Python's re.fullmatch (ASCII classes as ECMA-262,
    DOTALL: "." takes a newline, as xgrammar's does) matches the document,
    which must be strict UTF-8.
The C++ test must agree with both. xgrammar's own whole-document verdict is
kept as "xgrammar_accepted": it differs from re's where xgrammar 0.2.9
reads a negated class with "+" inside a repeated group as if the "+" were
"*" (it takes "a, " for "[^\s,]+(, [^\s,]+)*"); attnserve follows re there.
Encoded surrogates (ED A0 80) are left out: xgrammar takes them as
characters, attnserve refuses them as invalid UTF-8 (RFC 3629), as its JSON
modes do.

Documents: strings each regex matches (checked with Python's re.fullmatch,
ASCII classes as ECMA-262), their mutants (a byte deleted, replaced,
inserted, or the document cut short) and a few hand-written ones.

Writes tests/golden/regex/documents.json.

Usage: .cache/venv/bin/python tools/golden/regex_documents.py
  (xgrammar: pip install --no-deps -r tools/python/bench-nodeps-requirements.txt)
"""
import json
import pathlib
import random
import re
import sys
from importlib import metadata


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import json_documents  # noqa: E402  (the mutations)
import xgrammar_bytes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "regex" / "documents.json"

# Each regex with strings it matches whole.
CASES = [
    (r"(ab|c)+\d{2}", ["ab12", "cab99", "cc00", "abab31"]),
    (r"[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})?", ["Lily", "Tom Sawyer", "Ab Cd"]),
    (r"(yes|no|maybe)\.?", ["yes", "no.", "maybe"]),
    (r"a.b", ["a\nb", 'a"b', "aéb", "a\\b", "a😀b"]),
    (r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", ["0", "-12.5", "3e10", "7.25E-3"]),
    (r"[^\s,]+(, [^\s,]+)*", ["a, b", "日本, x", "one"]),
    (r"\w+@\w+\.(com|org)", ["lily@mail.com", "a_1@b.org"]),
    (r"(?:[0-9a-f]{2}:){2}[0-9a-f]{2}\n?", ["0a:1b:ff", "00:00:00\n"]),
    (r"\{\"k\": \[\d(, \d)*\]\}", ['{"k": [1]}', '{"k": [1, 2, 3]}']),
    (r"[é日-本]*x{2,3}|😀+", ["xx", "日本xxx", "😀😀", "éxx"]),
    (r"^\t?[^a-z\n]{0,4}$", ["", "\tAB", "1234", "\t!?"]),
]

MUTATION_BYTES = b'abcxyz019 -.,:{}[]"\\\n\t\xc3\xa9\x80\xff@'


def main():
    rng = random.Random(20261205)
    compiler = xgrammar_bytes.byte_compiler()
    cases = []
    for pattern, examples in CASES:
        compiled = compiler.compile_regex(pattern)

        def xgrammar_reads(doc):
            return xgrammar_bytes.reads(compiled, doc)

        docs = set()
        for text in examples:
            assert re.fullmatch(pattern, text, re.ASCII | re.DOTALL), (pattern, text)
            doc = text.encode()
            assert xgrammar_reads(doc)[1], (pattern, text)
            docs.add(doc)
            for _ in range(40):
                docs.update(json_documents.mutants(rng, doc, 4, MUTATION_BYTES))
        docs.update([b"", b"x", b"\xff"])  # nothing, a letter, bad UTF-8

        def re_takes(doc):
            try:
                text = doc.decode("utf-8")
            except UnicodeDecodeError:
                return False
            return re.fullmatch(pattern, text, re.ASCII | re.DOTALL) is not None

        rows = []
        for d in sorted(docs):
            n, xg = xgrammar_reads(d)
            rows.append({"hex": d.hex(), "prefix": n, "accepted": re_takes(d), "xgrammar_accepted": xg})
        taken = sum(r["accepted"] for r in rows)
        differ = [bytes.fromhex(r["hex"]) for r in rows if r["accepted"] != r["xgrammar_accepted"]]
        print(f"{pattern}: {len(rows)} documents, {taken} taken; xgrammar's verdict differs on {len(differ)}"
              f"{': ' + repr(differ[:4]) if differ else ''}", file=sys.stderr)
        cases.append({"regex": pattern, "documents": rows})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "versions": {"python": sys.version.split()[0], "xgrammar": metadata.version("xgrammar")},
        "note": "prefix: bytes xgrammar's compile_regex matcher takes before refusing one; accepted: "
                "re.fullmatch(ASCII, DOTALL); written by tools/golden/regex_documents.py",
        "cases": cases,
    }, indent=0) + "\n")


if __name__ == "__main__":
    main()
