// Micro-kernels behind PackedGemm (internal to engine/ops). One call computes
// an MR × P tile (one panel of W: P = 32 columns; MR = 1..3 rows of x, 1..8
// for the AVX-512 f32 tile, 1..6 for the AVX-512 bf16 one) over the full K
// into `tile` (row stride P), raw accumulators without bias or activation.
#ifndef ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
#define ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

namespace attnserve::packed_gemm_internal {

// Rows per tile call, by kernel (the AVX2 tiles keep MR × 4 vectors × their
// K split within 12 registers; the AVX-512 tiles have 32: 16 accumulators for
// f32, 24 for bf16, whose loads take two registers per column half).
inline constexpr int kMaxRowsAvx2 = 3;
inline constexpr int kMaxRowsAvx512F32 = 8;
inline constexpr int kMaxRowsAvx512Bf16 = 6;
inline constexpr int kMaxRowsScalar = 6;
// Floats in the largest tile (MR × P).
inline constexpr int kMaxTileFloats = 8 * 32;

// The slice of the NEXT panel a tile call pulls into L2 while it computes:
// `lines` cache lines from `start` (none by default). PackedGemm hands each
// of a panel's row blocks one share of the next panel, so that memory keeps
// streaming while the later row blocks re-read the current panel from L2.
struct NextPanelSlice {
  const char* start = nullptr;
  int64_t lines = 0;
};

// The order SliceTrickle prefetches a slice's lines in: one cursor per
// 4 KiB page of the slice (whole pages per cursor when there are more pages
// than kMaxCursors), the cursors taking turns, each walking its pages front
// to back. Lines count from the slice's start.
class PageCursors {
 public:
  explicit PageCursors(int64_t lines) : lines_(std::max<int64_t>(lines, 0)) {
    const int64_t pages = (lines_ + kPageLines - 1) / kPageLines;
    const int64_t pages_per_cursor = pages <= kMaxCursors ? 1 : (pages + kMaxCursors - 1) / kMaxCursors;
    span_ = pages_per_cursor * kPageLines;
    cursors_ = std::max<int64_t>(1, (lines_ + span_ - 1) / span_);
  }
  // The next line, or -1 once every line has been given.
  __attribute__((always_inline)) inline int64_t Next() {
    if (given_ >= lines_) return -1;
    for (;;) {
      const int64_t line = cursor_ * span_ + index_;
      if (++cursor_ == cursors_) {
        cursor_ = 0;
        ++index_;
      }
      if (line < lines_) {  // else past the end of the last, shorter cursor
        ++given_;
        return line;
      }
    }
  }

  bool Done() const { return given_ >= lines_; }

  static constexpr int64_t kPageLines = 4096 / 64;
  // The streamer tracks a few tens of pages per core; the tile's own
  // prefetch and the demand stream use some. Caps of 8-24 measured alike.
  static constexpr int64_t kMaxCursors = 12;

 private:
  int64_t lines_;
  int64_t span_ = kPageLines, cursors_ = 1;
  int64_t cursor_ = 0, index_ = 0, given_ = 0;
};

// Issues a slice's prefetches (into L2) evenly over a kernel's `steps` loop
// steps, in PageCursors order: several 4 KiB pages at once, each front to
// back, the pattern the L2 hardware streamer follows (per page, never across
// one), so that it runs ahead on every one of them. Walking the slice front
// to back with one cursor gave it one page at a time, and the 16-row
// products' memory and arithmetic barely overlapped (our reading: software
// prefetches wait in the core's few fill buffers, the streamer's do not).
// SmolLM-135M decode (decoder_bench, 2026-12-04, A/B in the same minutes):
// f32 16 sequences 587-609 -> 744-770 tokens/s, 8 sequences 376-379 ->
// 436-438, 4 sequences 218 -> 235-236; bf16 weights 8 sequences 674-693 ->
// 726-729, 16 sequences 811-831 -> 866-893.
class SliceTrickle {
 public:
  SliceTrickle(NextPanelSlice slice, int64_t steps)
      : p_(slice.start), order_(slice.lines),
        per_step_(steps > 0 ? (slice.lines + steps - 1) / steps : 0) {}
  __attribute__((always_inline)) inline void Step() {
    for (int64_t q = 0; q < per_step_ && !order_.Done(); ++q) {
      _mm_prefetch(p_ + order_.Next() * 64, _MM_HINT_T1);
    }
  }

 private:
  const char* p_;
  PageCursors order_;
  int64_t per_step_;
};

using TileKernel = void (*)(const float* x, int64_t ldx, int rows, const void* panel, int64_t k,
                            float* tile, NextPanelSlice next);

// Available only when the CPU has AVX2 + FMA (checked by the caller).
void TileAvx2F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
void TileAvx2Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
// Q8_0 panels; also the kernel AVX-512 CPUs use for them.
void TileAvx2Q8(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                NextPanelSlice next);
// A Q8_0 panel's first k steps as an f32 panel (out: k × 32 floats,
// 32-byte aligned): the weights the Q8_0 tile computes with.
void DequantizeQ8PanelAvx2(const void* panel, int64_t k, float* out);
// A bf16 panel's first k steps as an f32 panel, likewise.
void WidenBf16PanelAvx2(const void* panel, int64_t k, float* out);
// Available only when the CPU has AVX-512F (checked by the caller).
void TileAvx512F32(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);
void TileAvx512Bf16(const float* x, int64_t ldx, int rows, const void* panel, int64_t k, float* tile,
                   NextPanelSlice next);

}  // namespace attnserve::packed_gemm_internal

#endif  // ATTNSERVE_ENGINE_OPS_PACKED_GEMM_KERNELS_H_
