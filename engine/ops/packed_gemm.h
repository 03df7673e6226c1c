// Packed weights and the small-M GEMM that reads them: y[M, N] = x[M, K] · Wᵀ.
//
// Why: at decode (M = 1..16 rows) a Linear is bound by reading its weights
// once from memory, and oneDNN's run-time-M matmul adds per-call overhead and
// has no f32 × bf16 path on AVX2 CPUs. Here the weights are packed once into
// panels of P output columns, `[ceil(N/P)][Kp][P]` with Kp = K rounded up to
// 16 (bf16: 32), zero padded, so every k step reads P contiguous weights and the kernel
// keeps MR × P/8 accumulators in registers; no horizontal sums, one pass over
// the weights per MR rows of x (rows are blocked so a weight panel is reused
// from cache).
//
// f32: P = 32, MR ≤ 3. This is exactly oneDNN's "BA16a32b" layout of the
// logical [K, N] matrix, the one its AVX2 brgemm matmul accepts at full speed
// for every fixed M (BA16a16b sends it to a reference kernel), so Linear
// holds ONE f32 copy that both this kernel (small M) and oneDNN's fixed-M
// primitives (large M) read.
//
// bf16: P = 32, MR ≤ 3 (AVX2) or 6 (AVX-512). bf16 panels hold k steps in
// pairs: u16 index (k/2)·64 + 2·j + (k mod 2) holds W[column j][step k], so
// each 32-bit lane is one column's two steps. A 16-bit left shift of each
// lane gives step k as f32, masking the low half gives step k+1 — bf16 → f32
// widening in registers, so bf16 weights really read half the bytes.
// Arithmetic is f32 with f32 accumulation. This is exactly oneDNN's
// "BA16a32b2a" layout of the logical [K, N] matrix (the VNNI pairs of its
// AMX / AVX512-BF16 kernels; 32 columns, where its AMX kernel runs 1.2-2.5x
// faster than on 16, bench of 2026-12-03), so with MatmulPrecision::kBf16
// Linear's oneDNN primitives read these same panels in place, as the f32
// ones read BA16a32b.
//
// q8_0 (llama.cpp's Q8_0): P = 32, MR ≤ 3, K padded to 32. Each panel is
// ceil(K/32) blocks of 1152 bytes: 32 k steps × 32 columns of int8 (step
// major), then the 32 columns' scales as f32 (each an f16 value, as Q8_0
// stores it). Column j's block b is Q8_0's block of W[j][32b, 32b + 32):
// quantised as ggml's quantize_row_q8_0_ref does (scale = max|w| / 127
// rounded to f16, codes round(w · 127 / max|w|)), so a Q8_0 file's blocks
// come back as they were written. The kernel widens the int8 in registers
// and multiplies by the scale: the f32 weights llama.cpp's dequantiser
// gives, bit for bit, at 1.125 bytes a weight (the AVX2 tile on AVX-512
// CPUs too).
//
// Widened panels: a q8_0 or bf16 panel read by three or more row blocks (7+
// rows on the AVX2 tiles) is widened once into a thread's f32 panel that
// the f32 tile then reads for every block, instead of each block widening
// it again in registers (the same f32 weights either way). SmolLM-135M on
// the AVX2 machine, against llama.cpp in the same runs (docs/benchmarks.md,
// "q8_0 weights"): q8_0 decode at 16 sequences 0.81x -> 1.13-1.42x its
// Q8_0, prefill 0.71x -> 1.10-1.37x; bf16 0.79-0.89x -> 1.09x its F16 and
// 0.62x -> 1.02x.
//
// Threads: OpenMP over contiguous ranges of panels (each thread streams its
// own part of the weights). Safe to call concurrently from several threads.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/core/tensor.h"
#include "engine/ops/activation.h"

namespace attnserve {

// The dtype an encoder loads a matrix in for a storage: itself, but f32 for
// q8_0 (quantised when packed). Decoders load q8_0 as q8_0
// (engine/formats/decoder_weights.h).
inline DType LoadDtypeFor(DType storage) { return storage == DType::kQ8_0 ? DType::kF32 : storage; }

// Output columns per panel (f32 and bf16 alike).
inline constexpr int PanelWidth(DType /*storage*/) { return 32; }

class PackedMatrix {
 public:
  PackedMatrix() = default;
  // From W [N, K] in f32, bf16, f16 or q8_0 (rows of Q8_0 blocks); `storage`
  // kF32, kBF16 (f32 → bf16 rounds to nearest even) or kQ8_0 (quantised as
  // above; a q8_0 W's blocks are taken as they are). Caller validates shapes.
  static PackedMatrix Pack(const Tensor& w, DType storage);

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int panel_width() const { return PanelWidth(storage_); }
  int64_t panels() const { return (n_ + panel_width() - 1) / panel_width(); }
  // K rounded up to 16 (f32) or 32 (bf16: oneDNN's BA16a32b2a blocks K by
  // 16 pairs; q8_0: its blocks): the rows of one panel (the padding rows are
  // zero).
  int64_t k_padded() const {
    const int64_t block = storage_ == DType::kF32 ? 16 : 32;
    return (k_ + block - 1) / block * block;
  }
  // Bytes of one panel (q8_0: its blocks, codes and scales).
  int64_t panel_bytes() const {
    if (storage_ == DType::kQ8_0) return k_padded() / 32 * kQ8BlockBytes;
    return k_padded() * panel_width() * static_cast<int64_t>(DTypeSize(storage_));
  }
  // A q8_0 panel block: 32 × 32 int8, then 32 f32 scales.
  static constexpr int64_t kQ8BlockBytes = 32 * 32 + 32 * 4;
  DType storage() const { return storage_; }
  // Bytes held (padding included).
  int64_t bytes() const { return bytes_; }
  const void* data() const { return data_.get(); }
  void* mutable_data() { return data_.get(); }
  // Row r of W (all K values) as f32: an embedding lookup on a tied table.
  void ReadRow(int64_t r, float* out) const;

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  int64_t n_ = 0, k_ = 0, bytes_ = 0;
  DType storage_ = DType::kF32;
  std::unique_ptr<void, FreeDeleter> data_;
};

// y[M, N] (row stride ldy) = act(x[M, K] (row stride ldx) · Wᵀ + bias), the
// bias and activation (engine/ops/activation.h) applied to each output tile.
// bias may be null. Parallel over panels when the work is large enough.
void PackedGemm(const float* x, int64_t m, int64_t ldx, const PackedMatrix& w, const float* bias,
                Activation act, float* y, int64_t ldy);

// Whether PackedGemm splits this product over the OpenMP threads: from
// kParallelMinMacs multiply-adds, except that weights under
// kCacheResidentWeightBytes (they stay in one core's L2) need
// kCacheResidentParallelMinMacs.
inline constexpr int64_t kCacheResidentWeightBytes = int64_t{256} << 10;
inline constexpr int64_t kCacheResidentParallelMinMacs = int64_t{1} << 21;
bool PackedGemmRunsParallel(int64_t m, const PackedMatrix& w);

// Bytes of the threads' widened panels (one q8_0 or bf16 panel's f32 copy a
// thread, k_padded × 128 bytes, kept by the thread once it has widened one),
// over every thread of the process.
int64_t PackedGemmPanelScratchBytes();

// Which kernel PackedGemm uses on this CPU for `storage`: "avx512", "avx2"
// or "scalar" (q8_0 has no AVX-512 tile: "avx2" there).
const char* PackedGemmKernel(DType storage = DType::kF32);
// Tests: force the scalar kernel (true) or restore dispatch (false).
void PackedGemmForceScalarForTesting(bool force);
// Tests: the AVX2 tiles on an AVX-512 CPU (true) or restore (false).
void PackedGemmDisableAvx512ForTesting(bool disable);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_H_
