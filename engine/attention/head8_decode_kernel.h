// Internal to engine/attention: the decode path for heads of 8 f32 values
// (stories260K and other tiny Llamas), where a K or V row is one AVX
// vector. The general decode kernel (decode_kernel.cc) is built for heads of
// 64-256 values streamed from memory; at d = 8 its per-key costs (a
// horizontal reduction every 8 / rows keys, o stored and reloaded every
// 8 / rows keys, a chain of dependent FMAs per output row, prefetches per
// row) outweigh its few multiply-adds several times over: 0.5 µs a job of
// ~100 keys, half of stories260K's step at 16 sequences
// (docs/benchmarks.md, "Heads of 8").
//
// This path keeps the queries and the outputs in registers for the whole
// job: scores 8 keys at a time (8 products and one 8-way reduction per
// row), one online-softmax step per chunk of up to 128 keys, and P·V with
// several independent accumulators per row so the FMAs do not wait on each
// other. Same contract as RunDecodeJob.
#ifndef ATTNSERVE_ENGINE_ATTENTION_HEAD8_DECODE_KERNEL_H_
#define ATTNSERVE_ENGINE_ATTENTION_HEAD8_DECODE_KERNEL_H_

#include "engine/attention/flash_kernel.h"

namespace attnserve::attention_internal {

// True for head_dim 8 with f32 K/V (bf16 rows of 8 are not worth a path:
// the decode path requires bf16 heads in multiples of 16).
bool Head8DecodeApplies(int head_dim, DType kv_dtype);

// Turns this path off (heads of 8 then take the general decode kernel), so
// tests and the benchmark can compare both. Not thread-safe: call before
// any attention runs.
void DisableHead8Decode(bool disable);

// Requires Head8DecodeApplies() and DecodeJobSupported() (1-8 rows, key
// limits and begins only).
void RunHead8DecodeJob(const FlashRow* rows, int num_rows, const KvSource& src, float scale);

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_HEAD8_DECODE_KERNEL_H_
