#!/usr/bin/env python3
"""Reference verdicts for the engine's JSON acceptor (JSON mode).

Documents and CPython's `json` module's verdict on each, as the reference
for engine/sampling/json_acceptor.{h,cc}:

  valid:   seeded random objects (nested objects and arrays, strings with
           escapes, control characters, non-ASCII text and astral
           characters, integers, fractions, exponents, true/false/null),
           written by json.dumps compact, with ", "/": " separators, and
           indented by 1 or 2 spaces or a tab, depth <= 6 so an indent
           stays within the acceptor's 20 (llama.cpp's limit); plus
           hand-written edge cases. Every one is checked here to load with
           json.loads into a dict.
  invalid: mutants of the valid documents (a byte deleted, replaced,
           inserted, or the document cut short) and hand-written cases
           (leading zeros, bare fractions, NaN, trailing commas, single
           quotes, raw control characters, bad escapes, overlong and
           surrogate UTF-8, a BOM, top-level values that are not objects).
           Every one is checked here to fail json.loads (after a strict
           UTF-8 decode), or to load into something other than a dict.

json.loads accepts more whitespace than the acceptor (which limits each
gap as llama.cpp's grammar does), so mutants that load are dropped rather
than called valid, and NaN/Infinity are refused as RFC 8259 does.

Writes tests/golden/json/documents.json: {"versions", "valid": [hex...],
"invalid": [hex...]}.

Usage: python3 tools/golden/json_documents.py
"""
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "json" / "documents.json"

STRING_PIECES = ["a", "key", "Once upon a time", " ", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t",
                 "\u0001", "\u001f", "\u007f", "é", "ñandú", "日本語", "\u2028", "😀", "𝄞", "\ud7ff",
                 "\ue000", "\uffff", "0", "-1", "true", "{", "}", "[", "]", ",", ":"]


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def loads_dict(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")  # strict: no overlongs, no surrogates
        value = json.loads(text, parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict)


def random_string(rng):
    return "".join(rng.choice(STRING_PIECES) for _ in range(rng.randint(0, 4)))


def random_number(rng):
    kind = rng.randrange(5)
    if kind == 0:
        return rng.randint(-10, 10)
    if kind == 1:
        return rng.randint(-10**20, 10**20)
    if kind == 2:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if kind == 3:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
    return 0


def random_value(rng, depth):
    kinds = ["string", "number", "literal"] + (["object", "array"] * 2 if depth < 6 else [])
    kind = rng.choice(kinds)
    if kind == "string":
        return random_string(rng)
    if kind == "number":
        return random_number(rng)
    if kind == "literal":
        return rng.choice([True, False, None])
    if kind == "array":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return random_object(rng, depth + 1)


def random_object(rng, depth):
    return {random_string(rng): random_value(rng, depth) for _ in range(rng.randint(0, 3))}


def dump(rng, obj) -> bytes:
    style = rng.randrange(5)
    ensure_ascii = rng.random() < 0.3
    if style == 0:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=ensure_ascii)
    elif style == 1:
        text = json.dumps(obj, ensure_ascii=ensure_ascii)  # ", " and ": "
    elif style == 2:
        text = json.dumps(obj, indent=1, ensure_ascii=ensure_ascii)
    elif style == 3:
        text = json.dumps(obj, indent=2, ensure_ascii=ensure_ascii)
    else:
        text = json.dumps(obj, indent="\t", ensure_ascii=ensure_ascii)
    return text.encode("utf-8")


HAND_VALID = [
    b"{}", b"{ }", b"{\n}", b"{\n\t\t}", b" {}", b"\n  {}", b'{"a":1}', b'{"a": 1}', b'{"a" : 1}',
    b'{"a":-0}', b'{"a":0.5e-7}', b'{"a":1E+2}', b'{"a":-12.50e00}', b'{"a":[]}', b'{"a":[ ]}',
    b'{"a":[1,2 ,3]}', b'{"a":{"b":{"c":{}}}}', b'{"":""}', b'{"\\u00e9\\uD83D\\ude00":"\\/\\b\\f\\n\\r\\t"}',
    b'{"a":"\\ud800"}', b'{"a":true,"b":false,"c":null}', b'{"a":"\xf4\x8f\xbf\xbf"}',
    b'{"a":"\xf0\x90\x80\x80\xe0\xa0\x80\xed\x9f\xbf\xc2\x80"}', b'{"a":1,"a":2}',
    b'{"k":\n' + b" " * 20 + b"1}",
]

HAND_INVALID = [
    b"", b" ", b"[]", b"1", b'"a"', b"true", b"null", b"{", b'{"a"', b'{"a":', b'{"a":1', b'{"a":1,}',
    b'{"a":[1,]}', b'{,}', b"{'a':1}", b'{a:1}', b'{"a":01}', b'{"a":-01}', b'{"a":1.}', b'{"a":.5}',
    b'{"a":+1}', b'{"a":-}', b'{"a":1e}', b'{"a":1e+}', b'{"a":0x10}', b'{"a":NaN}', b'{"a":Infinity}',
    b'{"a":-Infinity}', b'{"a":tru}', b'{"a":nul}', b'{"a":True}', b'{"a":"\x01"}', b'{"a":"\n"}',
    b'{"a":"\\x41"}', b'{"a":"\\u12G4"}', b'{"a":"\\u123"}', b'{"a":"\\U1234"}', b'{"a":"\xc0\x80"}',
    b'{"a":"\xc1\xbf"}', b'{"a":"\xe0\x80\x80"}', b'{"a":"\xed\xa0\x80"}', b'{"a":"\xf0\x80\x80\x80"}',
    b'{"a":"\xf4\x90\x80\x80"}', b'{"a":"\xf5\x80\x80\x80"}', b'{"a":"\xff"}', b'{"a":"\x80"}',
    b'{"a":"\xe2\x82"}', b"\xef\xbb\xbf{}", b'{"a":1}}', b'{"a":1]', b'{"a":[1}', b'{"a":1}{}',
    b'{"a" 1}', b'{"a"::1}', b'{"a":1 "b":2}', b'{"a":[1 2]}', b"{}\x00", b'{"a":"b"', b'{"a":"b\\"}',
]


MUTATION_BYTES = b'{}[]":,.-+eE0123456789tfnul \n\t\\/abc\x00\x1f\x7f\x80\xc3\xff'


def mutants(rng, doc: bytes, n: int, alphabet: bytes = MUTATION_BYTES):
    """n copies of doc, each with a byte deleted, replaced or inserted (from
    `alphabet`), or cut short."""
    out = []
    for _ in range(n):
        b = bytearray(doc)
        op = rng.randrange(4)
        if op == 0 and len(b) > 1:
            del b[rng.randrange(len(b))]
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.choice(alphabet)
        elif op == 2:
            b.insert(rng.randrange(len(b) + 1), rng.choice(alphabet))
        elif len(b) > 1:
            b = b[: rng.randrange(1, len(b))]
        out.append(bytes(b))
    return out


def main():
    rng = random.Random(20261205)
    valid = list(HAND_VALID)
    while len(valid) < 400:
        valid.append(dump(rng, random_object(rng, 0)))
    for doc in valid:
        assert loads_dict(doc), doc
    invalid = []
    for doc in HAND_INVALID:
        assert not loads_dict(doc), doc
        invalid.append(doc)
    seen = set(valid) | set(invalid)
    for doc in valid:
        for m in mutants(rng, doc, 6):
            if m not in seen and not loads_dict(m):
                seen.add(m)
                invalid.append(m)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "versions": {"python": sys.version.split()[0], "json": json.__version__},
        "note": "verdicts of CPython's json.loads (strict UTF-8, NaN/Infinity refused, top level a dict); "
                "written by tools/golden/json_documents.py",
        "valid": [d.hex() for d in valid],
        "invalid": [d.hex() for d in invalid],
    }, indent=0) + "\n")
    print(f"{len(valid)} valid, {len(invalid)} invalid -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
