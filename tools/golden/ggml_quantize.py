"""Quantisers for the llama.cpp block types gguf-py reads but cannot write
(Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS), so that test models can be
written in them. Plain min/max scaling per sub-block, not llama-quantize's
error-minimising search: what matters to a test is the bytes' layout, and
the reference reads the same bytes back with gguf.quants.dequantize.

Each packer lays integer codes out as ggml-common.h's block_* structs do;
quantize() checks every block it writes against gguf-py's reading of it
(the codes times the scales it meant), so a packing mistake fails here, not
in a C++ test. Q4_0 ... Q8_0 go through gguf.quants.quantize.

Usage (library): quantize(array_f32 [rows, cols], qtype) -> uint8 [rows, bytes]
"""
import gguf
import numpy as np

T = gguf.GGMLQuantizationType
QK = 256
IQ4_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)


def _f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def _f16_bytes(h):
    return h.astype(np.float16).reshape(-1, 1).view(np.uint8)


def _safe_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def _scale_min(x, nq, nbits):
    """Per sub-block (last axis) scale and min codes for x = d*sc*q - dmin*m,
    q in 0..nq, sc and m in 0..2^nbits-1, and the quants. x: [blocks, subs, n]."""
    lo = np.minimum(x.min(axis=-1), 0.0)
    hi = x.max(axis=-1)
    scale, mins = (hi - lo) / nq, -lo
    top = 2 ** nbits - 1
    d = _f16(scale.max(axis=-1) / top)
    dmin = _f16(mins.max(axis=-1) / top)
    df, dminf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.clip(np.rint(_safe_div(scale, df)), 0, top).astype(np.uint8)
    m = np.clip(np.rint(_safe_div(mins, dminf)), 0, top).astype(np.uint8)
    step = (df * sc)[..., None]
    q = np.clip(np.rint(_safe_div(x + (dminf * m)[..., None], step)), 0, nq).astype(np.uint8)
    recon = step * q - (dminf * m)[..., None]
    return d, dmin, sc, m, q, recon


def _signed_scale(x, qmax_neg, sbits_max):
    """Per sub-block signed scale codes for x = d*sc*q with q in
    [-qmax_neg, qmax_neg - 1]: the element of largest magnitude maps to
    -qmax_neg. Returns d (f16, [blocks]), sc ([blocks, subs], int), step."""
    idx = np.abs(x).argmax(axis=-1)
    amax = np.take_along_axis(x, idx[..., None], axis=-1)[..., 0]
    scale = amax / -qmax_neg
    d = _f16(np.abs(scale).max(axis=-1) / sbits_max)
    df = d.astype(np.float32)[:, None]
    sc = np.clip(np.rint(_safe_div(scale, df)), -sbits_max - 1, sbits_max).astype(np.int32)
    return d, sc, (df * sc)[..., None]


def _q2_k(x):
    x = x.reshape(-1, 16, 16)
    d, dmin, sc, m, q, recon = _scale_min(x, 3, 4)
    n = x.shape[0]
    scales = (sc | (m << 4)).astype(np.uint8)
    q = q.reshape(n, 2, 4, 32)  # element h*128 + s*32 + l
    qs = (q[:, :, 0] | (q[:, :, 1] << 2) | (q[:, :, 2] << 4) | (q[:, :, 3] << 6)).reshape(n, 64)
    return np.concatenate([scales, qs, _f16_bytes(d), _f16_bytes(dmin)], axis=1), recon


def _q3_k(x):
    x = x.reshape(-1, 16, 16)
    n = x.shape[0]
    d, sc, step = _signed_scale(x, 4, 31)
    q = np.clip(np.rint(_safe_div(x, step)), -4, 3).astype(np.int32)
    recon = step * q
    u = (sc + 32).astype(np.uint8)  # 6 bits
    scales = np.zeros((n, 12), dtype=np.uint8)
    scales[:, :8] = (u[:, :8] & 0x0F) | ((u[:, 8:] & 0x0F) << 4)
    for j in range(16):
        scales[:, 8 + j % 4] |= ((u[:, j] >> 4) & 3) << (2 * (j // 4))
    qu = (q + 4).astype(np.uint8)  # 0..7: low two bits, high bit set when q >= 0
    low, high = qu & 3, (qu >> 2) & 1
    low, high = low.reshape(n, 2, 4, 32), high.reshape(n, 8, 32)  # element (h*4 + s)*32 + l
    qs = (low[:, :, 0] | (low[:, :, 1] << 2) | (low[:, :, 2] << 4) | (low[:, :, 3] << 6)).reshape(n, 64)
    hmask = np.zeros((n, 32), dtype=np.uint8)
    for b in range(8):
        hmask |= high[:, b] << b
    return np.concatenate([hmask, qs, scales, _f16_bytes(d)], axis=1), recon


def _pack_k4_scales(sc, m):
    n = sc.shape[0]
    out = np.zeros((n, 12), dtype=np.uint8)
    out[:, 0:4] = (sc[:, 0:4] & 0x3F) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = (m[:, 0:4] & 0x3F) | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    return out


def _scale_min_k(x, bits):
    """Q4_K (4 bits) and Q5_K (5): scales and mins, [Q5_K: fifth bits], nibbles."""
    x = x.reshape(-1, 8, 32)
    n = x.shape[0]
    d, dmin, sc, m, q, recon = _scale_min(x, 2 ** bits - 1, 6)
    low = (q & 0x0F).reshape(n, 4, 2, 32)  # sub-block 2c + h: nibble h of byte c*32 + l
    parts = [_f16_bytes(d), _f16_bytes(dmin), _pack_k4_scales(sc, m)]
    if bits == 5:
        qh = np.zeros((n, 32), dtype=np.uint8)
        for j in range(8):
            qh |= ((q[:, j] >> 4) & 1) << j
        parts.append(qh)
    parts.append((low[:, :, 0] | (low[:, :, 1] << 4)).reshape(n, 128))
    return np.concatenate(parts, axis=1), recon


def _q4_k(x):
    return _scale_min_k(x, 4)


def _q5_k(x):
    return _scale_min_k(x, 5)


def _q6_k(x):
    x = x.reshape(-1, 16, 16)
    n = x.shape[0]
    d, sc, step = _signed_scale(x, 32, 127)
    q = np.clip(np.rint(_safe_div(x, step)), -32, 31).astype(np.int32)
    recon = step * q
    u = (q + 32).astype(np.uint8).reshape(n, 2, 128)  # per half: element k*64 + l / s*32 + l
    low, high = u & 0x0F, u >> 4
    ql = (low[:, :, :64] | (low[:, :, 64:] << 4)).reshape(n, 128)
    hi = high.reshape(n, 2, 4, 32)
    qh = (hi[:, :, 0] | (hi[:, :, 1] << 2) | (hi[:, :, 2] << 4) | (hi[:, :, 3] << 6)).reshape(n, 64)
    return np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), _f16_bytes(d)], axis=1), recon


def _nearest_iq4(v):
    return np.abs(v[..., None] - IQ4_VALUES).argmin(axis=-1).astype(np.uint8)


def _iq4_nl(x):
    x = x.reshape(-1, 32)
    n = x.shape[0]
    idx = np.abs(x).argmax(axis=-1)
    amax = np.take_along_axis(x, idx[:, None], axis=-1)[:, 0]
    d = _f16(amax / -127.0)
    df = d.astype(np.float32)[:, None]
    q = _nearest_iq4(_safe_div(x, df))
    recon = df * IQ4_VALUES[q]
    qs = q[:, :16] | (q[:, 16:] << 4)
    return np.concatenate([_f16_bytes(d), qs], axis=1), recon.reshape(n, 32)


def _iq4_xs(x):
    x = x.reshape(-1, 8, 32)
    n = x.shape[0]
    d, sc, step = _signed_scale(x, 127, 31)
    q = _nearest_iq4(_safe_div(x, step))
    recon = step * IQ4_VALUES[q]
    u = (sc + 32).astype(np.uint16)
    scales_h = np.zeros(n, dtype=np.uint16)
    for j in range(8):
        scales_h |= ((u[:, j] >> 4) & 3) << (2 * j)
    scales_l = ((u[:, 0::2] & 0x0F) | ((u[:, 1::2] & 0x0F) << 4)).astype(np.uint8)
    qs = (q[:, :, :16] | (q[:, :, 16:] << 4)).reshape(n, 128)
    return np.concatenate([_f16_bytes(d), scales_h.reshape(-1, 1).view(np.uint8), scales_l, qs], axis=1), recon


PACKERS = {T.Q2_K: _q2_k, T.Q3_K: _q3_k, T.Q4_K: _q4_k, T.Q5_K: _q5_k, T.Q6_K: _q6_k, T.IQ4_NL: _iq4_nl,
           T.IQ4_XS: _iq4_xs}


def quantize(arr, qtype):
    """`arr` (f32, rows of a multiple of the block size) in `qtype`, as the
    uint8 array gguf.GGUFWriter.add_tensor takes with raw_dtype=qtype."""
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if qtype not in PACKERS:
        return gguf.quants.quantize(arr, qtype)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert arr.shape[-1] % block == 0, (arr.shape, qtype.name)
    blocks = arr.reshape(-1, block)
    raw, recon = PACKERS[qtype](blocks)
    assert raw.shape == (blocks.shape[0], size), (qtype.name, raw.shape)
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    back = gguf.quants.dequantize(raw.reshape(-1), qtype).reshape(blocks.shape)
    assert np.allclose(back, recon.reshape(blocks.shape), rtol=1e-5, atol=1e-6), f"{qtype.name}: packing"
    return raw.reshape(*arr.shape[:-1], arr.shape[-1] // block * size)
