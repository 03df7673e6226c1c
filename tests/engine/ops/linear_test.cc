#include "engine/ops/linear.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "engine/core/cpu_features.h"
#include "engine/core/half.h"
#include "engine/core/tensor.h"
#include "engine/ops/fixed_matmul.h"
#include "engine/ops/linear_kernels.h"
#include "engine/ops/packed_gemm.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

Tensor RandomTensor(std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor t = Tensor::Empty(std::move(shape));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = u(rng);
  return t;
}

double Act(double v, Activation act) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case Activation::kSilu: return v / (1 + std::exp(-v));
    case Activation::kRelu: return v > 0 ? v : 0;
  }
  return v;
}

// y = act(x Wᵀ + b), double accumulation.
std::vector<float> Reference(const float* x, int64_t m, const Tensor& w, const Tensor* b,
                             Activation act) {
  int64_t n = w.dim(0), k = w.dim(1);
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = b ? b->f32()[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) acc += double(x[i * k + p]) * w.f32()[j * k + p];
      y[i * n + j] = static_cast<float>(Act(acc, act));
    }
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

struct Case {
  int64_t m, k, n;
  bool bias;
  Activation act;
};

TEST(LinearTest, MatchesReferenceF32) {
  std::mt19937 rng(1);
  for (const Case& c : {Case{1, 16, 8, true, Activation::kNone}, Case{7, 33, 65, false, Activation::kNone},
                        Case{64, 128, 384, true, Activation::kNone},
                        Case{5, 64, 96, true, Activation::kGeluErf},
                        Case{5, 64, 96, true, Activation::kGeluTanh},
                        Case{3, 40, 24, false, Activation::kSilu},
                        Case{3, 40, 24, true, Activation::kRelu}}) {
    Tensor w = RandomTensor({c.n, c.k}, rng);
    Tensor b = RandomTensor({c.n}, rng);
    auto lin = Linear::Create(w, c.bias ? &b : nullptr, DType::kF32, c.act);
    ASSERT_TRUE(lin.ok()) << lin.status();
    EXPECT_EQ(lin->in_features(), c.k);
    EXPECT_EQ(lin->out_features(), c.n);
    EXPECT_GE(lin->weight_bytes(), c.k * c.n * 4);
    // The same Linear serves several M (packed kernel, or cached primitives).
    for (int64_t m : {c.m, c.m + 3, int64_t{1}}) {
      Tensor x = RandomTensor({m, c.k}, rng);
      std::vector<float> y(m * c.n, -7.f);
      ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
      ExpectNear(y, Reference(x.f32(), m, w, c.bias ? &b : nullptr, c.act), 1e-4f);
    }
  }
}

TEST(LinearTest, Bf16StorageMatchesBf16RoundedWeights) {
  std::mt19937 rng(2);
  Tensor w = RandomTensor({48, 80}, rng);
  Tensor b = RandomTensor({48}, rng);
  Tensor w_bf16 = Tensor::Empty({48, 80}, DType::kBF16);
  ConvertF32ToBf16(w.f32(), w_bf16.u16(), w.numel());
  Tensor w_rounded = Tensor::Empty({48, 80});
  ConvertBf16ToF32(w_bf16.u16(), w_rounded.f32(), w.numel());
  for (const Tensor* src : {&w, &w_bf16}) {
    auto lin = Linear::Create(*src, &b, DType::kBF16);
    ASSERT_TRUE(lin.ok()) << lin.status();
    Tensor x = RandomTensor({9, 80}, rng);
    std::vector<float> y(9 * 48);
    ASSERT_TRUE(lin->Forward(x.f32(), 9, y.data()).ok());
    // Weights are bf16-exact and the product must be computed in f32 (src
    // not rounded to bf16): f32-level tolerance against the rounded weights.
    ExpectNear(y, Reference(x.f32(), 9, w_rounded, &b, Activation::kNone), 1e-4f);
    if (lin->storage() == DType::kBF16) {
      EXPECT_LT(lin->weight_bytes(), 48 * 80 * 4);
    }
    std::printf("bf16 storage request -> %s\n", DTypeName(lin->storage()));
  }
}

TEST(LinearTest, RejectsBadShapes) {
  Tensor w3 = Tensor::Zeros({2, 3, 4});
  EXPECT_EQ(Linear::Create(w3, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  Tensor w = Tensor::Zeros({4, 3});
  Tensor b = Tensor::Zeros({3});
  auto st = Linear::Create(w, &b).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bias"), std::string::npos);
  Tensor empty = Tensor::Zeros({0, 3});
  EXPECT_FALSE(Linear::Create(empty, nullptr).ok());
}

TEST(LinearTest, ConcurrentForwardFromTwoThreads) {
  std::mt19937 rng(3);
  Tensor w = RandomTensor({256, 192}, rng);
  auto lin = Linear::Create(w, nullptr);
  ASSERT_TRUE(lin.ok());
  Tensor x1 = RandomTensor({33, 192}, rng), x2 = RandomTensor({17, 192}, rng);
  auto want1 = Reference(x1.f32(), 33, w, nullptr, Activation::kNone);
  auto want2 = Reference(x2.f32(), 17, w, nullptr, Activation::kNone);
  std::vector<float> y1(33 * 256), y2(17 * 256);
  bool ok1 = true, ok2 = true;
  std::thread t1([&] {
    for (int r = 0; r < 20; ++r) ok1 &= lin->Forward(x1.f32(), 33, y1.data()).ok();
  });
  std::thread t2([&] {
    for (int r = 0; r < 20; ++r) ok2 &= lin->Forward(x2.f32(), 17, y2.data()).ok();
  });
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1 && ok2);
  ExpectNear(y1, want1, 1e-4f);
  ExpectNear(y2, want2, 1e-4f);
}

// Every kernel choice against the double reference, at M values straddling
// every threshold: the f32 packed/oneDNN switch (DnnlMinRows), the
// 16-row bucket step (a packed tail after the oneDNN rows), the largest
// bucket (512: several oneDNN blocks) — with bias and an activation post-op.
TEST(LinearTest, EveryKernelChoiceMatchesReferenceAcrossThresholds) {
  std::mt19937 rng(4);
  const int64_t t = DnnlMinRows(DType::kF32);
  struct Shape { int64_t n, k; };
  // Odd panel tails in both storages, and MiniLM's real shapes.
  for (Shape s : {Shape{100, 72}, Shape{1152, 384}, Shape{384, 1536}}) {
    const int64_t k = s.k, n = s.n;
    Tensor w = RandomTensor({n, k}, rng);
    Tensor b = RandomTensor({n}, rng);
    Tensor w_rounded = Tensor::Empty({n, k});
    for (int64_t i = 0; i < w.numel(); ++i) w_rounded.f32()[i] = Bf16ToFloat(FloatToBf16(w.f32()[i]));
    std::vector<int64_t> ms = {1, 15, 16, 17, t - 1, t, t + 1, t + 15, t + 16, 511, 512, 513, 1040};
    if (n > 100) ms = {1, t - 1, t, t + 1, 137, 513};
    for (DType storage : {DType::kF32, DType::kBF16}) {
      auto lin = Linear::Create(w, &b, storage, Activation::kGeluErf);
      ASSERT_TRUE(lin.ok()) << lin.status();
      const Tensor& want_w = storage == DType::kF32 ? w : w_rounded;
      for (int64_t m : ms) {
        Tensor x = RandomTensor({m, k}, rng);
        std::vector<float> y(m * n, -7.f);
        ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
        const std::string kernel = lin->KernelFor(m);
        SCOPED_TRACE(std::string(DTypeName(storage)) + " n=" + std::to_string(n) + " k=" +
                     std::to_string(k) + " m=" + std::to_string(m) + " " + kernel);
        ExpectNear(y, Reference(x.f32(), m, want_w, &b, Activation::kGeluErf), 2e-4f);
        // K > kMaxK: oneDNN's AVX2 kernel is wrong there (fixed_matmul.cc),
        // its AVX-512 kernels take it.
        const bool want_onednn = storage == DType::kF32 && m >= t && m * n * k >= kDnnlMinMacs &&
                                 (k <= FixedMatmuls::kMaxK || CpuHasAvx512F());
        EXPECT_EQ(kernel.rfind("onednn_fixed", 0) == 0, want_onednn);
        if (want_onednn) {
          EXPECT_EQ(kernel.find("ref") == std::string::npos, true) << "reference kernel chosen";
          EXPECT_EQ(kernel.find("packed_tail") != std::string::npos, m % 16 != 0);
        }
      }
    }
  }
}

// Whether this CPU's oneDNN dispatches to AMX (bf16 tiles).
bool OneDnnHasAmx() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  return (isa & amx) == amx;
}

// MatmulPrecision::kBf16: rows on oneDNN are bf16 products (x and W rounded
// to bf16, f32 accumulation) where the CPU has bf16 units, and f32 products
// elsewhere; rows on the packed kernel (M < 16, tails) are f32 products
// always. Both weight storages: f32 (oneDNN rounds inside, fpmath_mode) and
// bf16 (Linear rounds x; oneDNN reads the packed VNNI panels in place).
TEST(LinearTest, Bf16MatmulPrecisionRoundsOnlyTheOneDnnRows) {
  std::mt19937 rng(9);
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1152, 384}, {384, 1536}, {100, 72}, {300, 229}})
  for (DType storage : {DType::kF32, DType::kBF16}) {
    Tensor w = RandomTensor({n, k}, rng);
    Tensor b = RandomTensor({n}, rng);
    Tensor w_rounded = Tensor::Empty({n, k});
    for (int64_t i = 0; i < w.numel(); ++i) w_rounded.f32()[i] = Bf16ToFloat(FloatToBf16(w.f32()[i]));
    auto lin = Linear::Create(w, &b, storage, Activation::kNone, Linear::Kernel::kAuto,
                              MatmulPrecision::kBf16);
    ASSERT_TRUE(lin.ok()) << lin.status();
    // What an f32 product of these weights is: bf16 storage has rounded them.
    const Tensor& stored_w = storage == DType::kBF16 ? w_rounded : w;
    for (int64_t m : {int64_t{5}, int64_t{16}, int64_t{137}, int64_t{512}}) {
      Tensor x = RandomTensor({m, k}, rng);
      Tensor x_rounded = Tensor::Empty({m, k});
      for (int64_t i = 0; i < x.numel(); ++i) x_rounded.f32()[i] = Bf16ToFloat(FloatToBf16(x.f32()[i]));
      std::vector<float> y(m * n, -7.f);
      ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
      const std::string kernel = lin->KernelFor(m);
      SCOPED_TRACE(std::string(DTypeName(storage)) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                   " m=" + std::to_string(m) + " " + kernel);
      const std::vector<float> f32 = Reference(x.f32(), m, stored_w, &b, Activation::kNone);
      const std::vector<float> bf16 = Reference(x_rounded.f32(), m, w_rounded, &b, Activation::kNone);
      const bool on_onednn = kernel.rfind("onednn_fixed", 0) == 0;
      const bool bf16_units = kernel.find("amx") != std::string::npos || kernel.find("bf16") != std::string::npos;
      if (OneDnnHasAmx()) {
        EXPECT_EQ(on_onednn, m >= 16 && m * n * k >= kDnnlMinMacs);
        if (on_onednn) {
          EXPECT_TRUE(bf16_units) << "bf16 allowed but AMX not used";
        }
      }
      const int64_t bf16_rows = on_onednn && bf16_units ? m / 16 * 16 : 0;
      double moved = 0.0;  // how far the bf16 rows are from the f32 product
      for (int64_t i = 0; i < m; ++i) {
        const std::vector<float>& want = i < bf16_rows ? bf16 : f32;
        for (int64_t j = 0; j < n; ++j) {
          const float got = y[i * n + j], ref = want[i * n + j];
          ASSERT_NEAR(got, ref, 2e-4f * (1 + std::fabs(ref))) << "row " << i << " col " << j;
          if (i < bf16_rows) moved = std::max(moved, double(std::fabs(got - f32[i * n + j])));
        }
      }
      // The bf16 rows really are bf16 products, not f32 ones.
      if (bf16_rows > 0) {
        EXPECT_GT(moved, 1e-3);
      }
    }
  }
}

// Primitives are created once per M bucket and never per call: repeated
// calls with the same M, and M values in the same bucket (a different
// packed tail), create none; a new bucket creates exactly one.
TEST(LinearTest, PrimitivesCreatedOncePerBucketNeverPerCall) {
  std::mt19937 rng(6);
  // 256 x 256: from 32 rows over kDnnlMinMacs.
  Tensor w = RandomTensor({256, 256}, rng);
  auto lin = Linear::Create(w, nullptr);
  ASSERT_TRUE(lin.ok());
  // Creation made the 16- and 512-row buckets (probe and self-check): start
  // where M - 16 is a bucket not made yet.
  const int64_t m = DnnlMinRows(DType::kF32) + 32;
  ASSERT_GE((m - 16) * 256 * 256, kDnnlMinMacs);
  Tensor x = RandomTensor({m + 15, 256}, rng);
  std::vector<float> y((m + 15) * 256);
  ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
  const int64_t after_first = lin->primitives_created();
  EXPECT_GE(after_first, 1);
  for (int r = 0; r < 10; ++r) ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
  for (int64_t tail = 1; tail < 16; ++tail) ASSERT_TRUE(lin->Forward(x.f32(), m + tail, y.data()).ok());
  EXPECT_EQ(lin->primitives_created(), after_first);
  ASSERT_TRUE(lin->Forward(x.f32(), m - 16, y.data()).ok());  // another bucket
  EXPECT_EQ(lin->primitives_created(), after_first + 1);
  // Below the threshold the packed kernel runs: no primitive.
  ASSERT_TRUE(lin->Forward(x.f32(), 1, y.data()).ok());
  EXPECT_EQ(lin->primitives_created(), after_first + 1);
  // Bounded: at most one per bucket whatever M is asked for.
  EXPECT_LE(lin->primitives_created(), FixedMatmuls::kMaxRows / FixedMatmuls::kRowStep);
}

// CreateAllPrimitives builds every bucket up front (what a server does at
// load), after which no M creates a primitive and results are unchanged;
// layers that never use oneDNN have nothing to build.
TEST(LinearTest, CreateAllPrimitivesLeavesNothingForFirstUse) {
  std::mt19937 rng(8);
  Tensor w = RandomTensor({80, 40}, rng);
  Tensor b = RandomTensor({80}, rng);
  auto lin = Linear::Create(w, &b, DType::kF32, Activation::kGeluErf);
  ASSERT_TRUE(lin.ok());
  ASSERT_TRUE(lin->CreateAllPrimitives().ok());
  ASSERT_EQ(lin->primitives_created(), FixedMatmuls::kBuckets);
  ASSERT_TRUE(lin->CreateAllPrimitives().ok());  // idempotent
  EXPECT_EQ(lin->primitives_created(), FixedMatmuls::kBuckets);
  for (int64_t m : {int64_t{1}, int64_t{31}, DnnlMinRows(DType::kF32), int64_t{100}, int64_t{528}, int64_t{1100}}) {
    Tensor x = RandomTensor({m, 40}, rng);
    std::vector<float> y(m * 80);
    ASSERT_TRUE(lin->Forward(x.f32(), m, y.data()).ok());
    ExpectNear(y, Reference(x.f32(), m, w, &b, Activation::kGeluErf), 1e-4f);
  }
  EXPECT_EQ(lin->primitives_created(), FixedMatmuls::kBuckets);

  auto packed = Linear::Create(w, nullptr, DType::kF32, Activation::kNone, Linear::Kernel::kPacked);
  auto bf16 = Linear::Create(w, nullptr, DType::kBF16);
  ASSERT_TRUE(packed.ok() && bf16.ok());
  ASSERT_TRUE(packed->CreateAllPrimitives().ok());
  ASSERT_TRUE(bf16->CreateAllPrimitives().ok());
  EXPECT_EQ(packed->primitives_created(), 0);
  EXPECT_EQ(bf16->primitives_created(), 0);
}

// Small products stay on the packed kernel however many rows (a tiny model's
// layers in a busy server, see kDnnlMinMacs); the test hook lowers the
// bound, and the results are the same either way.
TEST(LinearTest, SmallProductsStayOnThePackedKernel) {
  std::mt19937 rng(10);
  Tensor w = RandomTensor({192, 64}, rng);  // stories260K's fused QKV size
  auto lin = Linear::Create(w, nullptr);
  ASSERT_TRUE(lin.ok());
  for (int64_t m : {int64_t{16}, int64_t{64}, int64_t{160}}) {
    ASSERT_LT(m * 192 * 64, kDnnlMinMacs);
    EXPECT_EQ(lin->KernelFor(m).rfind("packed", 0), 0u) << m;
  }
  Tensor x = RandomTensor({64, 64}, rng);
  std::vector<float> packed(64 * 192), onednn(64 * 192);
  ASSERT_TRUE(lin->Forward(x.f32(), 64, packed.data()).ok());
  Linear::SetDnnlMinMacsForTesting(0);
  const std::string kernel = lin->KernelFor(64);
  ASSERT_TRUE(lin->Forward(x.f32(), 64, onednn.data()).ok());
  Linear::ResetDnnlMinMacsForTesting();
  // Where oneDNN has a fast path for these weights it now takes the rows.
  if (lin->primitives_created() > 0) {
    EXPECT_EQ(kernel.rfind("onednn_fixed", 0), 0u) << kernel;
  }
  ExpectNear(onednn, packed, 1e-4f);
  EXPECT_EQ(lin->KernelFor(64).rfind("packed", 0), 0u);
}

// q8_0 storage: the packed kernel at every M (oneDNN has no such weights),
// named for it; bias and activation as on f32; the answers those of an f32
// Linear on the weights the blocks hold, bit for bit on the same tile; held
// in about 1.125 bytes a weight.
TEST(LinearTest, Q8_0IsThePackedKernelOnTheDequantisedWeights) {
  std::mt19937 rng(21);
  const int64_t n = 96, k = 640;
  Tensor w = RandomTensor({n, k}, rng);
  Tensor b = RandomTensor({n}, rng);
  auto q8 = Linear::Create(w, &b, DType::kQ8_0, Activation::kSilu);
  ASSERT_TRUE(q8.ok()) << q8.status();
  EXPECT_EQ(q8->storage(), DType::kQ8_0);
  EXPECT_EQ(q8->weight_bytes(), 3 * (k / 32) * PackedMatrix::kQ8BlockBytes + n * 4);
  Tensor dequantised = Tensor::Empty({n, k});
  for (int64_t r = 0; r < n; ++r) q8->ReadRow(r, dequantised.f32() + r * k);
  auto f32 = Linear::Create(dequantised, &b, DType::kF32, Activation::kSilu, Linear::Kernel::kPacked);
  ASSERT_TRUE(f32.ok());
  const bool same_tile = !CpuHasAvx512F() || !CpuHasAvx2Fma();
  for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{16}, int64_t{64}, int64_t{512}}) {
    EXPECT_EQ(q8->KernelFor(m), std::string("packed_") + (CpuHasAvx2Fma() ? "avx2" : "scalar") + "_q8_0") << m;
    Tensor x = RandomTensor({m, k}, rng);
    std::vector<float> got(m * n), want(m * n);
    ASSERT_TRUE(q8->Forward(x.f32(), m, got.data()).ok());
    ASSERT_TRUE(f32->Forward(x.f32(), m, want.data()).ok());
    if (same_tile) {
      EXPECT_EQ(got, want) << m;
    } else {
      ExpectNear(got, want, 1e-4f);
    }
  }
  EXPECT_EQ(q8->primitives_created(), 0);
}

// Two threads asking for the same new bucket at once build it once.
TEST(LinearTest, ConcurrentFirstUseCreatesOnePrimitive) {
  std::mt19937 rng(7);
  Tensor w = RandomTensor({256, 256}, rng);
  auto lin = Linear::Create(w, nullptr);
  ASSERT_TRUE(lin.ok());
  const int64_t before = lin->primitives_created();
  const int64_t m = DnnlMinRows(DType::kF32) + 32;
  Tensor x = RandomTensor({m, 256}, rng);
  auto want = Reference(x.f32(), m, w, nullptr, Activation::kNone);
  std::vector<float> y1(m * 256), y2(m * 256);
  bool ok1 = true, ok2 = true;
  std::thread t1([&] { ok1 = lin->Forward(x.f32(), m, y1.data()).ok(); });
  std::thread t2([&] { ok2 = lin->Forward(x.f32(), m, y2.data()).ok(); });
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1 && ok2);
  EXPECT_EQ(lin->primitives_created(), before + 1);
  ExpectNear(y1, want, 1e-4f);
  ExpectNear(y2, want, 1e-4f);
}

}  // namespace
}  // namespace attnserve
