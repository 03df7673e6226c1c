#!/usr/bin/env python3
"""Reference for a tool call's arguments cut by the token limit on
Anthropic's /v1/messages: the anthropic SDK builds a streamed tool_use
block's input with jiter.from_json(buffer, partial_mode=True) (anthropic
2.17, lib/streaming/_messages.py), so the unstreamed answer gives the same
partial object (server/http/partial_json.h).

For every prefix of each document below (written as JSON schema mode
writes one: json.dumps' ", " and ": "; one also with its non-ASCII
characters unescaped), jiter's value, or null where jiter
refuses the prefix (the empty one). server_http_gateway_test compares
every prefix.

Writes tests/golden/tool_calls/partial_json_jiter.json.
Usage: .cache/venv/bin/python tools/golden/partial_json_jiter.py
"""
import json
import pathlib
import sys

import jiter

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "tool_calls" / "partial_json_jiter.json"

DOCUMENTS = [
    {"city": "Paris", "unit": "celsius", "days": 3},
    {"q": "caf\u00e9 \u65e5\u672c \U0001F600", "esc": "a\"b\\c\nd\u0001", "n": -12.5e-3, "m": 0, "big": 12345678901},
    {"items": [1, 2.5, -3, True, False, None, "x", [], {}], "nested": {"deep": [{"k": "v", "l": [1, [2, [3]]]}]}},
    {"flag": True, "none": None, "empty": "", "list": ["a", "bc", "def"], "obj": {"a": {"b": {}}}},
    {},
]


def main() -> None:
    cases = []
    texts = [json.dumps(doc) for doc in DOCUMENTS] + [json.dumps(DOCUMENTS[1], ensure_ascii=False)]
    for text in texts:
        for end in range(len(text) + 1):
            prefix = text[:end]
            try:
                value = jiter.from_json(prefix.encode(), partial_mode=True)
            except ValueError:
                value = None
            cases.append({"prefix": prefix, "value": value})
    OUT.write_text(json.dumps({
        "reference": "jiter.from_json(prefix, partial_mode=True), as the anthropic SDK accumulates "
                     "input_json_delta events; null where jiter refuses the prefix",
        "versions": {"python": sys.version.split()[0], "jiter": jiter.__version__},
        "cases": cases,
    }, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(cases)} prefixes -> {OUT}")


if __name__ == "__main__":
    main()
