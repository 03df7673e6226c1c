// Internal to engine/attention: the few-rows (decode) path of the flash
// kernel. A decode job has 1-8 query rows (the Hq/Hkv heads of one GQA group,
// times one or two new tokens) and streams up to thousands of K/V rows once,
// so it is bound by memory bandwidth, not FLOPs. It therefore
//   - reads K and V rows in place (f32, or bf16 widened in registers), each
//     exactly once for the whole group;
//   - keeps scores key-major ([key][row]) so the online softmax runs on whole
//     8-lane vectors: one vectorised exp per 8/rows keys, no per-row loops;
//   - prefetches K/V rows a fixed distance ahead through the block table
//     into L2 (paged blocks are scattered, so the hardware prefetchers cannot
//     guess the next one).
// Scratch is fixed-size on the stack, independent of Nk.
#ifndef ATTNSERVE_ENGINE_ATTENTION_DECODE_KERNEL_H_
#define ATTNSERVE_ENGINE_ATTENTION_DECODE_KERNEL_H_

#include <cstdint>

#include "engine/attention/flash_kernel.h"

namespace attnserve::attention_internal {

// Largest head_dim the decode path takes (its stack scratch is sized by it).
inline constexpr int kDecodeMaxHeadDim = 256;
inline constexpr int kDecodeMaxRows = 8;

// True when RunDecodeJob can run this job: AVX2+FMA present and not forced
// off, 1 <= num_rows <= kDecodeMaxRows, head_dim <= 256 and a multiple of 8
// (f32 K/V) or 16 (bf16), and no row carries an allow / key-allow /
// additive mask (key_limit and key_begin only).
bool DecodeJobSupported(const FlashRow* rows, int num_rows, int head_dim, DType kv_dtype);

// Turns the decode path off (jobs go to the generic tiled kernel), so tests
// and the benchmark can compare both. Not thread-safe: call before any
// attention runs.
void DisableDecodeKernel(bool disable);

// Software prefetch of K/V rows: `distance_bytes` ahead per stream (0 = none,
// the hardware prefetchers alone), into L1 (T0) or L2 (T1). The default (32
// KiB into L2) is what the benchmark measured best; this exists so the
// benchmark and tests can compare the alternatives in one run. Not
// thread-safe: call before any attention runs.
void SetDecodePrefetch(int64_t distance_bytes, bool into_l1);
void ResetDecodePrefetch();

// The inner-loop organisation, selectable so the benchmark can compare them
// in one run (docs/benchmarks.md, Attention). All read K/V once per group
// and match the reference to f32 rounding.
//   kChunk64WideQk (the default): one online-softmax step per 64 keys; P·V
//     accumulates into o in L1 every 8 / rows keys; for f32 K and 4 rows the
//     Q·K pass takes 3 keys (12 accumulators) instead of 2.
//   kChunk64: the same with 8 / rows keys per Q·K pass (the kernel before).
//   kBlockTiled: one step per 16 keys (one KV block) and a register-tiled
//     P·V that keeps the output accumulators in registers across the block
//     and folds the rescale into loading them (measured slower here).
// Not thread-safe: call before any attention runs.
enum class DecodeVariant { kChunk64WideQk, kChunk64, kBlockTiled };
void SetDecodeVariant(DecodeVariant variant);

// Same contract as RunFlashJob; requires DecodeJobSupported(). Heads of 8
// f32 values go to their own kernel (head8_decode_kernel.h) whatever the
// variant.
void RunDecodeJob(const FlashRow* rows, int num_rows, const KvSource& src, int head_dim,
                  float scale);

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_DECODE_KERNEL_H_
