// The paged KV-cache layout shared by the attention kernels (readers) and the
// decoder runtime's block pool in engine/kv/ (writer).
//
// One block holds `block_size` consecutive token positions of ONE layer:
//   K part: [num_kv_heads, block_size, head_dim], then
//   V part: [num_kv_heads, block_size, head_dim], dtype f32 or bf16.
// A layer's cache is an array of blocks; block b of a layer starts at
// layer_base + b * BlockBytes(). Position p of a sequence lives in block
// block_table[p / block_size], row p % block_size. Attention reads blocks in
// place through the block table: nothing is gathered or copied per step.
#ifndef ATTNSERVE_ENGINE_ATTENTION_KV_LAYOUT_H_
#define ATTNSERVE_ENGINE_ATTENTION_KV_LAYOUT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/tensor.h"

namespace attnserve {

struct KvLayout {
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size = 0;
  DType dtype = DType::kF32;  // kF32 or kBF16

  // Elements of one block (K and V parts together).
  int64_t BlockElems() const {
    return int64_t{2} * num_kv_heads * block_size * head_dim;
  }
  int64_t BlockBytes() const { return BlockElems() * static_cast<int64_t>(DTypeSize(dtype)); }
  // Element offset, inside a block, of K row `row` of KV head `kv_head`.
  int64_t KOffset(int kv_head, int row) const {
    return (int64_t{kv_head} * block_size + row) * head_dim;
  }
  // Element offset, inside a block, of V row `row` of KV head `kv_head`.
  int64_t VOffset(int kv_head, int row) const {
    return int64_t{num_kv_heads} * block_size * head_dim + KOffset(kv_head, row);
  }

  absl::Status Validate() const {
    if (num_kv_heads <= 0 || head_dim <= 0 || block_size <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "KvLayout: num_kv_heads, head_dim and block_size must be > 0, got ", num_kv_heads, ", ",
          head_dim, ", ", block_size));
    }
    if (dtype != DType::kF32 && dtype != DType::kBF16) {
      return absl::InvalidArgumentError(
          absl::StrCat("KvLayout: dtype must be f32 or bf16, got ", DTypeName(dtype)));
    }
    return absl::OkStatus();
  }
};

// What attention reads for one sequence in one layer: its blocks in position
// order, and how many positions [0, num_tokens) are valid.
struct PagedKvSequence {
  const int32_t* block_table = nullptr;
  int num_blocks = 0;
  int num_tokens = 0;
};

// One layer's block array.
struct PagedKvView {
  const KvLayout* layout = nullptr;
  const std::byte* layer_base = nullptr;
  // Blocks in the layer's array, for bounds-checking block tables; 0 = unknown
  // (tables are then trusted).
  int32_t num_pool_blocks = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_KV_LAYOUT_H_
