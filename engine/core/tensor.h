// Tensor: the engine's one owning buffer type. Contiguous, row-major,
// 64-byte aligned (so AVX loads and oneDNN never see a misaligned base), with
// a shape and a dtype. Move-only: a deep copy is an explicit Copy() so that
// costs stay visible. Not thread-safe for concurrent mutation; concurrent
// reads of a const Tensor are fine.
#ifndef ATTNSERVE_ENGINE_CORE_TENSOR_H_
#define ATTNSERVE_ENGINE_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnserve {

// kQ8_0 is llama.cpp's Q8_0 (engine/core/q8_0.h): a Tensor of it holds a
// weight matrix's rows as Q8_0 blocks, as a GGUF file does (its last
// dimension a multiple of 32), on its way to packed panels
// (engine/ops/packed_gemm.h); nothing computes on it as a Tensor.
enum class DType : uint8_t { kF32, kBF16, kF16, kQ8_0 };

// Bytes per element: 4, 2, 2 (kQ8_0: 1, its scales apart).
size_t DTypeSize(DType dtype);
// Bytes of n elements (kQ8_0: n / 32 blocks of 34 bytes; n a multiple of 32).
size_t DTypeBytes(DType dtype, int64_t n);
// Whether a tensor of `shape` can be held as kQ8_0: its rows (last
// dimension) are whole blocks of 32.
bool IsQ8_0RowShape(const std::vector<int64_t>& shape);
// "f32", "bf16", "f16", "q8_0".
const char* DTypeName(DType dtype);

// Alignment of every Tensor buffer, in bytes.
inline constexpr size_t kTensorAlignment = 64;

class Tensor {
 public:
  Tensor() = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Uninitialised contents. Every dimension must be >= 0, and a kQ8_0
  // tensor's last a multiple of 32 (CHECK: shapes come from code, not from
  // request data; loaders validate before calling).
  static Tensor Empty(std::vector<int64_t> shape, DType dtype = DType::kF32);
  // Zero-filled.
  static Tensor Zeros(std::vector<int64_t> shape, DType dtype = DType::kF32);

  const std::vector<int64_t>& shape() const { return shape_; }
  // Dimension i; negative i counts from the end (-1 is the last).
  int64_t dim(int i) const;
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  size_t bytes() const { return DTypeBytes(dtype_, numel_); }
  // True for a default-constructed tensor (no buffer). A tensor with a zero
  // dimension has a shape but no elements and is also empty().
  bool empty() const { return numel_ == 0; }

  // Typed access. f32() requires dtype kF32; u16() requires kBF16 or kF16
  // (DCHECK: a wrong call is a programmer error).
  float* f32();
  const float* f32() const;
  uint16_t* u16();
  const uint16_t* u16() const;
  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }

  // A deep copy with the same shape and dtype.
  Tensor Copy() const;
  // Changes the shape in place; numel must not change (CHECK).
  void Reshape(std::vector<int64_t> shape);

  // "[2, 3, 4] f32", for error messages.
  std::string DebugString() const;

 private:
  struct AlignedFree {
    void operator()(void* p) const;
  };

  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
  std::unique_ptr<void, AlignedFree> data_;
};

// Product of dims; CHECKs every dim >= 0.
int64_t ShapeNumel(const std::vector<int64_t>& shape);
// "[2, 3, 4]".
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_TENSOR_H_
