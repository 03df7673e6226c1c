// PackedGemm / bf16 Linear against a double-precision reference on the same
// (bf16-rounded) weights, over many shapes: M = 1..17 (every row-block tail of
// the 3-, 6- and 8-row kernels), odd N (partial last panel) and odd K (padded
// panel rows), the AVX-512 tiles, the AVX2 ones and the scalar fallback, with
// bias and activations.
#include "engine/ops/packed_gemm.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "engine/core/cpu_features.h"
#include "engine/core/half.h"
#include "engine/core/large_alloc.h"
#include "engine/core/q8_0.h"
#include "engine/core/tensor.h"
#include "engine/ops/linear.h"
#include "engine/ops/packed_gemm_kernels.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

Tensor Random(std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor t = Tensor::Empty(std::move(shape));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = u(rng);
  return t;
}

// The weights as the kernel sees them: rounded to bf16 when stored as bf16.
std::vector<double> Effective(const Tensor& w, DType storage) {
  std::vector<double> out(w.numel());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float v = w.f32()[i];
    out[i] = storage == DType::kBF16 ? Bf16ToFloat(FloatToBf16(v)) : v;
  }
  return out;
}

double ApplyAct(double v, Activation act) {
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

// Checks y against the double reference; tolerance scaled by sum |x w| so it
// is f32-accumulation-level regardless of K.
void Check(const std::vector<float>& x, int64_t m, int64_t k, const std::vector<double>& w,
           int64_t n, const std::vector<float>* bias, Activation act, const std::vector<float>& y,
           int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? (*bias)[j] : 0.0, mag = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        acc += double(x[i * k + p]) * w[j * k + p];
        mag += std::fabs(double(x[i * k + p]) * w[j * k + p]);
      }
      const double want = ApplyAct(acc, act);
      ASSERT_NEAR(y[i * ldy + j], want, 2e-5 * (mag + 1.0))
          << "m=" << m << " k=" << k << " n=" << n << " at (" << i << ", " << j << ")";
    }
  }
}

// 0: the CPU's best kernels (the AVX-512 tiles where there are), 1: the
// scalar ones, 2: AVX2 even on an AVX-512 CPU.
class PackedGemmTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    PackedGemmForceScalarForTesting(GetParam() == 1);
    PackedGemmDisableAvx512ForTesting(GetParam() == 2);
  }
  void TearDown() override {
    PackedGemmForceScalarForTesting(false);
    PackedGemmDisableAvx512ForTesting(false);
  }
};

TEST_P(PackedGemmTest, RunsTheKernelTheParameterNames) {
  // Otherwise "Dispatched" could silently be the AVX2 run twice.
  const char* want = GetParam() == 1 || !CpuHasAvx2Fma() ? "scalar"
                     : GetParam() == 0 && CpuHasAvx512F() ? "avx512"
                                                           : "avx2";
  EXPECT_STREQ(PackedGemmKernel(), want);
}

TEST_P(PackedGemmTest, MatchesDoubleReferenceAcrossShapes) {
  std::mt19937 rng(11);
  struct Shape { int64_t n, k; };
  for (DType storage : {DType::kF32, DType::kBF16}) {
    for (Shape s : {Shape{1, 1}, Shape{16, 16}, Shape{17, 33}, Shape{5, 7}, Shape{40, 100},
                    Shape{63, 129}, Shape{96, 64}}) {
      Tensor w = Random({s.n, s.k}, rng);
      const std::vector<double> we = Effective(w, storage);
      PackedMatrix packed = PackedMatrix::Pack(w, storage);
      EXPECT_EQ(packed.storage(), storage);
      for (int64_t m = 1; m <= 17; ++m) {
        Tensor x = Random({m, s.k}, rng);
        std::vector<float> xv(x.f32(), x.f32() + x.numel());
        // ldy > n: columns beyond n must be left untouched.
        const int64_t ldy = s.n + 3;
        std::vector<float> y(m * ldy, 123.f);
        PackedGemm(xv.data(), m, s.k, packed, nullptr, Activation::kNone, y.data(), ldy);
        Check(xv, m, s.k, we, s.n, nullptr, Activation::kNone, y, ldy);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = s.n; j < ldy; ++j) ASSERT_EQ(y[i * ldy + j], 123.f);
      }
    }
  }
}

TEST_P(PackedGemmTest, BiasAndActivations) {
  std::mt19937 rng(12);
  for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kGeluTanh,
                         Activation::kSilu, Activation::kRelu}) {
    Tensor w = Random({37, 45}, rng);
    Tensor b = Random({37}, rng);
    std::vector<float> bias(b.f32(), b.f32() + 37);
    PackedMatrix packed = PackedMatrix::Pack(w, DType::kBF16);
    const int64_t m = 9;
    Tensor x = Random({m, 45}, rng);
    std::vector<float> xv(x.f32(), x.f32() + x.numel()), y(m * 37);
    PackedGemm(xv.data(), m, 45, packed, bias.data(), act, y.data(), 37);
    Check(xv, m, 45, Effective(w, DType::kBF16), 37, &bias, act, y, 37);
  }
}

TEST_P(PackedGemmTest, LargeRowCountsCrossRowChunks) {
  // Enough rows that the kernel splits x into several L2-sized row chunks and
  // runs on several threads (parallel above ~64k multiply-adds).
  std::mt19937 rng(13);
  const int64_t m = 200, k = 1200, n = 50;
  Tensor w = Random({n, k}, rng);
  Tensor x = Random({m, k}, rng);
  std::vector<float> xv(x.f32(), x.f32() + x.numel()), y(m * n);
  PackedMatrix packed = PackedMatrix::Pack(w, DType::kBF16);
  PackedGemm(xv.data(), m, k, packed, nullptr, Activation::kNone, y.data(), n);
  Check(xv, m, k, Effective(w, DType::kBF16), n, nullptr, Activation::kNone, y, n);
}

// q8_0: the products are exactly those of the f32 kernel on the weights the
// q8_0 panels hold (ReadRow's dequantised values), bit for bit where the f32
// kernel is the same tile (the AVX2 and scalar ones; the AVX-512 f32 tile
// sums in another order), and within f32 rounding of a double reference.
// Shapes cross partial panels, K not a multiple of the 32-step block, and
// one and several rows (the one-row tile splits even and odd steps).
TEST_P(PackedGemmTest, Q8ProductsAreTheF32KernelsOnTheDequantisedWeights) {
  std::mt19937 rng(14);
  struct Shape { int64_t n, k; };
  const bool same_tile = GetParam() != 0 || !CpuHasAvx512F();
  for (Shape s : {Shape{1, 1}, Shape{17, 33}, Shape{5, 7}, Shape{40, 100}, Shape{63, 129}, Shape{96, 64},
                  Shape{33, 31}}) {
    Tensor w = Random({s.n, s.k}, rng);
    const PackedMatrix q8 = PackedMatrix::Pack(w, DType::kQ8_0);
    Tensor dequantised = Tensor::Empty({s.n, s.k});
    for (int64_t r = 0; r < s.n; ++r) q8.ReadRow(r, dequantised.f32() + r * s.k);
    const PackedMatrix f32 = PackedMatrix::Pack(dequantised, DType::kF32);
    const std::vector<double> we = Effective(dequantised, DType::kF32);
    for (int64_t m = 1; m <= 17; ++m) {
      Tensor x = Random({m, s.k}, rng);
      std::vector<float> xv(x.f32(), x.f32() + x.numel()), y(m * s.n), want(m * s.n);
      PackedGemm(xv.data(), m, s.k, q8, nullptr, Activation::kNone, y.data(), s.n);
      PackedGemm(xv.data(), m, s.k, f32, nullptr, Activation::kNone, want.data(), s.n);
      Check(xv, m, s.k, we, s.n, nullptr, Activation::kNone, y, s.n);
      if (same_tile) {
        ASSERT_EQ(std::memcmp(y.data(), want.data(), sizeof(float) * y.size()), 0)
            << "m=" << m << " n=" << s.n << " k=" << s.k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PackedGemmTest, ::testing::Values(0, 1, 2),
                         [](const auto& info) {
                           return info.param == 1 ? "Scalar" : info.param == 2 ? "Avx2" : "Dispatched";
                         });

TEST(PackedMatrixTest, Bf16HoldsHalfTheBytesAndReadsRowsBack) {
  std::mt19937 rng(14);
  Tensor w = Random({64, 96}, rng);
  PackedMatrix f32 = PackedMatrix::Pack(w, DType::kF32);
  PackedMatrix bf16 = PackedMatrix::Pack(w, DType::kBF16);
  EXPECT_EQ(f32.bytes(), 64 * 96 * 4);
  EXPECT_EQ(bf16.bytes(), 64 * 96 * 2);
  std::vector<float> row(96);
  for (int64_t r : {0, 7, 8, 15, 16, 63}) {
    f32.ReadRow(r, row.data());
    for (int64_t k = 0; k < 96; ++k) ASSERT_EQ(row[k], w.f32()[r * 96 + k]);
    bf16.ReadRow(r, row.data());
    for (int64_t k = 0; k < 96; ++k) ASSERT_EQ(row[k], Bf16ToFloat(FloatToBf16(w.f32()[r * 96 + k])));
  }
}

// q8_0 holds 1.125 bytes a weight (32 int8 and one f32 scale per 32 steps
// of a column, K padded to 32) and gives back each block as Q8_0 stores it:
// the scale is max|w| / 127 rounded to f16, the codes round(w · 127 /
// max|w|), the largest ±127; an all-zero block is zeros.
TEST(PackedMatrixTest, Q8HoldsAnEighthMoreThanAByteAWeightAndReadsBlocksBack) {
  std::mt19937 rng(15);
  const int64_t n = 40, k = 100;
  Tensor w = Random({n, k}, rng);
  for (int64_t j = 32; j < 64; ++j) w.f32()[3 * k + j] = 0.0f;  // row 3's second block
  const PackedMatrix q8 = PackedMatrix::Pack(w, DType::kQ8_0);
  EXPECT_EQ(q8.storage(), DType::kQ8_0);
  EXPECT_EQ(q8.k_padded(), 128);
  EXPECT_EQ(q8.bytes(), 2 * 4 * PackedMatrix::kQ8BlockBytes);  // 2 panels × 4 blocks
  std::vector<float> row(k);
  for (int64_t r = 0; r < n; ++r) {
    q8.ReadRow(r, row.data());
    for (int64_t b = 0; b < k; b += 32) {
      const int64_t end = std::min(k, b + 32);
      float amax = 0.0f;
      for (int64_t j = b; j < end; ++j) amax = std::max(amax, std::fabs(w.f32()[r * k + j]));
      const float scale = F16ToFloat(FloatToF16(amax / 127.0f));
      float held_max = 0.0f;
      for (int64_t j = b; j < end; ++j) {
        const float code = scale == 0.0f ? 0.0f : row[j] / scale;
        ASSERT_EQ(code, std::round(code)) << r << ", " << j;  // a whole code times the scale
        ASSERT_LE(std::fabs(code), 127.0f);
        // Rounded against the unrounded scale, as ggml's quantiser does.
        const float exact = amax == 0.0f ? 0.0f : w.f32()[r * k + j] * 127.0f / amax;
        ASSERT_LE(std::fabs(code - exact), 0.5f + 1e-3f) << r << ", " << j;
        held_max = std::max(held_max, std::fabs(code));
      }
      EXPECT_EQ(held_max, scale == 0.0f ? 0.0f : 127.0f) << r << ", block " << b / 32;
    }
  }
}

// A q8_0 source (rows of Q8_0 blocks, as a GGUF holds them and the decoder
// loader hands them over) packs to the very panels its f32 values quantise
// to, its blocks taken as they are; its rows read back as scale × code.
TEST(PackedMatrixTest, AcceptsQ8_0SourcesBlockForBlock) {
  std::mt19937 rng(16);
  const int64_t n = 40, k = 96;
  Tensor w = Random({n, k}, rng);
  for (int64_t j = 32; j < 64; ++j) w.f32()[5 * k + j] = 0.0f;  // an all-zero block
  Tensor blocks = Tensor::Empty({n, k}, DType::kQ8_0);
  ASSERT_EQ(blocks.bytes(), static_cast<size_t>(n * k / 32 * 34));
  QuantizeRowQ8_0(w.f32(), w.numel(), static_cast<std::byte*>(blocks.raw()));
  const PackedMatrix from_f32 = PackedMatrix::Pack(w, DType::kQ8_0);
  const PackedMatrix from_q8 = PackedMatrix::Pack(blocks, DType::kQ8_0);
  ASSERT_EQ(from_f32.bytes(), from_q8.bytes());
  EXPECT_EQ(std::memcmp(from_f32.data(), from_q8.data(), from_f32.bytes()), 0);
  // Widened to f32 storage: each value is its block's scale times its code.
  std::vector<float> want(k), got(k);
  const PackedMatrix widened = PackedMatrix::Pack(blocks, DType::kF32);
  for (int64_t r = 0; r < n; ++r) {
    DequantizeRowQ8_0(static_cast<const std::byte*>(blocks.raw()) + r * (k / 32) * 34, k, want.data());
    widened.ReadRow(r, got.data());
    ASSERT_EQ(got, want) << "row " << r;
    from_q8.ReadRow(r, got.data());
    ASSERT_EQ(got, want) << "row " << r;
  }
}

// A thread that widens a q8_0 panel (a product of 7+ rows) keeps one
// panel's f32 copy, k_padded × 32 floats, counted while the thread lives.
TEST(PackedMatrixTest, WidenedPanelsAreCountedWhileTheirThreadLives) {
  std::mt19937 rng(17);
  const int64_t n = 64, k = 200, m = 12;
  const PackedMatrix q8 = PackedMatrix::Pack(Random({n, k}, rng), DType::kQ8_0);
  const Tensor x = Random({m, k}, rng);
  const int64_t before = PackedGemmPanelScratchBytes();
  int64_t during = -1;
  std::thread worker([&] {
    omp_set_num_threads(1);  // the product on this thread alone
    std::vector<float> y(m * n);
    PackedGemm(x.f32(), m, k, q8, nullptr, Activation::kNone, y.data(), n);
    during = PackedGemmPanelScratchBytes();
  });
  worker.join();
  EXPECT_EQ(during - before, q8.k_padded() * 32 * 4);
  EXPECT_EQ(PackedGemmPanelScratchBytes(), before);
}

TEST(PackedMatrixTest, AcceptsBf16AndF16Sources) {
  std::mt19937 rng(15);
  Tensor w = Random({20, 24}, rng);
  Tensor w_bf16 = Tensor::Empty({20, 24}, DType::kBF16);
  ConvertF32ToBf16(w.f32(), w_bf16.u16(), w.numel());
  PackedMatrix from_f32 = PackedMatrix::Pack(w, DType::kBF16);
  PackedMatrix from_bf16 = PackedMatrix::Pack(w_bf16, DType::kBF16);
  ASSERT_EQ(from_f32.bytes(), from_bf16.bytes());
  EXPECT_EQ(std::memcmp(from_f32.data(), from_bf16.data(), from_f32.bytes()), 0);
}

// The Linear layer on bf16 storage: weight_bytes really halves, and the
// products match the bf16-rounded reference at every M (the packed kernel);
// the f32 Linear (packed kernel below its threshold, oneDNN fixed-M above) on
// the same inputs matches the unrounded weights.
TEST(LinearBf16Test, HalvesBytesAndMatchesReference) {
  std::mt19937 rng(16);
  Tensor w = Random({100, 72}, rng);
  Tensor b = Random({100}, rng);
  std::vector<float> bias(b.f32(), b.f32() + 100);
  auto f32 = Linear::Create(w, &b, DType::kF32);
  auto bf16 = Linear::Create(w, &b, DType::kBF16);
  ASSERT_TRUE(f32.ok() && bf16.ok());
  EXPECT_EQ(bf16->storage(), DType::kBF16);
  // bf16: 100 outputs pad to 128 (4 panels of 32), K = 72 pads to 96 (32
  // rows: oneDNN's BA16a32b2a blocks).
  // f32: 100 outputs pad to 128 (4 panels of 32, oneDNN's BA16a32b), held
  // once whichever kernel runs.
  EXPECT_EQ(f32->weight_bytes(), 128 * 80 * 4 + 100 * 4);
  EXPECT_EQ(bf16->weight_bytes(), 128 * 96 * 2 + 100 * 4);
  // f32 on the packed kernel only (Kernel::kPacked, as the LM head uses it).
  auto f32_packed = Linear::Create(w, &b, DType::kF32, Activation::kNone, Linear::Kernel::kPacked);
  ASSERT_TRUE(f32_packed.ok());
  EXPECT_EQ(f32_packed->weight_bytes(), f32->weight_bytes());
  EXPECT_EQ(f32_packed->primitives_created(), 0);
  for (int64_t m : {1, 2, 5, 6, 7, 12, 13, 16, 17, 31, 32, 33, 70}) {
    Tensor x = Random({m, 72}, rng);
    std::vector<float> xv(x.f32(), x.f32() + x.numel()), y(m * 100);
    ASSERT_TRUE(bf16->Forward(xv.data(), m, y.data()).ok());
    Check(xv, m, 72, Effective(w, DType::kBF16), 100, &bias, Activation::kNone, y, 100);
    ASSERT_TRUE(f32->Forward(xv.data(), m, y.data()).ok());
    Check(xv, m, 72, Effective(w, DType::kF32), 100, &bias, Activation::kNone, y, 100);
    ASSERT_TRUE(f32_packed->Forward(xv.data(), m, y.data()).ok());
    Check(xv, m, 72, Effective(w, DType::kF32), 100, &bias, Activation::kNone, y, 100);
  }
}

// The parallel rule: small products stay on the calling thread; so do
// moderate ones whose weights fit in one core's L2 (stories260K's LM head,
// 512 x 64 f32 = 128 KiB, at 16 rows), which split only from 2^21
// multiply-adds; large weights split from 2^18 (kParallelMinMacs).
TEST(PackedGemmParallelTest, CacheResidentWeightsNeedMoreWorkToSplit) {
  std::mt19937 rng(21);
  const PackedMatrix small = PackedMatrix::Pack(Random({512, 64}, rng), DType::kF32);  // 128 KiB
  ASSERT_LT(small.bytes(), kCacheResidentWeightBytes);
  EXPECT_FALSE(PackedGemmRunsParallel(1, small));
  EXPECT_FALSE(PackedGemmRunsParallel(16, small));   // 2^19 multiply-adds
  EXPECT_FALSE(PackedGemmRunsParallel(63, small));
  EXPECT_TRUE(PackedGemmRunsParallel(64, small));    // 2^21
  EXPECT_TRUE(PackedGemmRunsParallel(512, small));   // a prefill chunk
  const PackedMatrix large = PackedMatrix::Pack(Random({576, 576}, rng), DType::kF32);  // 1.3 MB
  ASSERT_GE(large.bytes(), kCacheResidentWeightBytes);
  EXPECT_TRUE(PackedGemmRunsParallel(1, large));     // 331,776 >= 2^18: decode reads memory
  const PackedMatrix tiny = PackedMatrix::Pack(Random({64, 64}, rng), DType::kF32);
  EXPECT_FALSE(PackedGemmRunsParallel(63, tiny));    // under 2^18
}

TEST(PackedMatrixTest, LargeWeightsStartOnAHugePageAndStillMultiplyRight) {
  // Decode streams every panel once per step; from 2 MiB the panels live in
  // AllocateLarge's huge-page-aligned memory (engine/core/large_alloc.h).
  std::mt19937 rng(5);
  const Tensor w = Random({1024, 640}, rng);  // 2.6 MB packed
  const PackedMatrix big = PackedMatrix::Pack(w, DType::kF32);
  ASSERT_GE(big.bytes(), static_cast<int64_t>(kHugePageBytes));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kHugePageBytes, 0u);
  const PackedMatrix small = PackedMatrix::Pack(Random({64, 64}, rng), DType::kF32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  // The product over the whole buffer, past the advised pages into the tail.
  const Tensor x = Random({3, 640}, rng);
  std::vector<float> y(3 * 1024);
  PackedGemm(x.f32(), 3, 640, big, nullptr, Activation::kNone, y.data(), 1024);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t n : {int64_t{0}, int64_t{511}, int64_t{1023}}) {
      double want = 0.0;
      for (int64_t k = 0; k < 640; ++k) want += double{x.f32()[i * 640 + k]} * w.f32()[n * 640 + k];
      EXPECT_NEAR(y[i * 1024 + n], want, 1e-3) << i << "," << n;
    }
  }
}

// The next-panel pull's order: every line of the slice exactly once, the
// first lines given are the starts of its pages (one cursor each, up to the
// cap), and each cursor's lines come in ascending order.
TEST(PageCursorsTest, GivesEveryLineOnceFromSeveralPagesAtOnce) {
  using packed_gemm_internal::PageCursors;
  constexpr int64_t kPage = PageCursors::kPageLines;
  for (int64_t lines : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{300},
                        int64_t{576}, int64_t{1152}, int64_t{1536}, int64_t{3000}}) {
    PageCursors order(lines);
    std::vector<int64_t> given;
    for (int64_t line = order.Next(); line >= 0; line = order.Next()) given.push_back(line);
    EXPECT_EQ(order.Next(), -1) << lines;
    ASSERT_EQ(static_cast<int64_t>(given.size()), lines) << lines;
    std::vector<int> seen(lines, 0);
    for (int64_t line : given) {
      ASSERT_TRUE(line >= 0 && line < lines) << line;
      ++seen[line];
    }
    for (int64_t i = 0; i < lines; ++i) ASSERT_EQ(seen[i], 1) << "line " << i << " of " << lines;
    const int64_t pages = (lines + kPage - 1) / kPage;
    const int64_t per_cursor = pages <= PageCursors::kMaxCursors
                                   ? 1
                                   : (pages + PageCursors::kMaxCursors - 1) / PageCursors::kMaxCursors;
    const int64_t cursors = (pages + per_cursor - 1) / per_cursor;
    for (int64_t c = 0; c < cursors && c < lines; ++c) {
      EXPECT_EQ(given[c], c * per_cursor * kPage) << "cursor " << c << " of a " << lines << "-line slice";
    }
    // Within a cursor's span the lines ascend.
    std::vector<int64_t> last(cursors, -1);
    for (int64_t line : given) {
      const int64_t c = line / (per_cursor * kPage);
      EXPECT_GT(line, last[c]);
      last[c] = line;
    }
  }
}

}  // namespace
}  // namespace attnserve
