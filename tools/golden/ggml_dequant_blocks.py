#!/usr/bin/env python3
"""Reference dequantisation of llama.cpp's block formats, for
engine/formats/ggml_dequantize.cc.

For each block type a GGUF file may hold quantised weights in (Q4_0, Q4_1,
Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): a few
blocks of random bytes (seeded), the f16 scale fields set to random finite
values so that every element is a number, and the f32 values
gguf.quants.dequantize (gguf-py, llama.cpp's own Python package, numpy
ports of ggml-quants.c) reads from them. Random bytes reach every bit of
every field, which real weights quantised by a well-behaved quantiser may
not (a sign bit of a scale, the top bits of 6-bit scales).

Writes tests/golden/gguf_quants/blocks.json:
  versions: python, numpy, gguf
  types: [{name, id, block_size, block_bytes, hex (the blocks), values}]

Usage: .cache/venv/bin/python tools/golden/ggml_dequant_blocks.py
"""
import json
import pathlib
import platform
from importlib import metadata

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "gguf_quants" / "blocks.json"
SEED = 20261206
T = gguf.GGMLQuantizationType

# Byte offsets of each type's f16 fields (ggml-common.h's block_* structs).
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.IQ4_NL: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208], T.IQ4_XS: [0],
}
BLOCKS = 3


def main():
    rng = np.random.default_rng(SEED)
    types = []
    for qtype, fields in HALF_FIELDS.items():
        block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(BLOCKS, block_bytes), dtype=np.uint8)
        for off in fields:
            # Scales of either sign, 1e-3 to 0.25 in magnitude.
            half = (rng.uniform(1e-3, 0.25, size=BLOCKS) * rng.choice([-1.0, 1.0], size=BLOCKS)).astype(np.float16)
            raw[:, off:off + 2] = half.view(np.uint8).reshape(BLOCKS, 2)
        values = gguf.quants.dequantize(raw.reshape(-1), qtype).astype(np.float32)
        assert values.shape == (BLOCKS * block_size,), (qtype, values.shape)
        assert np.isfinite(values).all(), qtype.name
        types.append({"name": qtype.name, "id": int(qtype), "block_size": block_size, "block_bytes": block_bytes,
                      "hex": raw.tobytes().hex(), "values": [float(v) for v in values]})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {"seed": SEED,
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "gguf": metadata.version("gguf")},
           "types": types}
    # One type a line: the values are many and say little to a reader.
    lines = ",\n  ".join(json.dumps(t) for t in doc.pop("types"))
    OUT.write_text(json.dumps(doc)[:-1] + ',\n "types": [\n  ' + lines + "\n ]\n}\n")
    print(f"wrote {OUT} ({len(types)} types)")


if __name__ == "__main__":
    main()
