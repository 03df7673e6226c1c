#include "engine/core/tensor.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_STREQ(DTypeName(DType::kF32), "f32");
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_STREQ(DTypeName(DType::kF16), "f16");
}

TEST(TensorTest, DefaultIsEmpty) {
  Tensor t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.raw(), nullptr);
}

TEST(TensorTest, ZerosShapeAlignmentAndContents) {
  Tensor t = Tensor::Zeros({2, 3, 5});
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(t.bytes(), 120u);
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.f32()[i], 0.0f);
}

TEST(TensorTest, Bf16Bytes) {
  Tensor t = Tensor::Zeros({7}, DType::kBF16);
  EXPECT_EQ(t.bytes(), 14u);
  EXPECT_EQ(t.dtype(), DType::kBF16);
  t.u16()[6] = 0x3f80;
  EXPECT_EQ(t.u16()[6], 0x3f80);
}

TEST(TensorTest, CopyIsDeepAndMoveTransfers) {
  Tensor a = Tensor::Empty({4});
  for (int i = 0; i < 4; ++i) a.f32()[i] = static_cast<float>(i);
  Tensor b = a.Copy();
  EXPECT_NE(a.raw(), b.raw());
  b.f32()[0] = 42.0f;
  EXPECT_EQ(a.f32()[0], 0.0f);
  EXPECT_EQ(b.f32()[3], 3.0f);
  const void* p = b.raw();
  Tensor c = std::move(b);
  EXPECT_EQ(c.raw(), p);
  EXPECT_EQ(c.shape(), std::vector<int64_t>({4}));
}

TEST(TensorTest, ReshapeKeepsData) {
  Tensor a = Tensor::Empty({2, 6});
  for (int i = 0; i < 12; ++i) a.f32()[i] = static_cast<float>(i);
  a.Reshape({3, 4});
  EXPECT_EQ(a.dim(0), 3);
  EXPECT_EQ(a.dim(1), 4);
  EXPECT_EQ(a.f32()[11], 11.0f);
  EXPECT_EQ(a.DebugString(), "[3, 4] f32");
}

TEST(TensorDeathTest, ReshapeWrongNumelIsProgrammerError) {
  Tensor a = Tensor::Empty({2, 6});
  EXPECT_DEATH(a.Reshape({5}), "Reshape");
}

TEST(TensorTest, ZeroDimIsEmptyButShaped) {
  Tensor t = Tensor::Zeros({0, 8});
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.rank(), 2);
  Tensor c = t.Copy();
  EXPECT_EQ(c.dim(1), 8);
}

}  // namespace
}  // namespace attnserve
