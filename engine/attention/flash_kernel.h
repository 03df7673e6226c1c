// Internal to engine/attention: the tiled online-softmax (FlashAttention-
// style) kernel shared by dense SDPA and paged decode. One *job* is a set of
// query rows that read the same KV head (for GQA, the rows of every query
// head in the group, so each K/V tile is loaded once for the whole group).
// Keys are consumed in tiles of at most kKeyTile; the [rows, Nk] score matrix
// never exists, only a [rows, kKeyTile] tile of it.
#ifndef ATTNSERVE_ENGINE_ATTENTION_FLASH_KERNEL_H_
#define ATTNSERVE_ENGINE_ATTENTION_FLASH_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/attention/kv_layout.h"
#include "engine/core/tensor.h"

namespace attnserve::attention_internal {

inline constexpr int kKeyTile = 64;

// One query row of a job. Masks are pre-offset to this row (nullable).
struct FlashRow {
  const float* q = nullptr;           // d floats
  float* out = nullptr;               // d floats
  int key_limit = 0;                  // keys >= key_limit are blocked (causal, lengths, window)
  int key_begin = 0;                  // keys < key_begin are blocked (window)
  const uint8_t* allow_row = nullptr; // [Nk] allow mask row
  const uint8_t* key_allow = nullptr; // [Nk] key allow row (padding)
  const float* add_row = nullptr;     // [Nk] additive mask row
};

// Where a job's K/V rows come from: one contiguous head, or a paged sequence.
struct KvSource {
  DType dtype = DType::kF32;
  // Contiguous: K row j at k + j * k_row_stride (elements); same for V.
  const std::byte* k = nullptr;
  const std::byte* v = nullptr;
  int64_t k_row_stride = 0;
  int64_t v_row_stride = 0;
  // Paged (used when layout != nullptr): block table of one sequence.
  const KvLayout* layout = nullptr;
  const std::byte* layer_base = nullptr;
  const int32_t* block_table = nullptr;
  int kv_head = 0;
};

// Per-thread working memory, sized by rows and d only (never by Nk).
class FlashScratch {
 public:
  void Reserve(int max_rows, int head_dim);
  int64_t bytes() const { return bytes_; }
  float* qp() { return buf_.get(); }
  float* s() { return qp() + q_elems_; }
  float* kt() { return s() + s_elems_; }
  float* vf() { return kt() + kt_elems_; }
  float* o() { return vf() + vf_elems_; }
  float* m() { return o() + o_elems_; }
  float* l() { return m() + ml_elems_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> buf_;  // 64-byte aligned
  int64_t capacity_ = 0;              // floats
  int64_t q_elems_ = 0, s_elems_ = 0, kt_elems_ = 0, vf_elems_ = 0, o_elems_ = 0, ml_elems_ = 0;
  int64_t bytes_ = 0;
};

// Runs one job: every row attends to keys [key_begin, key_limit) of `src` with
// scores scaled by `scale`. Rows whose keys are all blocked get zeros.
// softcap > 0 (Gemma 2): each scaled score s becomes softcap * tanh(s /
// softcap) before the masks; such jobs take the tiled path (the decode and
// row-block kernels have no tanh).
void RunFlashJob(const FlashRow* rows, int num_rows, const KvSource& src, int head_dim,
                 float scale, FlashScratch& scratch, float softcap = 0.0f);

// Which micro-kernels RunFlashJob's tiled path uses for its Q·K and P·V
// products ("avx512", "avx2" or "scalar"); for logs/bench.
const char* FlashKernelIsa();
// True when the AVX2+FMA micro-kernels are in use (CPU has them, not forced off).
bool Avx2KernelsEnabled();
// Forces the scalar micro-kernels (tests compare both). Not thread-safe: call
// before any attention runs.
void ForceScalarFlashKernel(bool force);
// Uses the AVX2 products on an AVX-512 CPU (tests cover both; the benchmark
// keeps the AVX2 numbers). Not thread-safe either.
void DisableAvx512FlashKernel(bool disable);

}  // namespace attnserve::attention_internal

#endif  // ATTNSERVE_ENGINE_ATTENTION_FLASH_KERNEL_H_
