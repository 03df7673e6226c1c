#!/usr/bin/env python3
"""Writes the attention golden fixtures (tests/golden/attention/) from PyTorch.

Each case is a folder of .npy files (inputs, weights, expected outputs) read by
tests/engine/attention/golden_test.cc. Versions go to versions.json. Masks are
saved in PyTorch's own convention (the C++ test converts them through
engine/attention/torch_compat.h, as production code must).

Run on the host: .cache/venv/bin/python tools/golden/attention_make_fixtures.py
"""
import json
import os
import pathlib
import platform
import sys

import numpy as np
import torch
import torch.nn.functional as F

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "attention"


def save(case, **arrays):
    d = OUT / case
    d.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        if isinstance(a, torch.Tensor):
            if a.dtype == torch.bfloat16:
                a = a.view(torch.int16).numpy().view(np.uint16)
            else:
                a = a.detach().numpy()
        a = np.ascontiguousarray(a)
        if a.dtype == np.float64:
            a = a.astype(np.float32)
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)
        np.save(d / f"{name}.npy", a)


def mha_case(case, embed, heads, b, nq, nk=None, kdim=None, vdim=None, cross=False,
             attn_mask=None, key_padding_mask=None, seed=0):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True, kdim=kdim, vdim=vdim,
                                      dropout=0.1)  # dropout must be inactive in eval()
    mha.eval()
    nk = nk or nq
    q = torch.randn(b, nq, embed)
    if cross or kdim or vdim:
        k = torch.randn(b, nk, kdim or embed)
        v = torch.randn(b, nk, vdim or embed)
    else:
        k = v = q
    with torch.no_grad():
        out, w = mha(q, k, v, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                     need_weights=True, average_attn_weights=False)
        _, w_avg = mha(q, k, v, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                       need_weights=True, average_attn_weights=True)
    arrays = {f"sd.{name}": t for name, t in mha.state_dict().items()}
    arrays.update(query=q, key=k, value=v, out=out, weights=w, weights_avg=w_avg,
                  config=np.array([embed, heads, kdim or embed, vdim or embed, b, nq, nk],
                                  dtype=np.int32))
    if attn_mask is not None:
        arrays["attn_mask"] = attn_mask
    if key_padding_mask is not None:
        arrays["key_padding_mask"] = key_padding_mask
    save(case, **arrays)
    print(case, "out", tuple(out.shape), "weights", tuple(w.shape))


def sdpa_case(case, b, hq, hkv, nq, nk, d, is_causal=False, attn_mask=None, bf16_kv=False, seed=0,
              scale=None):
    torch.manual_seed(seed)
    q = torch.randn(b, hq, nq, d)
    k = torch.randn(b, hkv, nk, d)
    v = torch.randn(b, hkv, nk, d)
    if bf16_kv:
        # Torch computes in f32 from the ORIGINAL K/V; we read bf16-stored K/V.
        k_store, v_store = k.to(torch.bfloat16), v.to(torch.bfloat16)
    with torch.no_grad():
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                             enable_gqa=hq != hkv, scale=scale)
        if hq != hkv:
            g = hq // hkv
            ref = F.scaled_dot_product_attention(q, k.repeat_interleave(g, dim=1),
                                                 v.repeat_interleave(g, dim=1),
                                                 attn_mask=attn_mask, is_causal=is_causal,
                                                 scale=scale)
            assert torch.allclose(out, ref, atol=1e-6), "enable_gqa != repeat_interleave"
    arrays = dict(q=q, out=out,
                  config=np.array([b, hq, hkv, nq, nk, d, int(is_causal)], dtype=np.int32))
    if bf16_kv:
        arrays.update(k_bf16=k_store, v_bf16=v_store)
    else:
        arrays.update(k=k, v=v)
    if attn_mask is not None:
        arrays["attn_mask"] = attn_mask
    if scale is not None:
        arrays["scale"] = np.array([scale], dtype=np.float32)
    save(case, **arrays)
    print(case, "out", tuple(out.shape))


def main():
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    mha_case("mha_self_128x4", 128, 4, b=2, nq=10, seed=1)
    causal = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)  # True = blocked
    mha_case("mha_causal_64x4", 64, 4, b=2, nq=8, attn_mask=causal, seed=2)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])  # True = padding
    mha_case("mha_padding_64x4", 64, 4, b=2, nq=5, key_padding_mask=pad, seed=3)
    mha_case("mha_cross_128x8", 128, 8, b=2, nq=6, nk=12, cross=True, seed=4)
    mha_case("mha_kdim_vdim_64x4", 64, 4, b=2, nq=5, nk=7, kdim=48, vdim=40, seed=5)
    float_mask = torch.randn(7, 9) * 2
    mha_case("mha_float_mask_32x2", 32, 2, b=1, nq=7, nk=9, cross=True, attn_mask=float_mask,
             seed=6)
    sdpa_case("sdpa_gqa_8x2", 2, 8, 2, 7, 7, 32, seed=7)
    sdpa_case("sdpa_mqa_causal", 2, 4, 1, 9, 9, 64, is_causal=True, seed=8)
    allow = torch.rand(2, 1, 5, 11) > 0.3  # SDPA bool mask: True = may attend
    allow[..., 0] = True
    sdpa_case("sdpa_bool_mask_cross", 2, 4, 4, 5, 11, 80, attn_mask=allow, seed=9)
    sdpa_case("sdpa_bf16_kv_gqa", 1, 8, 2, 4, 33, 128, bf16_kv=True, seed=10)
    sdpa_case("sdpa_scale_override", 1, 2, 2, 3, 6, 32, scale=0.3, seed=11)
    versions = {
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "script": "tools/golden/attention_make_fixtures.py",
    }
    (OUT / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(versions)


if __name__ == "__main__":
    main()
