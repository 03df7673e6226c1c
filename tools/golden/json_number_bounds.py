#!/usr/bin/env python3
"""Reference verdicts for bounded numbers and integers in JSON schema mode
(engine/sampling/number_range.{h,cc}): for each of a set of bounds
(minimum, maximum, exclusiveMinimum, exclusiveMaximum on "number" or
"integer"), every text over a small alphabet up to a length, read as the
value of {"x": TEXT} through xgrammar's JSON-schema grammar
(compile_json_schema(any_whitespace=False)) byte by byte.

For each text it records how many of its bytes xgrammar's matcher takes (it
refuses a byte as soon as no document can go on from it) and whether it
then takes the closing brace and the end: one character per text, "A" for
taken whole, else the digit count of bytes taken. Texts are enumerated by
length, then in itertools.product order over the alphabet; the C++ test
enumerates them the same way. A few longer texts per case (six and seven
fractional digits, exponents) are listed with their verdicts.

Writes tests/golden/json/number_bounds.json.

Usage: .cache/venv/bin/python tools/golden/json_number_bounds.py
  (xgrammar: pip install --no-deps -r tools/python/bench-nodeps-requirements.txt)
"""
import itertools
import json
import pathlib
import sys
from importlib import metadata

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import xgrammar_bytes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "json" / "number_bounds.json"

ALPHABET = "-019."
MAX_LENGTH = 5

BOUNDS = [
    ("number", {"minimum": 0, "maximum": 1}),
    ("number", {"minimum": 0.5, "maximum": 2.25}),
    ("number", {"exclusiveMinimum": 0}),
    ("number", {"minimum": -1.5}),
    ("number", {"maximum": 100}),
    ("number", {"minimum": -1, "maximum": 1}),
    ("number", {"exclusiveMinimum": 0, "exclusiveMaximum": 1}),
    ("number", {"minimum": 0.1, "maximum": 0.3}),
    ("number", {"maximum": -1}),
    ("number", {"exclusiveMaximum": 0}),
    ("number", {"maximum": 0}),
    ("number", {"minimum": -0.5, "maximum": -0.25}),
    ("number", {"minimum": 9, "maximum": 191}),
    ("number", {"minimum": -191, "maximum": -9}),
    ("number", {"minimum": 1e-9}),
    ("number", {"minimum": -1e-9, "maximum": 1e-9}),
    ("number", {"minimum": 0.0000015, "maximum": 0.0000035}),
    ("number", {"exclusiveMinimum": -1, "exclusiveMaximum": 0}),
    ("number", {"minimum": -90, "maximum": 90}),
    ("number", {"minimum": 10.5, "exclusiveMaximum": 100.25}),
    ("integer", {"minimum": 0, "maximum": 100}),
    ("integer", {"minimum": -19, "exclusiveMaximum": 0}),
    ("integer", {"exclusiveMinimum": -10, "maximum": 19}),
    ("integer", {"maximum": -10}),
]

EXTRA = ["0.123456", "0.1234567", "1.000000", "1.0000001", "-0.000001", "0.000001", "0.0000001", "12.5e3",
         "1e2", "0.5E1", "99.999999", "100.000000", "100.0000001", "-89.999999", "-90.000001", "1e-9", "-0",
         "-0.0", "-0.000000", "00", "0.", ".5", "+1", "10.500000", "100.25", "100.249999", "0.0000015",
         "0.000002", "0.000003", "0.000004", "191.000000", "-191.000001"]


def main():
    compiler = xgrammar_bytes.byte_compiler()
    cases = []
    for kind, bounds in BOUNDS:
        schema = {"type": "object", "properties": {"x": {"type": kind, **bounds}}, "required": ["x"]}
        compiled = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
        head = b'{"x": '

        def read(text):
            doc = head + text.encode() + b"}"
            taken, whole = xgrammar_bytes.reads(compiled, doc)
            assert taken >= len(head)
            return min(taken - len(head), len(text)), whole

        codes = []
        for length in range(1, MAX_LENGTH + 1):
            for letters in itertools.product(ALPHABET, repeat=length):
                taken, whole = read("".join(letters))
                codes.append("A" if whole else str(taken))
        extra = []
        for text in EXTRA:
            taken, whole = read(text)
            extra.append({"text": text, "taken": taken, "accepted": whole})
        print(f"{kind} {bounds}: {codes.count('A')} of {len(codes)} taken", file=sys.stderr)
        cases.append({"schema": schema, "codes": "".join(codes), "extra": extra})
    OUT.write_text(json.dumps({
        "versions": {"python": sys.version.split()[0], "xgrammar": metadata.version("xgrammar")},
        "note": "per text over the alphabet (by length, then in product order): 'A' if xgrammar's "
                "compile_json_schema(any_whitespace=False) matcher takes {\"x\": TEXT} whole, else how many of "
                "TEXT's bytes it takes; written by tools/golden/json_number_bounds.py",
        "alphabet": ALPHABET, "max_length": MAX_LENGTH, "cases": cases,
    }, indent=0) + "\n")


if __name__ == "__main__":
    main()
