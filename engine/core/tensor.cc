#include "engine/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/log/check.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/q8_0.h"

namespace attnserve {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kQ8_0: return 1;
  }
  return 0;
}

size_t DTypeBytes(DType dtype, int64_t n) {
  if (dtype == DType::kQ8_0) return static_cast<size_t>(n / kQ8_0BlockValues) * kQ8_0BlockBytes;
  return static_cast<size_t>(n) * DTypeSize(dtype);
}

bool IsQ8_0RowShape(const std::vector<int64_t>& shape) {
  return !shape.empty() && shape.back() % kQ8_0BlockValues == 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kQ8_0: return "q8_0";
  }
  return "unknown";
}

int64_t ShapeNumel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    CHECK_GE(d, 0) << "negative dimension in shape " << ShapeString(shape);
    n *= d;
  }
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

void Tensor::AlignedFree::operator()(void* p) const { std::free(p); }

Tensor Tensor::Empty(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.numel_ = ShapeNumel(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  CHECK(dtype != DType::kQ8_0 || IsQ8_0RowShape(t.shape_))
      << "a q8_0 tensor's last dimension must be a multiple of 32, got " << ShapeString(t.shape_);
  size_t bytes = t.bytes();
  if (bytes > 0) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    void* p = std::aligned_alloc(kTensorAlignment, rounded);
    CHECK(p != nullptr) << "out of memory allocating " << rounded << " bytes";
    t.data_.reset(p);
  }
  return t;
}

Tensor Tensor::Zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t = Empty(std::move(shape), dtype);
  if (t.bytes() > 0) std::memset(t.raw(), 0, t.bytes());
  return t;
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  if (i < 0) i += r;
  CHECK(i >= 0 && i < r) << "dim " << i << " out of range for rank " << r;
  return shape_[i];
}

float* Tensor::f32() {
  DCHECK(dtype_ == DType::kF32) << "f32() on a " << DTypeName(dtype_) << " tensor";
  return static_cast<float*>(data_.get());
}
const float* Tensor::f32() const {
  DCHECK(dtype_ == DType::kF32) << "f32() on a " << DTypeName(dtype_) << " tensor";
  return static_cast<const float*>(data_.get());
}
uint16_t* Tensor::u16() {
  DCHECK(dtype_ == DType::kBF16 || dtype_ == DType::kF16)
      << "u16() on a " << DTypeName(dtype_) << " tensor";
  return static_cast<uint16_t*>(data_.get());
}
const uint16_t* Tensor::u16() const {
  DCHECK(dtype_ == DType::kBF16 || dtype_ == DType::kF16)
      << "u16() on a " << DTypeName(dtype_) << " tensor";
  return static_cast<const uint16_t*>(data_.get());
}

Tensor Tensor::Copy() const {
  Tensor t = Empty(shape_, dtype_);
  if (bytes() > 0) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

void Tensor::Reshape(std::vector<int64_t> shape) {
  CHECK_EQ(ShapeNumel(shape), numel_)
      << "Reshape " << ShapeString(shape_) << " -> " << ShapeString(shape);
  shape_ = std::move(shape);
}

std::string Tensor::DebugString() const {
  return absl::StrCat(ShapeString(shape_), " ", DTypeName(dtype_));
}

}  // namespace attnserve
