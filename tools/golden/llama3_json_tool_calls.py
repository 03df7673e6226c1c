#!/usr/bin/env python3
"""Reference for tool_choice "auto" with --tool-call-parser=llama3_json:
vLLM's Llama3JsonToolParser.extract_tool_calls (vllm/entrypoints/openai/
tool_parsers/llama_tool_parser.py, as of vLLM 0.6-0.8), its algorithm
restated on Python's own json module (vLLM itself is not installed here):

    if not (text.startswith("<|python_tag|>") or text.startswith("{")):
        content
    start = len("<|python_tag|>") if tagged else 0
    while start < len(text):
        obj, end = JSONDecoder().raw_decode(text[start:])
        start += end + len("; ")
        calls.append(obj)
    each call: name = obj["name"], arguments = json.dumps(obj["arguments"]
    if "arguments" in obj else obj["parameters"], ensure_ascii=False)
    any exception: content

The C++ parser (server/http/openai_tools.cc) finds each object's end by
its braces and parses it with nlohmann::json; this file's answers come from
Python's decoder. server_http_gateway_test compares every case.

Writes tests/golden/tool_calls/llama3_json.json.
Usage: .cache/venv/bin/python tools/golden/llama3_json_tool_calls.py
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "tool_calls" / "llama3_json.json"
TAG = "<|python_tag|>"

TEXTS = [
    '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
    '{"name":"get_weather","parameters":{"city":"Zürich"}}',
    TAG + '{"name": "now", "arguments": {}}',
    '{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": [1, 2.5, -3e-07, true, null]}}',
    '{"name": "a", "parameters": {}};{"name": "b", "parameters": {}}',
    '{"name": "f", "parameters": {"s": "}{ \\" \\\\ ]["}}',
    '{"name": "f", "parameters": {"nested": {"deep": [{"k": "v"}]}}}\n',
    '{"name": "f", "parameters": {}}  ',
    '{"name": "f", "parameters": {}}   ',
    '{"name": "f", "parameters": {}} and more',
    '{"name": "f", "arguments": "{\\"a\\": 1}"}',
    '{"name": "f", "arguments": {"a": 1}, "parameters": {"b": 2}}',
    '{"name": "f"}',
    '{"name": 3, "parameters": {}}',
    '{"parameters": {}}',
    '{"name": "f", "parameters": {',
    '[{"name": "f", "parameters": {}}]',
    ' {"name": "f", "parameters": {}}',
    'Hello! {"name": "f", "parameters": {}}',
    'Once upon a time',
    '',
    '{"name": "f", "parameters": {"u": "\\u00e9\\ud83d\\ude00", "tab": "a\\tb"}}',
    '{"name": "f", "parameters": {"big": 12345678901234567890, "neg": -0, "f": 1.0, "e": 1E+2}}',
    '{"name": "f", "parameters": {}}; ',
    '{"name": "f", "parameters": {}}; x',
]


def parse(text):
    if not (text.startswith(TAG) or text.startswith("{")):
        return None
    try:
        dec = json.JSONDecoder()
        calls = []
        start = len(TAG) if text.startswith(TAG) else 0
        while start < len(text):
            obj, end = dec.raw_decode(text[start:])
            start += end + len("; ")
            calls.append(obj)
        out = []
        for raw in calls:
            name = raw["name"]
            if not isinstance(name, str):  # vLLM's FunctionCall(name: str) refuses it
                raise TypeError("name")
            args = raw["arguments"] if "arguments" in raw else raw["parameters"]
            out.append({"name": name, "arguments": json.dumps(args, ensure_ascii=False)})
        return out
    except Exception:
        return None


def main():
    cases = [{"text": t, "calls": parse(t)} for t in TEXTS]
    doc = {"generator": "tools/golden/llama3_json_tool_calls.py", "python": sys.version.split()[0], "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print(f"{OUT}: {len(cases)} cases, {sum(c['calls'] is not None for c in cases)} with calls")


if __name__ == "__main__":
    main()
