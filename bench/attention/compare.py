#!/usr/bin/env python3
"""Prints the attention benchmark table and ratios from one run.

Usage: compare.py GBENCH_JSON TORCH_JSONL
"""
import json
import sys


def main():
    gb = json.load(open(sys.argv[1]))
    torch_rows = {}
    for line in open(sys.argv[2]):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            torch_rows[r["name"]] = r
    ms, gflops, gbps = {}, {}, {}
    rows = gb["benchmarks"]
    if any(b.get("run_type") == "aggregate" for b in rows):
        # Repeated run (ATTN_BENCH_REPETITIONS): medians only.
        rows = [dict(b, name=b["run_name"]) for b in rows if b.get("aggregate_name") == "median"]
        print(f"medians of {gb['benchmarks'][0].get('repetitions', '?')} interleaved repetitions")
    for b in rows:
        name = b["name"].replace("/real_time", "")
        if b.get("error_occurred"):
            print(f"{name}: ERROR {b.get('error_message')}")
            continue
        ms[name] = b["real_time"]  # unit: ms (set in the benchmark)
        gflops[name] = b.get("GFLOP/s")
        gbps[name] = b.get("GB/s")
    matmul = gflops.get("BM_MatmulF32")
    stream = gbps.get("BM_StreamRead/4k_pages")
    print(f"f32 matmul (oneDNN, 1024^3): {matmul:.1f} GFLOP/s; STREAM-like read: {stream:.2f} GB/s")
    print()
    print("GFLOP/s counts the full square 4*B*Hq*Nq*Nk*d for every shape (causal included); "
          "%matmul counts what is computed (about half the square for causal).")
    print(f"{'shape':44} {'ours ms':>9} {'GFLOP/s':>8} {'GB/s':>6} {'oneDNN ms':>10} {'torch ms':>9} "
          f"{'vs oneDNN':>9} {'vs torch':>9} {'%matmul':>8} {'%stream':>8}")
    shapes = ["minilm_b32_h12_n128_d32", "bert_b8_h12_n512_d64", "causal_b1_hq32_hkv8_n2048_d128",
              "decode_b32_hq32_hkv8_nk1024_d128_f32", "decode_b32_hq32_hkv8_nk1024_d128_bf16"]
    for s in shapes:
        if s.startswith("decode"):
            ours = "BM_OursDecodePaged/" + s
            graph = "BM_OnednnGraph/decode_b32_hq32_hkv8_nk1024_d128"
        else:
            ours, graph = "BM_Ours/" + s, "BM_OnednnGraph/" + s
        if ours not in ms:
            continue
        t = torch_rows.get(s, {}).get("ms")
        g = ms.get(graph)
        row = f"{s:44} {ms[ours]:9.2f} {gflops[ours] or 0:8.1f} {gbps.get(ours) or 0:6.2f} "
        row += f"{g:10.2f} " if g else f"{'n/a':>10} "
        row += f"{t:9.2f} " if t else f"{'n/a':>9} "
        row += f"{g / ms[ours]:8.2f}x " if g else f"{'':>9} "
        row += f"{t / ms[ours]:8.2f}x " if t else f"{'':>9} "
        # % of matmul uses the FLOPs actually computed: causal does about half the square.
        done = gflops[ours] * (0.5 if "causal" in s else 1.0)
        row += f"{100 * done / matmul:7.0f}% " if not s.startswith("decode") else f"{'':>8} "
        row += f"{100 * gbps[ours] / stream:7.0f}%" if s.startswith("decode") else ""
        print(row)
    full, causal = ms.get("BM_Ours/full_b1_hq32_hkv8_n2048_d128"), ms.get("BM_Ours/causal_b1_hq32_hkv8_n2048_d128")
    if full and causal:
        print(f"\ncausal skip: full square {full:.1f} ms / causal {causal:.1f} ms = {full / causal:.2f}x (target >= 1.6x)")
    scalar = ms.get("BM_OursScalar/bert_b8_h12_n512_d64")
    if scalar:
        print(f"losing variant, scalar micro-kernels on bert_b8_h12_n512_d64: {scalar:.1f} ms, "
              f"{gflops.get('BM_OursScalar/bert_b8_h12_n512_d64') or 0:.1f} GFLOP/s")
    for s in ["minilm_b32_h12_n128_d32", "bert_b8_h12_n512_d64", "causal_b1_hq32_hkv8_n2048_d128"]:
        a2 = ms.get("BM_OursAvx2/" + s)
        if a2 and ("BM_Ours/" + s) in ms and a2 != ms["BM_Ours/" + s]:
            print(f"AVX2 products (the variant AVX-512 replaced) on {s}: {a2:.2f} ms, "
                  f"{gflops.get('BM_OursAvx2/' + s) or 0:.1f} GFLOP/s (ours is {a2 / ms['BM_Ours/' + s]:.2f}x faster)")
    for s in ["minilm_b32_h12_n128_d32", "bert_b8_h12_n512_d64"]:
        mm = ms.get("BM_OnednnMatmulInner/" + s)
        if mm and ("BM_Ours/" + s) in ms:
            print(f"oneDNN-matmul inner-loop variant on {s}: {mm:.2f} ms, "
                  f"{gflops.get('BM_OnednnMatmulInner/' + s) or 0:.1f} GFLOP/s "
                  f"(ours is {mm / ms['BM_Ours/' + s]:.2f}x its speed; "
                  f"{100 * gflops['BM_OnednnMatmulInner/' + s] / matmul:.0f}% matmul)")
    for dt in ["f32", "bf16"]:
        ceiling = gbps.get(f"BM_PagedRead/{dt}_blk16")
        ours = gbps.get(f"BM_OursDecodePaged/decode_b32_hq32_hkv8_nk1024_d128_{dt}")
        generic = gbps.get(f"BM_OursDecodePaged/generic_decode_b32_hq32_hkv8_nk1024_d128_{dt}")
        blk64 = gbps.get(f"BM_OursDecodePaged/decode_b32_hq32_hkv8_nk1024_d128_{dt}_blk64")
        if ceiling and ours:
            line = (f"decode {dt}: paged-read ceiling (same pool, block 16, no math) {ceiling:.2f} GB/s "
                    f"= {100 * ceiling / stream:.0f}% STREAM; ours {ours:.2f} GB/s = "
                    f"{100 * ours / ceiling:.0f}% of it")
            if blk64:
                line += f"; block 64: {blk64:.2f} GB/s ({100 * blk64 / stream:.0f}% STREAM)"
            if generic:
                line += f"; generic tiled kernel (before): {generic:.2f} GB/s ({100 * generic / stream:.0f}% STREAM)"
            # The decode kernel's other inner-loop variants (DecodeVariant), same run.
            for variant in ["chunk64", "tiled"]:
                g = gbps.get(f"BM_OursDecodePaged/{variant}_decode_b32_hq32_hkv8_nk1024_d128_{dt}")
                if g:
                    line += f"; variant {variant}: {g:.2f} GB/s ({100 * g / stream:.0f}% STREAM)"
            print(line)
    # Heads of 8 (stories260K's 16-sequence step); these two report microseconds.
    tiny = ms.get("BM_OursDecodePaged/tiny_decode_b16_hq8_hkv4_nk96_d8_f32")
    tiny_general = ms.get("BM_OursDecodePaged/general_tiny_decode_b16_hq8_hkv4_nk96_d8_f32")
    if tiny and tiny_general:
        print(f"decode, heads of 8 (16 sequences x 4 KV heads, 96 keys): head-of-8 kernel {tiny:.1f} us, "
              f"general decode kernel {tiny_general:.1f} us ({tiny_general / tiny:.2f}x)")
    dense = ms.get("BM_Ours/decode_dense_b32_hq32_hkv8_nk1024_d128")
    if dense:
        print(f"decode through dense SDPA (contiguous f32 K/V): {dense:.2f} ms, {gbps.get('BM_Ours/decode_dense_b32_hq32_hkv8_nk1024_d128') or 0:.2f} GB/s")


if __name__ == "__main__":
    main()
