#!/usr/bin/env python3
"""Reference for tool_choice "auto" with --tool-call-parser=hermes: vLLM's
Hermes2ProToolParser.extract_tool_calls (vllm/entrypoints/openai/
tool_parsers/hermes_tool_parser.py, vLLM 0.6 to 0.10), its algorithm
restated on Python's own re and json modules (vLLM itself is not
installed here):

    if "<tool_call>" not in text: content = text, no calls
    for each match of re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL).findall(text):
        call = json.loads(match[0] if match[0] else match[1])
        name = call["name"] (a str: vLLM's FunctionCall refuses others)
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
    content = text[:text.find("<tool_call>")] (None if empty)
    any exception: content = text, no calls

Qwen2.5's and Hermes-2-Pro's templates ask for exactly this form. The C++
parser (server/http/openai_tools.cc) finds the tags itself and parses each
call with nlohmann::json; server_http_gateway_test compares every case.

Writes tests/golden/tool_calls/hermes.json.
Usage: .cache/venv/bin/python tools/golden/hermes_tool_calls.py
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "tool_calls" / "hermes.json"
REGEX = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>'
NOW = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'
TEXTS = [
    CALL,
    CALL + "\n" + NOW,
    CALL + NOW,
    "Let me check the weather.\n" + CALL,
    "Sure.\n\n" + CALL + "\nDone, more text after the call.",
    CALL + "\nbetween\n" + NOW + "\ntrailing",
    '<tool_call>{"name":"get_weather","arguments":{"city":"Zürich"}}</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"s": "</tool_call> inside a string"}}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"s": "}{ \\" \\\\ ][", "nested": {"deep": [{"k": "v"}]}}}\n</tool_call>',
    # Cut by the token limit: the open call runs to the end of the text.
    '<tool_call>\n{"name": "now", "arguments": {}}\n',
    '<tool_call>\n{"name": "now", "arguments": {',
    CALL + '\n<tool_call>\n{"name": "now", "arguments": {}}',
    # Not calls: content, all of it.
    '<tool_call>\n{"name": "f"}\n</tool_call>',
    '<tool_call>\n{"arguments": {}}\n</tool_call>',
    '<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>',
    '<tool_call>\n["f", {}]\n</tool_call>',
    '<tool_call></tool_call>',
    '<tool_call>',
    '<tool_call>\nnot json\n</tool_call>',
    CALL + '\n<tool_call>\n{"name": "now"}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>{"name": "g", "arguments": {}} x</tool_call>',
    '<tool_call>a<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    "Once upon a time",
    "",
    "<tool_call",
    "A story about <tool_call>s: none here.",
    # Arguments of any JSON type, written back as json.dumps writes them.
    '<tool_call>\n{"name": "f", "arguments": "{\\"a\\": 1}"}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": null}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": [1, 2.5, -3e-07, true, null]}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"u": "\\u00e9\\ud83d\\ude00", "tab": "a\\tb"}}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"big": 12345678901234567890, "neg": -0, "f": 1.0, "e": 1E+2}}\n</tool_call>',
    '<tool_call>\n{"name": "f", "arguments": {"a": 1, "a": 2, "b": 3}}\n</tool_call>',
    '<tool_call>\n{"arguments": {"x": 1}, "name": "f", "extra": true}\n</tool_call>',
    '<tool_call> \t\r\n{"name": "f", "arguments": {}} \n\n</tool_call>',
]


def parse(text):
    if "<tool_call>" not in text:
        return {"content": text, "calls": None}
    try:
        calls = []
        for match in REGEX.findall(text):
            call = json.loads(match[0] if match[0] else match[1])
            name = call["name"]
            if not isinstance(name, str):  # vLLM's FunctionCall(name: str) refuses it
                raise TypeError("name")
            calls.append({"name": name, "arguments": json.dumps(call["arguments"], ensure_ascii=False)})
        content = text[:text.find("<tool_call>")]
        return {"content": content if content else None, "calls": calls}
    except Exception:
        return {"content": text, "calls": None}


def main():
    cases = [{"text": t, **parse(t)} for t in TEXTS]
    doc = {"generator": "tools/golden/hermes_tool_calls.py", "python": sys.version.split()[0], "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print(f"{OUT}: {len(cases)} cases, {sum(c['calls'] is not None for c in cases)} with calls")


if __name__ == "__main__":
    main()
