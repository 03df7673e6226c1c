// The few-rows (decode) path of the flash kernel against the double-precision
// reference, over every row-count template (1, 2, 4, 8 rows, and padded
// counts in between), f32 and bf16 K/V, dense strided K/V, per-row key
// limits (causal with Nq > 1, key lengths) and key counts that are not
// multiples of any chunk or piece size.
#include "engine/attention/decode_kernel.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/attention_ref.h"
#include "engine/attention/head8_decode_kernel.h"
#include "engine/attention/sdpa.h"
#include "gtest/gtest.h"
#include "tests/engine/attention/attention_test_util.h"

namespace attnserve {
namespace {

using testing_util::AllClose;
using testing_util::RandomVec;
using testing_util::ToBf16;

struct Case {
  int batch, hq, hkv, nq, nk, d;
  bool causal, lengths;
  DType dtype;
};

// Runs one case through the fast path and the reference. Q and out are
// [B, N, H, d] (interleaved, as the projections produce them), so K/V rows
// are strided too when Hkv > 1.
void Check(const Case& c, std::mt19937& rng) {
  const std::string label =
      absl::StrCat("B=", c.batch, " Hq=", c.hq, " Hkv=", c.hkv, " Nq=", c.nq, " Nk=", c.nk,
                   " d=", c.d, c.causal ? " causal" : "", c.lengths ? " lengths" : "", " ",
                   DTypeName(c.dtype));
  auto q = RandomVec(int64_t{c.batch} * c.nq * c.hq * c.d, rng, -2, 2);
  auto k = RandomVec(int64_t{c.batch} * c.nk * c.hkv * c.d, rng, -2, 2);
  auto v = RandomVec(int64_t{c.batch} * c.nk * c.hkv * c.d, rng);
  auto k16 = ToBf16(k), v16 = ToBf16(v);
  std::vector<int32_t> lengths;
  for (int b = 0; b < c.batch; ++b) lengths.push_back(1 + static_cast<int>(rng() % c.nk));
  const bool bf16 = c.dtype == DType::kBF16;
  auto args = [&](std::vector<float>& out) {
    SdpaArgs a;
    a.shape = {c.batch, c.hq, c.hkv, c.nq, c.nk, c.d};
    a.q = ConstAttnView::Interleaved(q.data(), c.hq, c.nq, c.d);
    a.k = ConstAttnView::Interleaved(bf16 ? static_cast<const void*>(k16.data()) : k.data(), c.hkv,
                                     c.nk, c.d, c.dtype);
    a.v = ConstAttnView::Interleaved(bf16 ? static_cast<const void*>(v16.data()) : v.data(), c.hkv,
                                     c.nk, c.d, c.dtype);
    out.assign(q.size(), -99.0f);
    a.out = AttnView::Interleaved(out.data(), c.hq, c.nq, c.d);
    a.masks.causal = c.causal;
    if (c.lengths) a.masks.key_lengths = lengths.data();
    return a;
  };
  std::vector<float> out, ref;
  ASSERT_TRUE(ScaledDotProductAttention(args(out)).ok()) << label;
  ASSERT_TRUE(ScaledDotProductAttentionRef(args(ref)).ok()) << label;
  EXPECT_TRUE(AllClose(out, ref, 2e-5, 1e-4)) << label;
}

TEST(DecodeKernelTest, EveryRowCountMatchesReference) {
  std::mt19937 rng(21);
  // Rows per job = (Hq / Hkv) * Nq: 1..8 all reach the decode path.
  for (int group : {1, 2, 3, 4, 5, 8}) {
    for (int nq : {1, 2}) {
      if (group * nq > attention_internal::kDecodeMaxRows) continue;
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        // 64 and 128 run the kernels with d fixed at compile time, the others the generic ones;
        // 8 (f32) the head-of-8 kernel.
        for (int d : {8, 24, 32, 64, 80, 128}) {
          const int hkv = 1 + static_cast<int>(rng() % 2);
          const int nk = 1 + static_cast<int>(rng() % 300);
          Check({2, group * hkv, hkv, nq, nk, d, nq > 1, false, dtype}, rng);
          Check({2, group * hkv, hkv, nq, nk, d, false, true, dtype}, rng);
        }
      }
    }
  }
}

TEST(DecodeKernelTest, LongCacheAcrossManyChunks) {
  std::mt19937 rng(22);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    Check({1, 8, 2, 1, 1000, 128, false, false, dtype}, rng);
    Check({1, 8, 1, 1, 777, 64, false, true, dtype}, rng);
  }
}

// The software prefetch settings (none, 16 KiB into L1, the default 32 KiB
// into L2) change only timing: every one matches the reference, also where
// the prefetch distance runs past the end of a short cache.
TEST(DecodeKernelTest, EveryPrefetchSettingMatchesReference) {
  std::mt19937 rng(23);
  struct Setting {
    int64_t bytes;
    bool l1;
  };
  for (Setting p : {Setting{0, false}, Setting{16 << 10, true}, Setting{512, false}}) {
    attention_internal::SetDecodePrefetch(p.bytes, p.l1);
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      Check({2, 8, 2, 1, 700, 128, false, true, dtype}, rng);
      Check({1, 4, 1, 2, 40, 64, true, false, dtype}, rng);
    }
  }
  attention_internal::ResetDecodePrefetch();
  for (DType dtype : {DType::kF32, DType::kBF16}) Check({2, 8, 2, 1, 700, 128, false, true, dtype}, rng);
}

// The decode path is chosen exactly when it applies: few rows, no masks
// beyond key limits, supported head_dim.
// Every inner-loop variant (the default, the previous 64-key kernel, the
// block-tiled one) over every row-count template, f32 and bf16,
// head dims that leave a remainder after the column tiles (24, 40, 80), and
// key counts around block and chunk boundaries (1, 15, 16, 17, 63, 65, ...).
TEST(DecodeKernelTest, EveryVariantMatchesReference) {
  std::mt19937 rng(24);
  using attention_internal::DecodeVariant;
  for (DecodeVariant variant :
       {DecodeVariant::kChunk64WideQk, DecodeVariant::kChunk64, DecodeVariant::kBlockTiled}) {
    attention_internal::SetDecodeVariant(variant);
    for (int rows : {1, 2, 3, 4, 6, 8}) {
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        for (int d : {24, 32, 40, 80, 128}) {
          if (dtype == DType::kBF16 && d % 16 != 0) continue;
          for (int nk : {1, 15, 16, 17, 63, 65, 129}) {
            const int hkv = 1 + static_cast<int>(rng() % 2);
            const int nq = rows % 2 == 0 && rng() % 2 == 0 ? 2 : 1;
            Check({2, rows / nq * hkv, hkv, nq, nk, d, nq > 1, nk > 1, dtype}, rng);
          }
        }
      }
    }
  }
  attention_internal::SetDecodeVariant(DecodeVariant::kChunk64WideQk);
}

// A batch whose key length is 0 has every key masked: each variant writes
// exact zeros for its rows (never NaN), and the other batch still matches
// the reference.
TEST(DecodeKernelTest, FullyMaskedRowsGiveZerosInEveryVariant) {
  std::mt19937 rng(25);
  using attention_internal::DecodeVariant;
  const int batch = 2, hq = 8, hkv = 2, nk = 40;
  for (DecodeVariant variant :
       {DecodeVariant::kChunk64WideQk, DecodeVariant::kChunk64, DecodeVariant::kBlockTiled}) {
    attention_internal::SetDecodeVariant(variant);
    // d = 8 with f32 K/V: the head-of-8 kernel.
    for (auto [dtype, d] : {std::pair{DType::kF32, 64}, std::pair{DType::kBF16, 64}, std::pair{DType::kF32, 8}}) {
      auto q = RandomVec(int64_t{batch} * hq * d, rng, -2, 2);
      auto k = RandomVec(int64_t{batch} * nk * hkv * d, rng, -2, 2);
      auto v = RandomVec(int64_t{batch} * nk * hkv * d, rng);
      auto k16 = ToBf16(k), v16 = ToBf16(v);
      const bool bf16 = dtype == DType::kBF16;
      const int32_t lengths[2] = {0, 23};
      auto args = [&](std::vector<float>& out) {
        SdpaArgs a;
        a.shape = {batch, hq, hkv, 1, nk, d};
        a.q = ConstAttnView::Interleaved(q.data(), hq, 1, d);
        a.k = ConstAttnView::Interleaved(bf16 ? static_cast<const void*>(k16.data()) : k.data(), hkv,
                                         nk, d, dtype);
        a.v = ConstAttnView::Interleaved(bf16 ? static_cast<const void*>(v16.data()) : v.data(), hkv,
                                         nk, d, dtype);
        out.assign(q.size(), -99.0f);
        a.out = AttnView::Interleaved(out.data(), hq, 1, d);
        a.masks.key_lengths = lengths;
        return a;
      };
      std::vector<float> out, ref;
      ASSERT_TRUE(ScaledDotProductAttention(args(out)).ok());
      ASSERT_TRUE(ScaledDotProductAttentionRef(args(ref)).ok());
      const int64_t per_batch = int64_t{hq} * d;
      for (int64_t i = 0; i < per_batch; ++i) ASSERT_EQ(out[i], 0.0f) << "element " << i;
      EXPECT_TRUE(AllClose(std::vector<float>(out.begin() + per_batch, out.end()),
                           std::vector<float>(ref.begin() + per_batch, ref.end()), 2e-5, 1e-4))
          << DTypeName(dtype);
    }
  }
  attention_internal::SetDecodeVariant(DecodeVariant::kChunk64WideQk);
}

// Heads of 8 (stories260K's) take their own kernel. It, and the general
// decode kernel with that path off, match the reference over every row
// count, per-row key limits (causal with Nq = 2, key lengths) and key counts
// around its 8-key groups and 128-key softmax chunks.
TEST(DecodeKernelTest, HeadsOfEightMatchReferenceOnBothPaths) {
  std::mt19937 rng(26);
  for (bool general : {false, true}) {
    attention_internal::DisableHead8Decode(general);
    for (int rows : {1, 2, 3, 4, 5, 6, 8}) {
      for (int nk : {1, 7, 8, 9, 17, 127, 128, 129, 257, 300}) {
        const int hkv = 1 + static_cast<int>(rng() % 2);
        const int nq = rows % 2 == 0 && rng() % 2 == 0 ? 2 : 1;
        Check({2, rows / nq * hkv, hkv, nq, nk, 8, nq > 1, false, DType::kF32}, rng);
        Check({2, rows / nq * hkv, hkv, nq, nk, 8, false, true, DType::kF32}, rng);
      }
    }
  }
  attention_internal::DisableHead8Decode(false);
}

TEST(DecodeKernelTest, SupportedOnlyForFewUnmaskedRows) {
  std::vector<float> q(256);
  std::vector<attention_internal::FlashRow> rows(9);
  for (auto& r : rows) r.q = q.data();
  const bool avx2 = attention_internal::Avx2KernelsEnabled();
  using attention_internal::DecodeJobSupported;
  EXPECT_EQ(DecodeJobSupported(rows.data(), 4, 128, DType::kF32), avx2);
  EXPECT_EQ(DecodeJobSupported(rows.data(), 8, 256, DType::kBF16), avx2);
  EXPECT_EQ(DecodeJobSupported(rows.data(), 1, 24, DType::kF32), avx2);
  EXPECT_FALSE(DecodeJobSupported(rows.data(), 1, 24, DType::kBF16));  // bf16 pairs 16 columns
  EXPECT_FALSE(DecodeJobSupported(rows.data(), 9, 128, DType::kF32));
  EXPECT_FALSE(DecodeJobSupported(rows.data(), 4, 36, DType::kF32));
  EXPECT_FALSE(DecodeJobSupported(rows.data(), 4, 264, DType::kF32));
  uint8_t allow[4] = {1, 1, 1, 1};
  rows[2].key_allow = allow;
  EXPECT_FALSE(DecodeJobSupported(rows.data(), 4, 128, DType::kF32));
}

}  // namespace
}  // namespace attnserve
