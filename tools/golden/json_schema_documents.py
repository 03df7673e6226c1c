#!/usr/bin/env python3
"""Reference verdicts for the engine's JSON schema mode
(engine/sampling/json_schema.{h,cc}): for each of a set of schemas, documents
and whether xgrammar's JSON-schema grammar takes them whole
(GrammarCompiler.compile_json_schema(any_whitespace=False): json.dumps'
", " and ": " separators, the schema's property order), byte by byte
through its GrammarMatcher, then its end-of-sequence token.

Documents: for each schema, seeded random instances written by json.dumps
(every optional property kept or dropped at random; each is checked to
validate with the jsonschema library), their mutants (a byte deleted,
replaced, inserted, or the document cut short), the same instances with the
properties reordered or pretty-printed, and a few hand-written ones. The
verdict recorded is xgrammar's, whichever it is, with how many of the
document's first bytes its matcher takes (it refuses a byte as soon as no
document can go on from it); the C++ test must agree with both, so the
engine's masks never lead into a dead end xgrammar's would not.

Writes tests/golden/json/schema_documents.json.

Usage: .cache/venv/bin/python tools/golden/json_schema_documents.py
  (xgrammar: pip install --no-deps -r tools/python/bench-nodeps-requirements.txt)
"""
import json
import pathlib
import random
import re
import sys
from importlib import metadata

import jsonschema

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import json_documents  # noqa: E402  (the mutations, shared with JSON mode's documents)
import xgrammar_bytes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "json" / "schema_documents.json"

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "title": "Event", "properties": {
        "id": {"type": "integer"}, "score": {"type": "number"}, "ok": {"type": "boolean"},
        "note": {"type": ["string", "null"]}, "tags": {"type": "array", "items": {"type": "string"}},
        "level": {"enum": ["low", "mid", "high", 1, 10, None, True]}, "kind": {"const": "event"}},
     "required": ["id", "kind"]},
    {"type": "object", "properties": {
        "people": {"type": "array", "items": {"type": "object", "properties": {
            "first": {"type": "string"}, "middle": {"type": "string"}, "last": {"type": "string"},
            "age": {"type": ["integer", "null"]}}, "required": ["first", "last"]}},
        "meta": {"type": "object", "properties": {"count": {"type": "integer"},
                                                  "matrix": {"type": "array", "items": {"type": "array",
                                                                                        "items": {"type": "number"}}}}},
        "empty": {"type": "object"}},
     "required": ["people"]},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}},
    {"type": "object", "properties": {"v": {"type": ["number", "boolean", "null", "string", "array", "object"],
                                            "items": {"type": "integer"},
                                            "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
     "required": ["v"]},
    # As pydantic writes nested models, Optional fields and enums, after the
    # openai client's to_strict_json_schema: $defs and $ref, anyOf with null.
    {"$defs": {"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
               "Pet": {"properties": {"name": {"title": "Name", "type": "string"},
                                      "color": {"$ref": "#/$defs/Color"}},
                       "required": ["name", "color"], "title": "Pet", "type": "object",
                       "additionalProperties": False}},
     "properties": {"name": {"title": "Name", "type": "string"},
                    "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Age"},
                    "pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array"},
                    "best": {"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]}},
     "required": ["name", "age", "pets", "best"], "title": "Person", "type": "object",
     "additionalProperties": False},
    # oneOf of disjoint alternatives, allOf of one schema, nested anyOf,
    # literals merged across alternatives and left to a type that reads
    # them, a pointer with ~1.
    {"type": "object", "definitions": {"a/b": {"type": "array", "items": {"type": "integer"}}},
     "properties": {
         "x": {"anyOf": [{"type": "string"}, {"const": "fixed"}, {"type": "number"}, {"enum": [1, True]}]},
         "w": {"oneOf": [{"type": "integer"}, {"type": "string"}, {"enum": [True, None]}]},
         "y": {"allOf": [{"$ref": "#/definitions/a~1b"}], "description": "ids"},
         "z": {"anyOf": [{"anyOf": [{"const": None}, {"const": False}]}, {"type": "object", "properties": {
             "k": {"type": ["integer", "number"]}}}, {"$ref": "#/definitions/a~1b"}]}},
     "required": ["x"]},
    # Bounds: string lengths, item counts (nested), integer ranges.
    {"type": "object", "properties": {
        "code": {"type": "string", "minLength": 2, "maxLength": 5},
        "nick": {"type": ["string", "null"], "maxLength": 3},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": 1, "maxItems": 3},
        "grid": {"type": "array", "maxItems": 2, "items": {
            "type": "array", "minItems": 2, "maxItems": 2,
            "items": {"type": "integer", "minimum": -12, "exclusiveMaximum": 30}}},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "neg": {"type": "integer", "maximum": -7},
        "big": {"type": "integer", "exclusiveMinimum": 999},
        "some": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
     "required": ["code", "tags", "age"]},
    # Tagged unions: objects told apart by a first property that is a
    # string const or enum (vLLM's schema for tool_choice "required", and
    # pydantic's discriminated unions), beside other alternatives.
    {"type": "object", "properties": {
        "calls": {"type": "array", "minItems": 1, "items": {"anyOf": [
            {"type": "object", "properties": {
                "name": {"const": "get_weather"},
                "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                "unit": {"enum": ["c", "f"]}},
                               "required": ["city"]}},
             "required": ["name", "parameters"]},
            {"type": "object", "properties": {
                "name": {"const": "get_time"},
                "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}},
             "required": ["name", "parameters"]},
            {"type": "object", "properties": {
                "name": {"enum": ["get", "get_weather_2"]},
                "parameters": {"type": "object", "properties": {}}},
             "required": ["name", "parameters"]}]}},
        "pet": {"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "dog"}, "barks": {"type": "boolean"}},
             "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
             "required": ["kind"]},
            {"type": "null"}]}},
     "required": ["calls"]},
    # Patterns: the string's text matches the whole pattern, written without
    # escapes (xgrammar's reading).
    {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3,5}$"},
        "word": {"type": "string", "pattern": "(ab|cd)*e?"},
        "any": {"type": "string", "pattern": "a.c"},
        "uni": {"type": "string", "pattern": "[é日-本]+x|😀"},
        "opt": {"type": ["string", "null"], "pattern": "[^a-c]{1,2}"},
        "mix": {"type": "string", "pattern": "\\w+\\s\\W(?:yes|no)?"}},
     "required": ["code", "word"]},
    # Formats read as patterns.
    {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "time"},
        "when": {"type": ["string", "null"], "format": "date-time"},
        "id": {"type": "string", "format": "uuid"},
        "ip": {"type": "string", "format": "ipv4"}},
     "required": ["day", "when"]},
    # More formats: addresses, names and durations.
    {"type": "object", "properties": {
        "mail": {"type": "string", "format": "email"},
        "host": {"type": "string", "format": "hostname"},
        "ip6": {"type": "string", "format": "ipv6"},
        "site": {"type": "string", "format": "uri"},
        "link": {"type": ["string", "null"], "format": "uri-reference"},
        "span": {"type": "string", "format": "duration"}},
     "required": ["mail", "site"]},
    # Bounded numbers (at most six fractional digits, no exponent, as
    # xgrammar writes them), and an integer alternative a bounded number
    # takes whole.
    {"type": "object", "properties": {
        "p": {"type": "number", "minimum": 0, "maximum": 1},
        "t": {"type": "number", "exclusiveMinimum": -40.5, "exclusiveMaximum": 60},
        "lat": {"type": ["number", "null"], "minimum": -90, "maximum": 90},
        "gain": {"type": "number", "exclusiveMinimum": 0},
        "debt": {"type": "number", "maximum": -0.25},
        "n": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"type": "number", "minimum": 0,
                                                                          "maximum": 99.5}]}},
     "required": ["p", "t"]},
    # Recursive models, as pydantic writes them: a list of comments with
    # replies, a linked list, an optional child. The engine unrolls them to
    # 8 levels (its documents here stay within 4), xgrammar follows them.
    {"$defs": {"Comment": {"type": "object", "properties": {
        "text": {"type": "string"}, "replies": {"type": "array", "items": {"$ref": "#/$defs/Comment"}},
        "next": {"anyOf": [{"$ref": "#/$defs/Comment"}, {"type": "null"}]}},
        "required": ["text", "replies"]}},
     "type": "object", "properties": {"thread": {"$ref": "#/$defs/Comment"}, "pinned": {"$ref": "#/$defs/Comment"}},
     "required": ["thread"]},
    # Any value and objects of any keys, as pydantic writes Any, dict and
    # dict[str, X]: {}, {"type": "object"}, additionalProperties.
    {"type": "object", "properties": {
        "data": {}, "meta": {"type": "object"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 4}},
        "extra": {"type": "object", "additionalProperties": True},
        "maybe": {"anyOf": [{}, {"type": "null"}]}},
     "required": ["data", "meta", "counts"]},
    # Tuples (prefixItems, as pydantic writes tuple[X, Y]), a prefix with
    # rest items and bounds, a prefix any leading part of which may be
    # written, an array without items, the empty tuple.
    {"type": "object", "properties": {
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
                  "minItems": 2, "maxItems": 2},
        "row": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}],
                "minItems": 3, "maxItems": 3},
        "head": {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"},
                 "minItems": 2, "maxItems": 4},
        "some": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": ["string", "null"]}]},
        "open": {"type": "array", "prefixItems": [{"enum": ["a", "b"]}], "items": {"type": "integer"}},
        "anything": {"type": "array"},
        "none": {"type": "array", "minItems": 0, "maxItems": 0}},
     "required": ["point", "row"]},
    # Declared properties and keys of its own choosing after them
    # (additionalProperties beside properties: pydantic's extra="allow"),
    # never one of the declared names.
    {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "nick": {"type": "string"},
        "attrs": {"type": "object", "properties": {"a": {"type": "boolean"}, "ab": {"type": "null"}},
                  "additionalProperties": {"type": "integer"}},
        "tail": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                 "additionalProperties": True}},
     "required": ["id"], "additionalProperties": {"type": "string", "maxLength": 3}},
]

# Strings of each format (the mutants give the rest).
FORMAT_EXAMPLES = {
    "date": ["2024-01-31", "1999-12-01", "0000-10-29", "2024-02-30"],
    "time": ["10:00:00Z", "23:59:60+14:00", "00:00:00.125-08:30", "12:34:56.7Z"],
    "date-time": ["2024-01-31T10:00:00Z", "1970-01-01T00:00:00.000001+05:30", "2030-12-31T23:59:59-00:00"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000",
             "ABCDEF01-2345-6789-abcd-ef0123456789"],
    "ipv4": ["1.2.3.4", "255.255.255.255", "10.0.0.1", "01.2.30.249"],
    "email": ["lily@example.com", "a.b-c+d@x.io", "first.last@sub.domain.org", "x@y", "!#$%&'*+/=?^_`{|}~@a-b.cd",
              '"john doe"@example.com', '"a\\"b"@x.org', '"q\\\\"@h', '""@a'],
    "hostname": ["example.com", "a", "sub-1.example.org", "xn--bcher-kva.de", "0.0"],
    "ipv6": ["::", "::1", "2001:db8::8a2e:370:7334", "fe80:0:0:0:204:61ff:fe9d:f156", "1:2:3:4:5:6:7:8",
             "::ffff:192.168.0.1", "64:ff9b::10.0.0.1", "1::", "ABCD:ef01::", "::ffff:0:255.0.0.9"],
    "uri": ["https://example.com", "http://user:pw@host:8080/a/b?q=1&r=%20#frag", "mailto:lily@example.com",
            "urn:isbn:0451450523", "file:///etc/hosts", "a:", "x+y.z-w:/p", "https://h/%7E?/?#/?"],
    "uri-reference": ["", "/a/b", "../x?y", "#top", "//host/p", "name@x/y:z", "?q", "a%20b"],
    "duration": ["P1D", "PT1H", "P1Y2M3DT4H5M6S", "P4W", "PT0S", "P12M", "PT36H", "P1DT2M"],
}

# Strings each pattern matches whole (re.fullmatch checks them), for the
# instances; the mutants give the rest.
PATTERN_EXAMPLES = {
    "^[A-Z]{2}-\\d{3,5}$": ["AB-123", "ZZ-99999", "QX-0000"],
    "(ab|cd)*e?": ["", "ab", "cdab", "abe", "e"],
    "a.c": ["abc", "a c", "aéc", "a😀c", "a-c"],
    "[é日-本]+x|😀": ["éx", "日本x", "😀", "éé日x"],
    "[^a-c]{1,2}": ["d", "zz", "é", "-9"],
    "\\w+\\s\\W(?:yes|no)?": ["a_1 -", "x ~", "Z9 !yes", "w %no"],
}

# Documents at and past the bounds of schema 7 (mutants find more).
BOUNDS_DOCS = [
    '{"code": "a", "tags": ["x"], "age": 1}', '{"code": "abcdef", "tags": ["x"], "age": 1}',
    '{"code": "ab", "tags": [], "age": 1}', '{"code": "ab", "tags": ["a", "b", "c", "d"], "age": 1}',
    '{"code": "ab", "tags": ["abc"], "age": 1}', '{"code": "ab", "tags": ["\\n"], "age": 1}',
    '{"code": "ab", "tags": ["x"], "age": -1}', '{"code": "ab", "tags": ["x"], "age": 151}',
    '{"code": "ab", "tags": ["x"], "age": 150}', '{"code": "ab", "tags": ["x"], "age": 0}',
    '{"code": "ab", "tags": ["x"], "age": 1500}', '{"code": "ab", "tags": ["x"], "age": 15, "neg": -6}',
    '{"code": "ab", "tags": ["x"], "age": 15, "neg": -7}', '{"code": "ab", "tags": ["x"], "age": 15, "neg": -70}',
    '{"code": "ab", "tags": ["x"], "age": 15, "big": 999}', '{"code": "ab", "tags": ["x"], "age": 15, "big": 1000}',
    '{"code": "ab", "tags": ["x"], "age": 15, "big": 99999999999999999999}',
    '{"code": "ab", "tags": ["x"], "age": 15, "grid": [[1, 2], [3, 4], [5, 6]]}',
    '{"code": "ab", "tags": ["x"], "age": 15, "grid": [[1, 2], [3]]}',
    '{"code": "ab", "tags": ["x"], "age": 15, "grid": [[-12, 29]]}',
    '{"code": "ab", "tags": ["x"], "age": 15, "grid": [[-13, 29]]}',
    '{"code": "ab", "tags": ["x"], "age": 15, "grid": [[-12, 30]]}',
    '{"code": "ab", "tags": ["x"], "age": 15, "some": [1]}', '{"code": "ab", "tags": ["x"], "age": 15, "some": []}',
    '{"code": "日本語😀é", "tags": ["x"], "age": 15}', '{"code": "日本語😀éa", "tags": ["x"], "age": 15}',
    '{"code": "ab", "nick": "abcd", "tags": ["x"], "age": 1}', '{"code": "ab", "nick": null, "tags": ["x"], "age": 1}',
]

# Characters for length-bounded strings: no escapes (xgrammar writes such a
# string without them), one to four UTF-8 bytes each.
BOUNDED_CHARS = ["a", "x", " ", "é", "日", "😀"]

PIECES = ["a", "Lily", " ", "\"", "\\", "/", "\n", "\t", "\u0001", "\u007f", "é", "日本", "😀", "\u2028", "x y"]


KEYS = ["a", "key", "", "日本", "x y", "\"q\"", "n1"]


def any_value(rng, depth):
    """A random JSON value, nested a few levels at most."""
    kinds = ["int", "float", "str", "true", "false", "null"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -7, 123456789])
    if kind == "float":
        return rng.choice([0.5, -1e-07, 6.02e23, 3.25])
    if kind == "str":
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 2)))
    if kind == "list":
        return [any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "dict":
        return {rng.choice(KEYS): any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return {"true": True, "false": False, "null": None}[kind]


def refers(s):
    """Whether a schema holds a $ref (recursion may go on through it)."""
    return "$ref" in json.dumps(s)


def instance(rng, s, root=None, depth=0):
    """A random instance; past DEEPEST references only where nothing else
    is allowed, so recursive schemas give documents within the engine's
    unrolled depth."""
    root = s if root is None else root
    if "$ref" in s:
        target = root
        for part in s["$ref"][2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        return instance(rng, target, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in s:
            options = [a for a in s[key] if depth < DEEPEST or not refers(a)] or s[key]
            return instance(rng, rng.choice(options), root, depth)
    if "allOf" in s:
        return instance(rng, s["allOf"][0], root, depth)
    if "const" in s:
        return s["const"]
    if not any(k in s for k in ("type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf")):
        return any_value(rng, depth)
    if "enum" in s:
        return rng.choice(s["enum"])
    t = s["type"]
    if isinstance(t, list):
        t = rng.choice(t)
    if t == "string":
        if "format" in s:
            return rng.choice(FORMAT_EXAMPLES[s["format"]])
        if "pattern" in s:
            text = rng.choice(PATTERN_EXAMPLES[s["pattern"]])
            assert re.fullmatch(s["pattern"], text, re.ASCII), (s["pattern"], text)  # ECMA-262: \w is ASCII
            return text
        if "minLength" in s or "maxLength" in s:
            lo = s.get("minLength", 0)
            return "".join(rng.choice(BOUNDED_CHARS) for _ in range(rng.randint(lo, s.get("maxLength", lo + 4))))
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
    if t == "integer":
        bounds = [k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in s]
        if bounds:
            lo = max(s.get("minimum", -10**6), s.get("exclusiveMinimum", -10**6 - 1) + 1)
            hi = min(s.get("maximum", 10**6), s.get("exclusiveMaximum", 10**6 + 1) - 1)
            return rng.choice([lo, hi, rng.randint(lo, hi)])
        return rng.choice([0, 7, -3, 123456789012, -1])
    if t == "number":
        if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return bounded_number(rng, s)
        return rng.choice([0, -0.5, 3.25, 1e-7, -12, 6.02e23, 100])
    if t == "boolean":
        return rng.random() < 0.5
    if t == "null":
        return None
    if t == "array" and ("prefixItems" in s or "items" not in s):
        prefix = s.get("prefixItems", [])
        rest = s.get("items")
        if not prefix and rest is None:
            return [] if "maxItems" in s else [any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        lo = s.get("minItems", 0)
        hi = s.get("maxItems", len(prefix) + (2 if rest else 0))
        if not rest:
            hi = min(hi, len(prefix))
        n = rng.randint(lo, hi)
        return [instance(rng, prefix[i] if i < len(prefix) else rest, root, depth) for i in range(n)]
    if t == "array":
        lo = s.get("minItems", 0)
        hi = lo if depth >= DEEPEST and refers(s["items"]) else s.get("maxItems", lo + 3)
        return [instance(rng, s["items"], root, depth) for _ in range(rng.randint(lo, hi))]
    extra = s.get("additionalProperties", False)
    if "properties" in s and extra is not False:  # declared keys, then some of its own choosing
        out = {}
        req = set(s.get("required", []))
        for k, sub in s["properties"].items():
            if k in req or rng.random() < 0.6:
                out[k] = instance(rng, sub, root, depth)
        for _ in range(rng.randint(0, 2)):
            key = rng.choice(["zz", "idx", "nam", "a b", "日", "", "abc", "x1"])
            if key not in s["properties"]:
                out[key] = instance(rng, extra, root, depth + 1) if isinstance(extra, dict) else any_value(rng, depth)
        return out
    if "properties" not in s:  # keys of its own choosing
        extra = s.get("additionalProperties", True)
        return {rng.choice(KEYS): (instance(rng, extra, root, depth + 1) if isinstance(extra, dict)
                                   else any_value(rng, depth + 1))
                for _ in range(rng.randint(0, 3))}
    out = {}
    req = set(s.get("required", []))
    for k, sub in s.get("properties", {}).items():
        if k in req or (rng.random() < 0.6 and (depth < DEEPEST or not refers(sub))):
            out[k] = instance(rng, sub, root, depth)
    return out


def bounded_number(rng, s):
    """A value within a number's bounds that json.dumps writes as xgrammar's
    bounded numbers are written: no exponent, at most six fractional
    digits."""
    lo = max(s.get("minimum", -1000), s.get("exclusiveMinimum", -1001) + 1e-6)
    hi = min(s.get("maximum", 1000), s.get("exclusiveMaximum", 1001) - 1e-6)
    while True:
        v = rng.choice([lo, hi, round(rng.uniform(lo, hi), rng.randint(0, 6)), int(rng.uniform(lo, hi))])
        v = round(v, 6)
        if v == int(v) and rng.random() < 0.5:
            v = int(v)
        text = json.dumps(v)
        if lo <= v <= hi and "e" not in text and len(text.partition(".")[2]) <= 6:
            return v


NUMBER_DOCS = [
    '{"p": 0, "t": 0}', '{"p": 1, "t": -40}', '{"p": 1.0, "t": -40.5}', '{"p": 1.000001, "t": 1}',
    '{"p": 0.1234567, "t": 1}', '{"p": 0.123456, "t": 59.999999}', '{"p": -0, "t": 1}', '{"p": -0.0, "t": 1}',
    '{"p": 0.5, "t": 60}', '{"p": 0.5, "t": -40.499999}', '{"p": 1e-3, "t": 1}', '{"p": 0.5, "t": 1, "gain": 0}',
    '{"p": 0.5, "t": 1, "gain": 0.000001}', '{"p": 0.5, "t": 1, "gain": 0.0000001}', '{"p": 0.5, "t": 1, "debt": -0.25}',
    '{"p": 0.5, "t": 1, "debt": -0.249999}', '{"p": 0.5, "t": 1, "debt": -1000000}', '{"p": 0.5, "t": 1, "lat": -90.0}',
    '{"p": 0.5, "t": 1, "lat": null}', '{"p": 0.5, "t": 1, "lat": 90.000001}', '{"p": 0.5, "t": 1, "n": 99.5}',
    '{"p": 0.5, "t": 1, "n": 99.500001}', '{"p": 0.5, "t": 1, "n": 7}', '{"p": 0.5, "t": 1, "n": -1}',
    '{"p": 0.5, "t": 1, "gain": 12345678901234567890}', '{"p": 0.5, "t": 1, "gain": 1.5E3}',
]


# Keys of its own choosing against declared ones: a declared name as a free
# key, keys sharing a declared one's beginning, free keys before declared.
EXTRA_DOCS = [
    '{"id": 1, "zz": "a"}', '{"id": 1, "id": "a"}', '{"id": 1, "name": "n", "nam": "x"}', '{"id": 1, "names": "x"}',
    '{"id": 1, "zz": "a", "name": "n"}', '{"id": 1, "nick": "k", "name": "n"}', '{"id": 1, "nick": "k", "zz": "abc"}',
    '{"id": 1, "zz": "abcd"}', '{"id": 1, "attrs": {"ab": null, "a": true}}', '{"id": 1, "attrs": {"a": true, "ab": 1}}',
    '{"id": 1, "attrs": {"abc": 1, "b": 2}}', '{"id": 1, "attrs": {"ab": null, "a": 1}}', '{"id": 1, "attrs": {"a": 7}}',
    '{"id": 1, "tail": {"x": 1, "y": [1, {"z": null}]}}', '{"id": 1, "tail": {"y": 1}}', '{"id": 1, "tail": {"x": 1, "x": 2}}',
    '{"id": 1, "\\u0069d": "x"}', '{"id": 1, "i\\"d": "x"}', '{"id": 1, "": ""}', '{"zz": "a", "id": 1}',
]


# How deep instances of a recursive schema go (the engine unrolls to 8).
DEEPEST = 4


# JSON mode's bytes less newline, tab and DEL.
MUTATION_BYTES = b'{}[]":, .-+eE0123456789tfnul\\/abc\x00\x1f\x80\xc3\xff'


def main():
    compiler = xgrammar_bytes.byte_compiler()
    cases = []
    for index, schema in enumerate(SCHEMAS):
        # A generator per schema: a schema added or changed leaves the
        # others' documents as they were.
        rng = random.Random(f"20261205-{index}")
        compiled = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)

        def xgrammar_reads(doc):
            return xgrammar_bytes.reads(compiled, doc)

        def xgrammar_takes(doc):
            return xgrammar_reads(doc)[1]

        docs = set()
        for _ in range(60):
            inst = instance(rng, schema)
            jsonschema.validate(inst, schema)
            # Escaped non-ASCII only where lengths are not bounded (a bounded
            # string is written without escapes).
            text = json.dumps(inst, ensure_ascii=rng.random() < 0.3 and schema not in (SCHEMAS[7], SCHEMAS[9], SCHEMAS[14], SCHEMAS[16])).encode()
            assert xgrammar_takes(text), text
            docs.add(text)
            docs.update(json_documents.mutants(rng, text, 8, MUTATION_BYTES))
            if isinstance(inst, dict) and len(inst) > 1:
                docs.add(json.dumps(dict(reversed(list(inst.items())))).encode())
            docs.add(json.dumps(inst, indent=1).encode())
            docs.add(json.dumps(inst, separators=(",", ":")).encode())
        docs.update([b"", b"{}", b"{ }", b"[]", b"null", b'{"name": "x", "age": 1, "extra": 2}'])
        if schema is SCHEMAS[7]:
            docs.update(d.encode() for d in BOUNDS_DOCS)
        if schema is SCHEMAS[12]:
            docs.update(d.encode() for d in NUMBER_DOCS)
        if schema is SCHEMAS[16]:
            docs.update(d.encode() for d in EXTRA_DOCS)
        verdicts = sorted((d.hex(), *xgrammar_reads(d)) for d in docs)
        accepted = sum(v for _, _, v in verdicts)
        print(f"schema {len(cases)}: {len(verdicts)} documents, {accepted} taken", file=sys.stderr)
        cases.append({"schema": schema, "documents": [{"hex": h, "prefix": n, "accepted": v}
                                                      for h, n, v in verdicts]})
    OUT.write_text(json.dumps({
        "versions": {"python": sys.version.split()[0], "xgrammar": metadata.version("xgrammar"),
                     "jsonschema": metadata.version("jsonschema")},
        "note": "verdicts of xgrammar's compile_json_schema(any_whitespace=False) matcher and the bytes it "
                "takes before refusing one; "
                "written by tools/golden/json_schema_documents.py",
        "cases": cases,
    }, indent=0) + "\n")


if __name__ == "__main__":
    main()
