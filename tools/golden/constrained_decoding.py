#!/usr/bin/env python3
"""Reference greedy outputs of constrained decoding (JSON mode, a choice
among strings) on the real stories260K, from implementations independent of
attnserve's: the model is transformers' LlamaForCausalLM loaded from the
GGUF (decoder_penalties.load_stories260k, which first checks it reproduces
run.c's greedy tokens), the constraint is xgrammar's grammar matcher (the
engine vLLM uses for structured output) filling a token bitmask at each
step, and the vocabulary's bytes come from the sentencepiece library's
pieces ("▁" -> space, "<0xNN>" -> that byte).

The grammars say in xgrammar's EBNF what attnserve implements:
  JSON schema: xgrammar's own compile_json_schema(any_whitespace=False),
  not a grammar written here.
  JSON mode: RFC 8259 with an object at the top, and one whitespace gap
  allowed between tokens, either "" or " " or a newline followed by up to 20
  spaces or tabs (llama.cpp's json.gbnf's `ws`), also before the object;
  nothing after it but the end of sequence.
  choice: root ::= one of the strings, byte for byte.

Each step: logits + logit bias, then the bitmask (disallowed -> -inf), then
argmax, then the matcher accepts the token; the run stops at EOS (the
matcher's stop token) or after max_new_tokens. Every case records the
smallest gap between the best and second-best allowed score over its steps,
so a float32 difference between the two implementations cannot flip a
choice; the script asserts it is above 1e-3.

Writes tests/golden/decoder_sampling/constrained.json.

Usage: .cache/venv/bin/python tools/golden/constrained_decoding.py
  (xgrammar: ./dev bench installs it, or pip install --no-deps -r
  tools/python/bench-nodeps-requirements.txt)
"""
import json
import os
import pathlib
import sys
from importlib import metadata

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sentencepiece
import torch
import transformers
import xgrammar as xgr

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import decoder_penalties  # noqa: E402  (the stories260K conversion, checked against run.c)

ROOT = pathlib.Path(__file__).resolve().parents[2]
STORIES = ROOT.parent / "shared" / "models" / "stories260K"
OUT = ROOT / "tests" / "golden" / "decoder_sampling" / "constrained.json"
EOS = 2

JSON_GRAMMAR = r'''
root ::= ws object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
ws ::= "" | " " | "\n" [ \t]{0,20}
'''


def choice_grammar(choices):
    alts = " | ".join(json.dumps(c, ensure_ascii=False) for c in choices)
    return f"root ::= {alts}\n"


def vocabulary():
    sp = sentencepiece.SentencePieceProcessor(model_file=str(STORIES / "tok512.model"))
    vocab = []
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if sp.is_control(i) or sp.is_unknown(i):
            vocab.append(b"")
        elif sp.is_byte(i):
            vocab.append(bytes([int(piece[3:5], 16)]))
        else:
            vocab.append(piece.replace("\u2581", " ").encode())
    return vocab


def run(model, info, grammar, prompt, new_tokens, bias):
    compiler = xgr.GrammarCompiler(info, max_threads=1)
    if isinstance(grammar, dict) and "regex" in grammar:  # a whole output held to a regex
        compiled = compiler.compile_regex(grammar["regex"])
    elif isinstance(grammar, dict):  # a JSON schema, written as json.dumps writes it
        compiled = compiler.compile_json_schema(json.dumps(grammar), any_whitespace=False)
    else:
        compiled = compiler.compile_grammar(grammar)
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    ids = torch.tensor([prompt])
    out, margin = [], float("inf")
    with torch.no_grad():
        res = model(input_ids=ids, use_cache=True)
        for _ in range(new_tokens):
            scores = res.logits[0, -1].float().clone()
            for tok, b in bias.items():
                scores[int(tok)] += b
            matcher.fill_next_token_bitmask(bitmask)
            xgr.apply_token_bitmask_inplace(scores.unsqueeze(0), bitmask)
            top2 = torch.topk(scores, 2).values
            if torch.isfinite(top2[1]):
                margin = min(margin, float(top2[0] - top2[1]))
            tok = int(torch.argmax(scores))
            out.append(tok)
            assert matcher.accept_token(tok), tok
            if tok == EOS:
                break
            res = model(input_ids=torch.tensor([[tok]]), past_key_values=res.past_key_values, use_cache=True)
    return out, margin


# Prompts as stories260K's tokenizer writes them (BOS first); 128 is the
# byte token "}", 37 '"', 47 ',': biases that make the story model close
# its objects within the token limit, or pick other paths.
ONCE = [1, 403, 407, 261, 378]
CAT = [1, 291, 280, 294]
CASES = [
    ("json_closes_after_a_member", "json", ONCE, 150, {"128": 9.5}),
    ("json_closes_with_a_newline_gap", "json", CAT, 150, {"128": 9.0}),
    ("json_closes_at_once", "json", ONCE[:3], 150, {"128": 9.0}),
    ("json_cut_by_the_limit", "json", CAT, 150, {"128": 8.5}),
    ("json_no_bias", "json", ONCE, 60, {}),
    ("choice_names", ["Lily", " Lily", " Tom", " a dragon", " Sue and her dog"], ONCE, 16, {}),
    ("choice_longer_of_two", [" yes", " yes please", " no", "\u00e9t\u00e9 \"quoted\""], CAT, 16, {"2": 12.0}),
    ("choice_prefix_ends", [" yes", " yes please", " no"], CAT, 16, {"2": 25.0}),
    ("schema_person", {"schema": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "pet": {"enum": ["cat", "dog", None]}},
        "required": ["name", "age", "pet"]}}, ONCE, 120, {"37": 6.0}),
    ("schema_optional_and_arrays", {"schema": {"type": "object", "properties": {
        "title": {"type": "string"}, "score": {"type": "number"}, "ok": {"type": "boolean"},
        "words": {"type": "array", "items": {"type": "string"}}, "note": {"type": ["string", "null"]}},
        "required": ["title", "words"]}}, CAT, 150, {"37": 5.0, "47": 2.0}),
    ("schema_one_string", {"schema": {"type": "object", "properties": {"story": {"type": "string"}},
                                            "required": ["story"]}}, ONCE, 40, {}),
    # A pydantic model (nested model by $ref, Optional fields as anyOf with
    # null, an enum), as the openai client's to_strict_json_schema sends it.
    ("schema_pydantic_refs", {"schema": {
        "$defs": {"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
                  "Pet": {"properties": {"name": {"title": "Name", "type": "string"},
                                         "color": {"$ref": "#/$defs/Color"}},
                          "required": ["name", "color"], "title": "Pet", "type": "object",
                          "additionalProperties": False}},
        "properties": {"name": {"title": "Name", "type": "string"},
                       "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Age"},
                       "best": {"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]},
                       "pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array"}},
        "required": ["name", "age", "best", "pets"], "title": "Person", "type": "object",
        "additionalProperties": False}}, ONCE, 150, {"37": 6.0, "126": 11.0}),
    # Bounds: the story model's long strings cut at maxLength, an integer
    # range, an array held to between 2 and 3 items.
    ("schema_bounds", {"schema": {"type": "object", "properties": {
        "title": {"type": "string", "minLength": 3, "maxLength": 12},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2030},
        "words": {"type": "array", "items": {"type": "string", "maxLength": 6}, "minItems": 2, "maxItems": 3}},
        "required": ["title", "year", "words"]}}, ONCE, 80, {}),
    # vLLM's schema for tool_choice "required" (server/http/openai_tools.cc):
    # an array at the top, calls told apart by "name". Commas (piece 432,
    # byte 47) disfavoured so the list closes.
    ("schema_tool_calls", {"schema": {"type": "array", "minItems": 1, "items": {"anyOf": [
        {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_weather"]}, "parameters": {
            "type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                             "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"]}}, "required": ["name", "parameters"]},
        {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_time"]}, "parameters": {
            "type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}, "required": ["zone"]}},
         "required": ["name", "parameters"]}]}}}, ONCE, 120, {"37": 6.0, "432": -100.0, "47": -100.0}),
    # Patterns (regex_dfa.h): the story model's text held to them.
    ("schema_patterns", {"schema": {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "[A-Z]{2}-\\d{3}"},
        "name": {"type": "string", "pattern": "[A-Za-z ]{1,12}"},
        "answer": {"type": "string", "pattern": "yes|no|maybe( not)?"}},
        "required": ["code", "name", "answer"]}}, ONCE, 80, {}),
    # Formats, read as the patterns xgrammar uses for them.
    ("schema_formats", {"schema": {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"},
        "at": {"type": "string", "format": "date-time"}}, "required": ["day", "id", "at"]}}, ONCE, 100, {}),
    # More formats: an IPv6 address and an email (a favoured '@' gets the
    # story model past the local part, whose domain then runs to the
    # limit); a hostname, a URI (a favoured ':' ends its scheme) and a
    # duration (whose digits then run to the limit).
    ("schema_ip_email", {"schema": {"type": "object", "properties": {
        "ip": {"type": "string", "format": "ipv6"}, "mail": {"type": "string", "format": "email"}},
        "required": ["ip", "mail"]}}, ONCE, 60, {67: 30, 37: 12, 467: 10}),
    ("schema_host_uri_duration", {"schema": {"type": "object", "properties": {
        "host": {"type": "string", "format": "hostname"}, "site": {"type": "string", "format": "uri"},
        "wait": {"type": "string", "format": "duration"}}, "required": ["host", "site", "wait"]}},
     CAT, 80, {37: 12, 467: 10}),
    # Bounded numbers: at most six fractional digits, no exponent, within
    # the bounds (a favoured '.' makes the story model write fractions).
    ("schema_number_bounds", {"schema": {"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "temp": {"type": "number", "exclusiveMinimum": -40, "maximum": 60.5},
        "debt": {"type": "number", "maximum": -0.25}}, "required": ["score", "temp", "debt"]}},
     ONCE, 60, {49: 8}),
    # A whole output held to a regex (vLLM's guided_regex): it may end once
    # it matches, or go on where the regex allows.
    ("regex_sentence", {"regex": "(Once|One day), [a-z]+( [a-z]+){2,6}\\.( [A-Z][a-z]+( [a-z]+){1,5}\\.)?"},
     ONCE[:1], 40, {}),
    ("regex_date_or_no", {"regex": "(19|20)\\d{2}-(0[1-9]|1[0-2])-\\d{2}|no"}, CAT, 16, {}),
]


def main():
    model = decoder_penalties.load_stories260k()
    vocab = vocabulary()
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[EOS])
    cases = []
    for name, kind, prompt, new_tokens, bias in CASES:
        if kind == "json":
            grammar = JSON_GRAMMAR
        elif isinstance(kind, dict) and "regex" in kind:
            grammar = kind
        elif isinstance(kind, dict):
            grammar = kind["schema"]
        else:
            grammar = choice_grammar(kind)
        ids, margin = run(model, info, grammar, prompt, new_tokens, bias)
        assert margin > 1e-3, (name, margin)
        case = {"name": name, "prompt_ids": prompt, "max_new_tokens": new_tokens, "logit_bias": bias,
                "generated_ids": ids, "min_margin": margin,
                "text": b"".join(vocab[i] for i in ids).decode("utf-8", "replace")}
        if kind == "json":
            case["format"] = "json_object"
        elif isinstance(kind, dict) and "regex" in kind:
            case["format"] = "regex"
            case["regex"] = kind["regex"]
        elif isinstance(kind, dict):
            case["format"] = "json_schema"
            case["json_schema"] = json.dumps(kind["schema"])
        else:
            case["format"] = "choice"
            case["choices"] = kind
        print(name, repr(case["text"]), file=sys.stderr)
        cases.append(case)
    OUT.write_text(json.dumps({
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "xgrammar": metadata.version("xgrammar"),
                     "sentencepiece": sentencepiece.__version__},
        "json_grammar_ebnf": JSON_GRAMMAR,
        "cases": cases,
    }, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
