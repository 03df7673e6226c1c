#include "engine/ops/packed_gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/log/check.h"
#include "engine/core/cpu_features.h"
#include "engine/core/half.h"
#include "engine/core/large_alloc.h"
#include "engine/core/q8_0.h"
#include "engine/core/parallel.h"
#include "engine/ops/activation.h"
#include "engine/ops/packed_gemm_kernels.h"

namespace attnserve {
namespace {

using packed_gemm_internal::kMaxRowsAvx2;
using packed_gemm_internal::kMaxRowsAvx512Bf16;
using packed_gemm_internal::kMaxRowsAvx512F32;
using packed_gemm_internal::kMaxRowsScalar;
using packed_gemm_internal::kMaxTileFloats;
using packed_gemm_internal::TileKernel;

std::atomic<bool> force_scalar{false};
std::atomic<int64_t> panel_scratch_bytes{0};  // WidenedPanelScratch's buffers, all threads
std::atomic<bool> avx512_off{false};

// Position of (k step kk, column j) inside a bf16 panel: k steps in pairs,
// each pair 32 columns × 2 steps (see packed_gemm.h).
inline int64_t Bf16Index(int64_t kk, int j) { return (kk / 2) * 64 + 2 * j + (kk & 1); }

float SourceAt(const Tensor& w, int64_t i) {
  switch (w.dtype()) {
    case DType::kF32: return w.f32()[i];
    case DType::kBF16: return Bf16ToFloat(w.u16()[i]);
    case DType::kF16: return F16ToFloat(w.u16()[i]);
    case DType::kQ8_0: {  // rows of Q8_0 blocks (engine/core/q8_0.h)
      const auto* block = static_cast<const std::byte*>(w.raw()) + i / kQ8_0BlockValues * kQ8_0BlockBytes;
      uint16_t d;
      std::memcpy(&d, block, sizeof(d));
      return F16ToFloat(d) * static_cast<float>(static_cast<int8_t>(block[2 + i % kQ8_0BlockValues]));
    }
  }
  return 0.0f;
}

// Column j of a q8_0 panel block: a Q8_0 block's f16 scale and 32 codes.
void PutQ8Column(uint16_t d, const int8_t* codes, int j, char* block) {
  const float scale = F16ToFloat(d);
  std::memcpy(block + 32 * 32 + 4 * j, &scale, sizeof(float));
  for (int t = 0; t < kQ8_0BlockValues; ++t) block[t * 32 + j] = static_cast<char>(codes[t]);
}

// Quantises `n` (≤ 32) values into column j of a q8_0 panel block, as
// ggml's quantize_row_q8_0_ref (the padding steps stay zero).
void QuantizeQ8Column(const float* v, int n, int j, char* block) {
  int8_t codes[kQ8_0BlockValues];
  const uint16_t d = QuantizeQ8_0Block(v, n, codes);
  PutQ8Column(d, codes, j, block);
}

// Q8_0: the 32 weights of step t (0..31) of a panel block, column j.
inline float Q8At(const char* block, int t, int j) {
  float scale;
  std::memcpy(&scale, block + 32 * 32 + 4 * j, sizeof(float));
  return static_cast<float>(static_cast<signed char>(block[t * 32 + j])) * scale;
}

void DequantizeQ8PanelScalar(const void* panel, int64_t k, float* out) {
  const auto* base = static_cast<const char*>(panel);
  for (int64_t kk = 0; kk < k; ++kk) {
    const char* block = base + (kk / 32) * PackedMatrix::kQ8BlockBytes;
    for (int j = 0; j < 32; ++j) out[kk * 32 + j] = Q8At(block, static_cast<int>(kk % 32), j);
  }
}

void WidenBf16PanelScalar(const void* panel, int64_t k, float* out) {
  const auto* p = static_cast<const uint16_t*>(panel);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int j = 0; j < 32; ++j) out[kk * 32 + j] = Bf16ToFloat(p[Bf16Index(kk, j)]);
  }
}

// A thread's f32 copy of one q8_0 or bf16 panel (k_padded × 32 floats: 128
// KiB at K = 1024), kept between calls: PackedGemm needs it on every call
// with three or more row blocks a panel, and allocating it each time would
// cost more than the copy. Freed when the thread ends.
float* WidenedPanelScratch(int64_t floats) {
  struct Buffer {
    float* p = nullptr;
    int64_t n = 0, bytes = 0;
    ~Buffer() {
      std::free(p);
      panel_scratch_bytes -= bytes;
    }
  };
  thread_local Buffer buffer;
  if (buffer.n < floats) {
    std::free(buffer.p);
    const int64_t bytes = (floats * 4 + 63) / 64 * 64;
    buffer.p = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
    CHECK(buffer.p != nullptr) << "out of memory for a " << floats << "-float widened panel";
    panel_scratch_bytes += bytes - buffer.bytes;
    buffer.n = floats;
    buffer.bytes = bytes;
  }
  return buffer.p;
}

void TileScalarQ8(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                  packed_gemm_internal::NextPanelSlice /*next*/) {
  constexpr int kWidth = 32;
  const auto* base = static_cast<const char*>(panel);
  for (int i = 0; i < rows; ++i) {
    float acc[kWidth] = {};
    for (int64_t kk = 0; kk < k; ++kk) {
      const float xv = x[i * ldx + kk];
      const char* block = base + (kk / 32) * PackedMatrix::kQ8BlockBytes;
      for (int j = 0; j < kWidth; ++j) {
        const float wv = Q8At(block, static_cast<int>(kk % 32), j);
        acc[j] += xv * wv;
      }
    }
    std::memcpy(tile + i * kWidth, acc, sizeof(acc));
  }
}

template <bool kBf16>
void TileScalar(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                packed_gemm_internal::NextPanelSlice /*next*/) {
  constexpr int kWidth = 32;
  for (int i = 0; i < rows; ++i) {
    float acc[kWidth] = {};
    for (int64_t kk = 0; kk < k; ++kk) {
      const float xv = x[i * ldx + kk];
      for (int j = 0; j < kWidth; ++j) {
        float wv;
        if constexpr (kBf16) {
          wv = Bf16ToFloat(static_cast<const uint16_t*>(panel)[Bf16Index(kk, j)]);
        } else {
          wv = static_cast<const float*>(panel)[kk * 32 + j];
        }
        acc[j] += xv * wv;
      }
    }
    std::memcpy(tile + i * kWidth, acc, sizeof(acc));
  }
}

// Tile (rows × width) → y columns [col0, col0 + cols), with bias and
// activation (vectorised with the AVX2 tile kernels, scalar with the scalar
// ones, so forcing the scalar kernel tests the whole scalar path).
void Store(const float* tile, int width, int rows, int cols, int64_t col0, const float* bias,
           Activation act, bool simd, float* y, int64_t ldy) {
  for (int i = 0; i < rows; ++i) {
    float* out = y + i * ldy + col0;
    const float* t = tile + i * width;
    if (bias != nullptr) {
      for (int j = 0; j < cols; ++j) out[j] = t[j] + bias[col0 + j];
    } else {
      std::memcpy(out, t, sizeof(float) * cols);
    }
    if (act == Activation::kNone) continue;
    if (simd) {
      ApplyActivation(act, out, cols);
    } else {
      ApplyActivationScalar(act, out, cols);
    }
  }
}

struct PickedKernel {
  TileKernel tile;
  int max_rows;  // MR
  bool simd;
};

PickedKernel PickKernel(DType storage) {
  const bool bf16 = storage == DType::kBF16;
  if (storage == DType::kQ8_0) {
    if (!force_scalar.load(std::memory_order_relaxed) && CpuHasAvx2Fma()) {
      return {packed_gemm_internal::TileAvx2Q8, kMaxRowsAvx2, true};
    }
    return {TileScalarQ8, kMaxRowsScalar, false};
  }
  if (!force_scalar.load(std::memory_order_relaxed) && CpuHasAvx2Fma()) {
    if (CpuHasAvx512F() && !avx512_off.load(std::memory_order_relaxed)) {
      return bf16 ? PickedKernel{packed_gemm_internal::TileAvx512Bf16, kMaxRowsAvx512Bf16, true}
                  : PickedKernel{packed_gemm_internal::TileAvx512F32, kMaxRowsAvx512F32, true};
    }
    return {bf16 ? packed_gemm_internal::TileAvx2Bf16 : packed_gemm_internal::TileAvx2F32, kMaxRowsAvx2, true};
  }
  return {bf16 ? TileScalar<true> : TileScalar<false>, kMaxRowsScalar, false};
}

// Rows of x processed per pass over a thread's panels: x rows stay in L2
// (~192 KiB) while each weight panel is reused by every MR block of them.
int64_t RowChunk(int64_t k, int max_rows) {
  const int64_t rows = (192 * 1024) / (k * static_cast<int64_t>(sizeof(float)));
  return std::max<int64_t>(max_rows, rows / max_rows * max_rows);
}

}  // namespace

bool PackedGemmRunsParallel(int64_t m, const PackedMatrix& w) {
  const int64_t macs = m * w.n() * w.k();
  if (macs < kParallelMinMacs) return false;
  // Weights that fit in one core's L2 and little work: one core does it in
  // tens of microseconds, and a second thread saves at most half of that
  // while risking the join waiting on a descheduled thread on a busy machine
  // (stories260K's LM head at 16 sequences: the server's step took 628 µs
  // against the engine's 324 µs alone, docs/benchmarks.md).
  return w.bytes() >= kCacheResidentWeightBytes || macs >= kCacheResidentParallelMinMacs;
}

void PackedMatrix::FreeDeleter::operator()(void* p) const { std::free(p); }

PackedMatrix PackedMatrix::Pack(const Tensor& w, DType storage) {
  CHECK(w.rank() == 2) << "PackedMatrix::Pack needs [N, K]";
  CHECK(storage == DType::kF32 || storage == DType::kBF16 || storage == DType::kQ8_0)
      << "storage f32, bf16 or q8_0";
  PackedMatrix p;
  p.n_ = w.dim(0);
  p.k_ = w.dim(1);
  p.storage_ = storage;
  const int width = p.panel_width();
  const int64_t elems = p.panels() * p.k_padded() * width;
  const int64_t raw = p.panels() * p.panel_bytes();
  p.bytes_ = (raw + 63) / 64 * 64;
  // Huge pages: decode streams every panel once per step (large_alloc.h).
  void* mem = AllocateLarge(static_cast<size_t>(p.bytes_));
  CHECK(mem != nullptr) << "out of memory packing a " << p.n_ << "x" << p.k_ << " matrix";
  p.data_.reset(mem);
  std::memset(mem, 0, static_cast<size_t>(p.bytes_));
  const int64_t n = p.n_, k = p.k_, kp = p.k_padded(), panels = p.panels();
  if (storage == DType::kQ8_0) {
    const int64_t panel_bytes = p.panel_bytes();
#pragma omp parallel for schedule(static) if (elems >= (1 << 20))
    for (int64_t pi = 0; pi < panels; ++pi) {
      float v[32];
      for (int j = 0; j < width && pi * width + j < n; ++j) {
        const int64_t col = pi * width + j;
        for (int64_t k0 = 0; k0 < k; k0 += 32) {
          char* block = static_cast<char*>(mem) + pi * panel_bytes + (k0 / 32) * kQ8BlockBytes;
          if (w.dtype() == DType::kQ8_0) {
            // Already Q8_0 (a row's blocks, K a multiple of 32): its blocks
            // as they are.
            const auto* src = static_cast<const std::byte*>(w.raw()) + (col * k + k0) / 32 * kQ8_0BlockBytes;
            uint16_t d;
            std::memcpy(&d, src, sizeof(d));
            PutQ8Column(d, reinterpret_cast<const int8_t*>(src + 2), j, block);
            continue;
          }
          const int steps = static_cast<int>(std::min<int64_t>(32, k - k0));
          for (int t = 0; t < steps; ++t) v[t] = SourceAt(w, col * k + k0 + t);
          QuantizeQ8Column(v, steps, j, block);
        }
      }
    }
    return p;
  }
#pragma omp parallel for schedule(static) if (elems >= (1 << 20))
  for (int64_t pi = 0; pi < panels; ++pi) {
    for (int j = 0; j < width; ++j) {
      const int64_t col = pi * width + j;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t panel_start = pi * kp * width;
        if (storage == DType::kF32) {
          static_cast<float*>(mem)[panel_start + kk * width + j] = col < n ? SourceAt(w, col * k + kk) : 0.0f;
        } else {
          uint16_t v = 0;
          if (col < n) v = w.dtype() == DType::kBF16 ? w.u16()[col * k + kk]
                                                     : FloatToBf16(SourceAt(w, col * k + kk));
          static_cast<uint16_t*>(mem)[panel_start + Bf16Index(kk, j)] = v;
        }
      }
    }
  }
  return p;
}

void PackedMatrix::ReadRow(int64_t r, float* out) const {
  const int width = panel_width();
  const int64_t pi = r / width;
  const int j = static_cast<int>(r % width);
  if (storage_ == DType::kF32) {
    const float* src = static_cast<const float*>(data_.get()) + pi * k_padded() * width + j;
    for (int64_t kk = 0; kk < k_; ++kk) out[kk] = src[kk * width];
  } else if (storage_ == DType::kQ8_0) {
    const char* panel = static_cast<const char*>(data_.get()) + pi * panel_bytes();
    for (int64_t kk = 0; kk < k_; ++kk) {
      out[kk] = Q8At(panel + (kk / 32) * kQ8BlockBytes, static_cast<int>(kk % 32), j);
    }
  } else {
    const uint16_t* panel = static_cast<const uint16_t*>(data_.get()) + pi * k_padded() * width;
    for (int64_t kk = 0; kk < k_; ++kk) out[kk] = Bf16ToFloat(panel[Bf16Index(kk, j)]);
  }
}

void PackedGemm(const float* x, int64_t m, int64_t ldx, const PackedMatrix& w, const float* bias,
                Activation act, float* y, int64_t ldy) {
  if (m <= 0) return;
  const PickedKernel picked = PickKernel(w.storage());
  // q8_0 or bf16 with three or more row blocks a panel: the panel is
  // widened once into an f32 panel that the f32 tile then reads for every
  // block, instead of each block widening it again (the same f32 weights
  // either way).
  const bool q8 = w.storage() == DType::kQ8_0;
  const bool widens = q8 || w.storage() == DType::kBF16;
  const PickedKernel f32_picked = widens ? PickKernel(DType::kF32) : picked;
  void (*const widen)(const void*, int64_t, float*) =
      q8 ? (picked.simd ? packed_gemm_internal::DequantizeQ8PanelAvx2 : DequantizeQ8PanelScalar)
         : (picked.simd ? packed_gemm_internal::WidenBf16PanelAvx2 : WidenBf16PanelScalar);
  const TileKernel kernel = picked.tile;
  const bool simd = picked.simd;
  const int64_t k = w.k(), n = w.n(), panels = w.panels();
  const int width = w.panel_width();
  const int max_rows = picked.max_rows;
  const int64_t panel_bytes = w.panel_bytes();
  const int64_t panel_lines = panel_bytes / 64;
  const auto* base = static_cast<const std::byte*>(w.data());
  const int64_t chunk = RowChunk(k, max_rows);
  const bool parallel = PackedGemmRunsParallel(m, w) && panels > 1;
  ParallelRegion(parallel, [&](int tid, int threads) {
    const int64_t p0 = panels * tid / threads, p1 = panels * (tid + 1) / threads;
    alignas(64) float tile[kMaxTileFloats];
    for (int64_t r0 = 0; r0 < m; r0 += chunk) {
      const int64_t r_end = std::min(m, r0 + chunk);
      // Row blocks of equal size, at least two from 4 rows on (SIMD
      // kernels). The first block brings a panel in from memory; the others
      // re-read it from L2 and each pulls a share of the NEXT panel
      // meanwhile, so memory never idles. SmolLM-135M f32 decode
      // (decoder_bench, 2026-12-03): 16 sequences (two 8-row blocks)
      // 362-383 -> 438-445 tokens/s with the pull; 8 sequences split in two
      // 4-row blocks 239-242 -> 268-276, 4 sequences 136 -> 145-157.
      // Worked out once per row chunk, not per panel: three integer
      // divisions per panel cost as much as a one-row panel's multiply-adds
      // on a model as small as stories260K (64 x 16 per panel).
      const int64_t chunk_rows = r_end - r0;
      int64_t blocks = (chunk_rows + max_rows - 1) / max_rows;
      if (simd && chunk_rows >= 4) blocks = std::max<int64_t>(blocks, 2);
      const int64_t block_rows = (chunk_rows + blocks - 1) / blocks;
      blocks = (chunk_rows + block_rows - 1) / block_rows;  // what the loop below runs
      for (int64_t pi = p0; pi < p1; ++pi) {
        const void* panel = base + pi * panel_bytes;
        const int cols = static_cast<int>(std::min<int64_t>(width, n - pi * width));
        const bool pull_next = blocks > 1 && pi + 1 < p1;
        TileKernel panel_kernel = kernel;
        if (widens && blocks > 2) {
          float* f32_panel = WidenedPanelScratch(w.k_padded() * width);
          widen(panel, k, f32_panel);
          panel = f32_panel;
          panel_kernel = f32_picked.tile;
        }
        for (int64_t r = r0, b = 0; r < r_end; r += block_rows, ++b) {
          const int rows = static_cast<int>(std::min<int64_t>(block_rows, r_end - r));
          packed_gemm_internal::NextPanelSlice next;
          if (pull_next) {
            const int64_t l0 = panel_lines * b / blocks, l1 = panel_lines * (b + 1) / blocks;
            next.start = reinterpret_cast<const char*>(base + (pi + 1) * panel_bytes) + l0 * 64;
            next.lines = l1 - l0;
          }
          panel_kernel(x + r * ldx, ldx, rows, panel, k, tile, next);
          Store(tile, width, rows, cols, pi * width, bias, act, simd, y + r * ldy, ldy);
        }
      }
    }
  });
}

int64_t PackedGemmPanelScratchBytes() { return panel_scratch_bytes.load(); }

const char* PackedGemmKernel(DType storage) {
  if (force_scalar.load(std::memory_order_relaxed) || !CpuHasAvx2Fma()) return "scalar";
  if (storage == DType::kQ8_0) return "avx2";
  return CpuHasAvx512F() && !avx512_off.load(std::memory_order_relaxed) ? "avx512" : "avx2";
}

void PackedGemmForceScalarForTesting(bool force) { force_scalar.store(force); }

void PackedGemmDisableAvx512ForTesting(bool disable) { avx512_off.store(disable); }

}  // namespace attnserve
