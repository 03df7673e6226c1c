#include "engine/attention/sdpa.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/attention_ref.h"
#include "engine/attention/flash_kernel.h"
#include "engine/core/cpu_features.h"
#include "gtest/gtest.h"
#include "tests/engine/attention/attention_test_util.h"

namespace attnserve {
namespace {

using testing_util::AllClose;
using testing_util::RandomVec;
using testing_util::ToBf16;

// Owns the buffers of one randomized attention problem.
struct Problem {
  SdpaShape shape;
  DType kv_dtype = DType::kF32;
  bool interleaved = false;  // Q/out as [B, N, H, d]
  std::vector<float> q, k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> key_lengths;
  std::vector<uint8_t> key_allow, allow;
  std::vector<float> additive;
  AttentionMasks masks;
  SdpaOptions options;

  SdpaArgs Args(std::vector<float>& out, std::vector<float>& weights) {
    const SdpaShape& s = shape;
    SdpaArgs a;
    a.shape = s;
    a.q = interleaved ? ConstAttnView::Interleaved(q.data(), s.num_heads, s.q_len, s.head_dim)
                      : ConstAttnView::Contiguous(q.data(), s.num_heads, s.q_len, s.head_dim);
    const void* kd = kv_dtype == DType::kF32 ? static_cast<const void*>(k.data()) : k16.data();
    const void* vd = kv_dtype == DType::kF32 ? static_cast<const void*>(v.data()) : v16.data();
    a.k = ConstAttnView::Contiguous(kd, s.num_kv_heads, s.kv_len, s.head_dim, kv_dtype);
    a.v = ConstAttnView::Contiguous(vd, s.num_kv_heads, s.kv_len, s.head_dim, kv_dtype);
    a.masks = masks;
    a.options = options;
    out.assign(int64_t{s.batch_size} * s.num_heads * s.q_len * s.head_dim, -99.f);
    a.out = interleaved ? AttnView::Interleaved(out.data(), s.num_heads, s.q_len, s.head_dim)
                        : AttnView::Contiguous(out.data(), s.num_heads, s.q_len, s.head_dim);
    int64_t wn = int64_t{s.batch_size} * s.q_len * s.kv_len *
                 (options.weights == AttentionWeightsMode::kPerHead ? s.num_heads : 1);
    weights.assign(options.weights == AttentionWeightsMode::kNone ? 0 : wn, -99.f);
    a.weights = weights.empty() ? nullptr : weights.data();
    return a;
  }
};

void Fill(Problem& p, std::mt19937& rng) {
  const SdpaShape& s = p.shape;
  p.q = RandomVec(int64_t{s.batch_size} * s.num_heads * s.q_len * s.head_dim, rng, -2, 2);
  p.k = RandomVec(int64_t{s.batch_size} * s.num_kv_heads * s.kv_len * s.head_dim, rng, -2, 2);
  p.v = RandomVec(int64_t{s.batch_size} * s.num_kv_heads * s.kv_len * s.head_dim, rng);
  p.k16 = ToBf16(p.k);
  p.v16 = ToBf16(p.v);
}

// Runs the fast path and the reference on the same problem and compares.
void CheckAgainstReference(Problem& p, const std::string& label) {
  std::vector<float> out, weights, ref_out, ref_weights;
  SdpaArgs fast = p.Args(out, weights);
  ASSERT_TRUE(ScaledDotProductAttention(fast).ok()) << label;
  SdpaArgs ref = p.Args(ref_out, ref_weights);
  ASSERT_TRUE(ScaledDotProductAttentionRef(ref).ok()) << label;
  EXPECT_TRUE(AllClose(out, ref_out, 2e-5, 1e-4)) << label;
  if (!weights.empty()) {
    EXPECT_TRUE(AllClose(weights, ref_weights, 1e-6, 1e-4)) << label << " (weights)";
  }
}

Problem RandomProblem(std::mt19937& rng, std::string* label) {
  auto pick = [&](std::vector<int> xs) { return xs[rng() % xs.size()]; };
  Problem p;
  SdpaShape& s = p.shape;
  for (;;) {
    s.batch_size = 1 + rng() % 4;
    s.num_heads = pick({1, 2, 4, 8, 12, 16});
    std::vector<int> divisors;
    for (int h = 1; h <= s.num_heads; ++h)
      if (s.num_heads % h == 0) divisors.push_back(h);
    s.num_kv_heads = pick(divisors);
    s.head_dim = pick({32, 64, 80, 128});
    s.kv_len = 1 + rng() % 300;
    s.q_len = rng() % 3 == 0 ? s.kv_len : 1 + rng() % 300;
    // Keep the double-precision reference affordable.
    if (int64_t{s.batch_size} * s.num_heads * s.q_len * s.kv_len * s.head_dim < 12'000'000) break;
  }
  p.kv_dtype = rng() % 3 == 0 ? DType::kBF16 : DType::kF32;
  p.interleaved = rng() % 4 == 0;
  Fill(p, rng);
  const int B = s.batch_size, nq = s.q_len, nk = s.kv_len;
  std::string masks;
  if (rng() % 3 == 0) {
    for (int b = 0; b < B; ++b) p.key_lengths.push_back(rng() % (nk + 1));
    p.masks.key_lengths = p.key_lengths.data();
    masks += "lengths ";
  }
  if (rng() % 4 == 0) {
    for (int i = 0; i < B * nk; ++i) p.key_allow.push_back(rng() % 5 != 0);
    p.masks.key_allow.data = p.key_allow.data();
    masks += "key_allow ";
  }
  if (rng() % 3 == 0) {
    p.masks.causal = true;
    masks += "causal ";
  }
  if (rng() % 4 == 0) {
    bool per_batch = rng() % 2;
    for (int64_t i = 0; i < (per_batch ? B : 1) * int64_t{nq} * nk; ++i) p.allow.push_back(rng() % 4 != 0);
    p.masks.allow = {p.allow.data(), per_batch};
    masks += per_batch ? "allow[B] " : "allow ";
  }
  if (rng() % 4 == 0) {
    int kind = rng() % 4;  // 0: [Nq,Nk] 1: [B,Nq,Nk] 2: [B,H,Nq,Nk] 3: [H,Nq,Nk]
    const bool per_batch = kind == 1 || kind == 2;
    const bool per_head = kind >= 2;
    int64_t n = int64_t{nq} * nk * (per_batch ? B : 1) * (per_head ? s.num_heads : 1);
    p.additive = RandomVec(n, rng, -3, 3);
    for (auto& x : p.additive)
      if (rng() % 10 == 0) x = -INFINITY;
    p.masks.additive = {p.additive.data(), per_batch, per_head};
    masks += "additive" + std::to_string(kind) + " ";
  }
  int w = rng() % 6;
  p.options.weights = w == 0   ? AttentionWeightsMode::kPerHead
                      : w == 1 ? AttentionWeightsMode::kAveraged
                               : AttentionWeightsMode::kNone;
  if (rng() % 8 == 0) p.options.scale = 0.05f + (rng() % 100) / 100.0f;
  *label = absl::StrCat("B=", B, " Hq=", s.num_heads, " Hkv=", s.num_kv_heads, " Nq=", nq,
                        " Nk=", nk, " d=", s.head_dim, " kv=", DTypeName(p.kv_dtype),
                        p.interleaved ? " interleaved" : "", " masks=[", masks,
                        "] weights=", w, " scale=", p.options.scale);
  return p;
}

TEST(SdpaTest, RandomizedShapesAndMasksMatchReference) {
  std::mt19937 rng(20261202);
  for (int c = 0; c < 200; ++c) {
    std::string label;
    Problem p = RandomProblem(rng, &label);
    SCOPED_TRACE(label);
    CheckAgainstReference(p, label);
    if (HasFailure()) return;
  }
}

// `count` random problems from `seed`, each against the reference.
void CheckRandomProblems(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  for (int c = 0; c < count; ++c) {
    std::string label;
    Problem p = RandomProblem(rng, &label);
    SCOPED_TRACE(label);
    CheckAgainstReference(p, label);
  }
}

TEST(SdpaTest, ScalarMicroKernelsMatchReference) {
  attention_internal::ForceScalarFlashKernel(true);
  CheckRandomProblems(/*seed=*/7, /*count=*/25);
  attention_internal::ForceScalarFlashKernel(false);
}

// On an AVX-512 CPU the randomized test above runs the AVX-512 products;
// this one runs the AVX2 ones there too (elsewhere it repeats the default).
TEST(SdpaTest, Avx2MicroKernelsMatchReferenceOnEveryCpu) {
  EXPECT_STREQ(attention_internal::FlashKernelIsa(), CpuHasAvx512F() ? "avx512" : CpuHasAvx2Fma() ? "avx2" : "scalar");
  attention_internal::DisableAvx512FlashKernel(true);
  CheckRandomProblems(/*seed=*/11, /*count=*/40);
  attention_internal::DisableAvx512FlashKernel(false);
}

Problem Fixed(int B, int hq, int hkv, int nq, int nk, int d, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  Problem p;
  p.shape = {B, hq, hkv, nq, nk, d};
  Fill(p, rng);
  return p;
}

// The AVX-512 prefill path that holds S transposed (32-row blocks, f32 K/V,
// d % 16 == 0, key-limit masks only): block tails (16, 31, 32, 33, 45, 100
// query rows), head sizes outside the randomized set (16, 48), key counts
// across tile edges, zero-length sequences (rows of zeros), and causal with
// Nq != Nk (rows of one block with different last keys). On other CPUs the
// same cases run the other paths.
TEST(SdpaTest, RowBlockPrefillPathMatchesReference) {
  uint32_t seed = 5;
  for (int d : {16, 32, 48, 64}) {
    for (int nq : {16, 31, 32, 33, 45, 100}) {
      for (int nk : {1, 63, 64, 65, 130}) {
        for (int masks = 0; masks < 3; ++masks) {
          Problem p = Fixed(2, 4, 2, nq, nk, d, seed++);
          if (masks != 1) {
            p.key_lengths = {0, std::max(1, nk - 7)};
            p.masks.key_lengths = p.key_lengths.data();
          }
          p.masks.causal = masks >= 1;
          const std::string label = absl::StrCat("d=", d, " Nq=", nq, " Nk=", nk, " masks=", masks);
          SCOPED_TRACE(label);
          CheckAgainstReference(p, label);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(SdpaTest, FullyMaskedRowsGiveZerosNotNan) {
  Problem p = Fixed(2, 4, 2, 6, 5, 32);
  p.key_lengths = {0, 5};  // batch 0: every key is padding
  p.masks.key_lengths = p.key_lengths.data();
  p.allow.assign(6 * 5, 1);
  for (int j = 0; j < 5; ++j) p.allow[3 * 5 + j] = 0;  // query row 3 blocked everywhere
  p.masks.allow = {p.allow.data(), false};
  for (auto mode : {AttentionWeightsMode::kNone, AttentionWeightsMode::kPerHead}) {
    p.options.weights = mode;
    std::vector<float> out, w;
    SdpaArgs a = p.Args(out, w);
    ASSERT_TRUE(ScaledDotProductAttention(a).ok());
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 6; ++i)
        for (int c = 0; c < 32; ++c) {
          float b0 = out[((0 * 4 + h) * 6 + i) * 32 + c];
          float b1 = out[((1 * 4 + h) * 6 + i) * 32 + c];
          ASSERT_EQ(b0, 0.0f);
          ASSERT_FALSE(std::isnan(b1));
          if (i == 3) {
            ASSERT_EQ(b1, 0.0f);
          }
        }
    for (float x : w) ASSERT_FALSE(std::isnan(x));
  }
}

// V[j] = e_j and Q = 0: each output row is the uniform distribution over the
// keys that row can see, so the visible set is read off directly.
std::vector<std::vector<int>> VisibleKeys(int nq, int nk, bool causal) {
  Problem p = Fixed(1, 1, 1, nq, nk, 32);
  std::fill(p.q.begin(), p.q.end(), 0.0f);
  std::fill(p.v.begin(), p.v.end(), 0.0f);
  for (int j = 0; j < nk; ++j) p.v[j * 32 + j] = 1.0f;
  p.masks.causal = causal;
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  EXPECT_TRUE(ScaledDotProductAttention(a).ok());
  std::vector<std::vector<int>> vis(nq);
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j)
      if (out[i * 32 + j] > 0) vis[i].push_back(j);
  return vis;
}

TEST(SdpaTest, CausalOffsetRuleForUnequalLengths) {
  // Nq < Nk (decode chunk): query i sees keys <= i + Nk - Nq.
  auto vis = VisibleKeys(3, 7, true);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(static_cast<int>(vis[i].size()), i + 5) << i;
    EXPECT_EQ(vis[i].back(), i + 4);
  }
  // Nq > Nk: the first Nq - Nk rows see nothing (zeros), then the triangle.
  vis = VisibleKeys(6, 4, true);
  EXPECT_TRUE(vis[0].empty());
  EXPECT_TRUE(vis[1].empty());
  EXPECT_EQ(vis[2].size(), 1u);
  EXPECT_EQ(vis[5].size(), 4u);
  // Not causal: everything visible.
  vis = VisibleKeys(2, 7, false);
  EXPECT_EQ(vis[0].size(), 7u);
}

TEST(SdpaTest, AllowMaskTrueMeansAttend) {
  // Catches an inverted boolean convention.
  Problem p = Fixed(1, 1, 1, 1, 4, 32);
  std::fill(p.q.begin(), p.q.end(), 0.0f);
  std::fill(p.v.begin(), p.v.end(), 0.0f);
  for (int j = 0; j < 4; ++j) p.v[j * 32] = static_cast<float>(j + 1);
  p.allow = {1, 0, 0, 1};  // attend to keys 0 and 3 only
  p.masks.allow = {p.allow.data(), false};
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  EXPECT_NEAR(out[0], (1.0f + 4.0f) / 2, 1e-6);
  p.key_allow = {0, 1, 1, 1};  // and key 0 is padding: only key 3 remains
  p.masks.key_allow.data = p.key_allow.data();
  a = p.Args(out, w);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  EXPECT_NEAR(out[0], 4.0f, 1e-6);
}

TEST(SdpaTest, DefaultScaleIsOneOverSqrtHeadDim) {
  // Two keys, one query: weights = softmax([q·k0, q·k1] / sqrt(d)) by hand.
  const int d = 64;
  Problem p = Fixed(1, 1, 1, 1, 2, d, 3);
  p.options.weights = AttentionWeightsMode::kPerHead;
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  double s0 = 0, s1 = 0;
  for (int c = 0; c < d; ++c) {
    s0 += double(p.q[c]) * p.k[c];
    s1 += double(p.q[c]) * p.k[d + c];
  }
  double scale = 1.0 / std::sqrt(double(d));
  double w0 = 1.0 / (1.0 + std::exp((s1 - s0) * scale));
  EXPECT_NEAR(w[0], w0, 1e-6);
  EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);  // softmax over keys (the last axis)
  EXPECT_FLOAT_EQ(DefaultAttentionScale(64), 0.125f);
}

TEST(SdpaTest, WeightsRowsSumToOneOverKeys) {
  Problem p = Fixed(2, 3, 3, 5, 9, 32);
  p.options.weights = AttentionWeightsMode::kPerHead;
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  for (int r = 0; r < 2 * 3 * 5; ++r) {
    double sum = 0;
    for (int j = 0; j < 9; ++j) sum += w[r * 9 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5) << r;
  }
}

TEST(SdpaTest, GqaEqualsMhaWithRepeatedKv) {
  const int B = 2, hq = 8, hkv = 2, n = 37, d = 64, g = hq / hkv;
  Problem gqa = Fixed(B, hq, hkv, n, n, d, 5);
  gqa.masks.causal = true;
  Problem mha = Fixed(B, hq, hq, n, n, d, 5);
  mha.masks.causal = true;
  mha.q = gqa.q;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < hq; ++h)
      for (int x = 0; x < n * d; ++x) {
        // repeat_interleave: query head h reads KV head h / g.
        mha.k[(b * hq + h) * n * d + x] = gqa.k[(b * hkv + h / g) * n * d + x];
        mha.v[(b * hq + h) * n * d + x] = gqa.v[(b * hkv + h / g) * n * d + x];
      }
  std::vector<float> o1, o2, w;
  SdpaArgs a1 = gqa.Args(o1, w);
  ASSERT_TRUE(ScaledDotProductAttention(a1).ok());
  SdpaArgs a2 = mha.Args(o2, w);
  ASSERT_TRUE(ScaledDotProductAttention(a2).ok());
  EXPECT_TRUE(AllClose(o1, o2, 1e-6, 1e-5));
}

TEST(SdpaTest, LongSequenceScratchDoesNotGrowWithN) {
  // N = 8192 without weights: the kernel's scratch must be the same as at
  // N = 512 (O(tile), not O(N²) — N² floats would be 256 MiB here).
  const int d = 64;
  int64_t bytes[2];
  int lens[2] = {512, 8192};
  for (int t = 0; t < 2; ++t) {
    const int n = lens[t];
    Problem p = Fixed(1, 1, 1, n, n, d, 9);
    SdpaStats stats;
    p.options.stats = &stats;
    std::vector<float> out, w;
    SdpaArgs a = p.Args(out, w);
    ASSERT_TRUE(ScaledDotProductAttention(a).ok());
    bytes[t] = stats.scratch_bytes;
    // Spot-check a few query rows against the reference (one row at a time).
    for (int i : {0, n / 2, n - 1}) {
      Problem row = Fixed(1, 1, 1, 1, n, d);
      row.q.assign(p.q.begin() + int64_t{i} * d, p.q.begin() + int64_t{i + 1} * d);
      row.k = p.k;
      row.v = p.v;
      std::vector<float> rout, rw;
      SdpaArgs ra = row.Args(rout, rw);
      ASSERT_TRUE(ScaledDotProductAttentionRef(ra).ok());
      EXPECT_TRUE(AllClose(out.data() + int64_t{i} * d, rout.data(), d, 2e-5, 1e-4)) << i;
    }
  }
  EXPECT_GT(bytes[0], 0);
  EXPECT_EQ(bytes[1], bytes[0]);
  EXPECT_LT(bytes[1], 4 << 20);
}

TEST(SdpaTest, RejectsBadArguments) {
  Problem p = Fixed(1, 6, 4, 2, 2, 32);  // 6 % 4 != 0
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  absl::Status st = ScaledDotProductAttention(a);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("num_kv_heads"), std::string::npos);

  Problem q = Fixed(2, 2, 2, 2, 3, 32);
  q.key_lengths = {1, 4};  // 4 > Nk
  q.masks.key_lengths = q.key_lengths.data();
  a = q.Args(out, w);
  st = ScaledDotProductAttention(a);
  EXPECT_NE(st.message().find("key_lengths[1]"), std::string::npos);

  Problem r = Fixed(1, 1, 1, 2, 2, 32);
  r.options.weights = AttentionWeightsMode::kPerHead;
  a = r.Args(out, w);
  a.weights = nullptr;
  EXPECT_FALSE(ScaledDotProductAttention(a).ok());
  a = r.Args(out, w);
  a.shape.head_dim = 0;
  EXPECT_FALSE(ScaledDotProductAttention(a).ok());
}

// Each sequence's first row when `lengths` are packed back to back; *total
// gets the rows of all.
std::vector<int64_t> PackedOffsets(const std::vector<int32_t>& lengths, int64_t* total) {
  std::vector<int64_t> offsets(lengths.size());
  *total = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    offsets[b] = *total;
    *total += lengths[b];
  }
  return offsets;
}

// A per-head additive bias shared by the batch ([Hq, Nmax, Nmax], MPNet's
// relative position bias) on ragged rows: each sequence sees the top-left
// [n, n] block of every head's plane, as the reference on that block alone;
// -inf entries block keys, a row of them gives a zero output row. d = 16 and
// the longer sequences take the AVX-512 row-block path where there is one.
TEST(SdpaTest, RaggedBatchWithASharedPerHeadBias) {
  const std::vector<int32_t> lengths = {9, 40, 1, 23};
  const int B = 4, hq = 4, d = 16, nmax = 40;
  int64_t total = 0;
  const std::vector<int64_t> offsets = PackedOffsets(lengths, &total);
  std::mt19937 rng(33);
  const std::vector<float> q = RandomVec(total * hq * d, rng, -2, 2);
  const std::vector<float> k = RandomVec(total * hq * d, rng, -2, 2);
  const std::vector<float> v = RandomVec(total * hq * d, rng);
  std::vector<float> bias = RandomVec(int64_t{hq} * nmax * nmax, rng, -3, 3);
  for (auto& x : bias)
    if (rng() % 10 == 0) x = -INFINITY;
  for (int j = 0; j < nmax; ++j) bias[(int64_t{1} * nmax + 3) * nmax + j] = -INFINITY;  // head 1, query 3: no key
  std::vector<float> out(total * hq * d, -99.f);
  SdpaArgs a;
  a.shape = {B, hq, hq, nmax, nmax, d};
  a.q = ConstAttnView::Interleaved(q.data(), hq, nmax, d);
  a.k = ConstAttnView::Interleaved(k.data(), hq, nmax, d);
  a.v = ConstAttnView::Interleaved(v.data(), hq, nmax, d);
  a.out = AttnView::Interleaved(out.data(), hq, nmax, d);
  a.masks.key_lengths = lengths.data();
  a.masks.additive = {bias.data(), /*per_batch=*/false, /*per_head=*/true};
  a.row_offsets = offsets.data();
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  for (int b = 0; b < B; ++b) {
    const int n = lengths[b];
    std::vector<float> block(int64_t{hq} * n * n);
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) block[(int64_t{h} * n + i) * n + j] = bias[(int64_t{h} * nmax + i) * nmax + j];
    std::vector<float> ref_out(int64_t{n} * hq * d);
    SdpaArgs r;
    r.shape = {1, hq, hq, n, n, d};
    r.q = ConstAttnView::Interleaved(q.data() + offsets[b] * hq * d, hq, n, d);
    r.k = ConstAttnView::Interleaved(k.data() + offsets[b] * hq * d, hq, n, d);
    r.v = ConstAttnView::Interleaved(v.data() + offsets[b] * hq * d, hq, n, d);
    r.out = AttnView::Interleaved(ref_out.data(), hq, n, d);
    r.masks.additive = {block.data(), /*per_batch=*/true, /*per_head=*/true};  // [1, H, n, n]
    ASSERT_TRUE(ScaledDotProductAttentionRef(r).ok());
    const std::vector<float> got(out.begin() + offsets[b] * hq * d, out.begin() + (offsets[b] + n) * hq * d);
    EXPECT_TRUE(AllClose(got, ref_out, 2e-5, 1e-4)) << "sequence " << b;
  }
}

// A bias held by distance (ALiBi's -slope · |j - i|, here random per head
// and distance, some -inf), one [H, 2·Nmax - 1] table for a ragged batch,
// against the reference given the same bias as full [H, n, n] planes, on
// the row-block, AVX2 and scalar paths; and the reference reading the table
// itself agrees.
TEST(SdpaTest, DistanceBiasOnARaggedBatchEqualsFullPlanes) {
  const std::vector<int32_t> lengths = {37, 1, 64, 12};
  const int B = 4, hq = 4, hkv = 2, nmax = 64;
  int64_t total = 0;
  const std::vector<int64_t> offsets = PackedOffsets(lengths, &total);
  for (const auto& [d, no_avx512, scalar] : {std::tuple{16, false, false}, std::tuple{8, false, false},
                                             std::tuple{16, true, false}, std::tuple{16, true, true}}) {
    const std::string label = absl::StrCat("d ", d, no_avx512 ? ", no AVX-512" : "", scalar ? ", scalar" : "");
    std::mt19937 rng(71 + d);
    const std::vector<float> q = RandomVec(total * hq * d, rng, -2, 2);
    const std::vector<float> k = RandomVec(total * hkv * d, rng, -2, 2);
    const std::vector<float> v = RandomVec(total * hkv * d, rng);
    std::vector<float> table = RandomVec(int64_t{hq} * (2 * nmax - 1), rng, -3, 3);
    for (auto& x : table)
      if (rng() % 16 == 0) x = -INFINITY;
    table[nmax - 1] = 0.0f;  // head 0 always sees the diagonal
    std::vector<float> out(total * hq * d, -99.f);
    SdpaArgs a;
    a.shape = {B, hq, hkv, nmax, nmax, d};
    a.q = ConstAttnView::Interleaved(q.data(), hq, nmax, d);
    a.k = ConstAttnView::Interleaved(k.data(), hkv, nmax, d);
    a.v = ConstAttnView::Interleaved(v.data(), hkv, nmax, d);
    a.out = AttnView::Interleaved(out.data(), hq, nmax, d);
    a.masks.key_lengths = lengths.data();
    a.masks.additive = {table.data(), /*per_batch=*/false, /*per_head=*/true, /*by_distance=*/true};
    a.row_offsets = offsets.data();
    attention_internal::DisableAvx512FlashKernel(no_avx512);
    attention_internal::ForceScalarFlashKernel(scalar);
    const absl::Status st = ScaledDotProductAttention(a);
    attention_internal::DisableAvx512FlashKernel(false);
    attention_internal::ForceScalarFlashKernel(false);
    ASSERT_TRUE(st.ok()) << st;
    for (int b = 0; b < B; ++b) {
      const int n = lengths[b];
      std::vector<float> planes(int64_t{hq} * n * n);
      for (int h = 0; h < hq; ++h)
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            planes[(int64_t{h} * n + i) * n + j] = table[int64_t{h} * (2 * nmax - 1) + (j - i + nmax - 1)];
      SdpaArgs r;
      r.shape = {1, hq, hkv, n, n, d};
      r.q = ConstAttnView::Interleaved(q.data() + offsets[b] * hq * d, hq, n, d);
      r.k = ConstAttnView::Interleaved(k.data() + offsets[b] * hkv * d, hkv, n, d);
      r.v = ConstAttnView::Interleaved(v.data() + offsets[b] * hkv * d, hkv, n, d);
      std::vector<float> ref_out(int64_t{n} * hq * d), ref_table_out(int64_t{n} * hq * d);
      r.out = AttnView::Interleaved(ref_out.data(), hq, n, d);
      r.masks.additive = {planes.data(), /*per_batch=*/false, /*per_head=*/true};
      ASSERT_TRUE(ScaledDotProductAttentionRef(r).ok());
      // The reference on this sequence's own table (its rows of Nq + Nk - 1).
      std::vector<float> own(int64_t{hq} * (2 * n - 1));
      for (int h = 0; h < hq; ++h)
        for (int r2 = 0; r2 < 2 * n - 1; ++r2)
          own[int64_t{h} * (2 * n - 1) + r2] = table[int64_t{h} * (2 * nmax - 1) + (r2 - (n - 1) + nmax - 1)];
      r.out = AttnView::Interleaved(ref_table_out.data(), hq, n, d);
      r.masks.additive = {own.data(), /*per_batch=*/false, /*per_head=*/true, /*by_distance=*/true};
      ASSERT_TRUE(ScaledDotProductAttentionRef(r).ok());
      EXPECT_TRUE(AllClose(ref_table_out, ref_out, 1e-6, 1e-6)) << label << ", sequence " << b;
      const std::vector<float> got(out.begin() + offsets[b] * hq * d, out.begin() + (offsets[b] + n) * hq * d);
      EXPECT_TRUE(AllClose(got, ref_out, 2e-5, 1e-4)) << label << ", sequence " << b;
    }
  }
}

// A bidirectional sliding window (ModernBERT's local layers: |i - j| <=
// window) on a ragged batch with GQA, against the reference run on each
// sequence alone: the AVX-512 row-block path (d 16, blocks of 32 rows whose
// windows start at different keys), the AVX2 and scalar job paths (d 8, and
// with AVX-512 off / everything scalar), and the weights path, which must
// give keys outside the window zero weight.
TEST(SdpaTest, SlidingWindowOnARaggedBatchEqualsTheReference) {
  const std::vector<int32_t> lengths = {100, 1, 9, 70};
  const int B = 4, hq = 4, hkv = 2, nmax = 100, window = 8;
  int64_t total = 0;
  const std::vector<int64_t> offsets = PackedOffsets(lengths, &total);
  struct Variant {
    int d;
    bool no_avx512, scalar;
    AttentionWeightsMode mode;
  };
  for (const Variant& var : {Variant{16, false, false, AttentionWeightsMode::kNone},
                             Variant{8, false, false, AttentionWeightsMode::kNone},
                             Variant{16, true, false, AttentionWeightsMode::kNone},
                             Variant{16, true, true, AttentionWeightsMode::kNone},
                             Variant{16, false, false, AttentionWeightsMode::kPerHead}}) {
    const int d = var.d;
    const std::string label = absl::StrCat("d ", d, var.no_avx512 ? ", no AVX-512" : "", var.scalar ? ", scalar" : "",
                                           var.mode == AttentionWeightsMode::kNone ? "" : ", weights");
    std::mt19937 rng(45 + d);
    const std::vector<float> q = RandomVec(total * hq * d, rng, -2, 2);
    const std::vector<float> k = RandomVec(total * hkv * d, rng, -2, 2);
    const std::vector<float> v = RandomVec(total * hkv * d, rng);
    std::vector<float> out(total * hq * d, -99.f);
    std::vector<float> weights(var.mode == AttentionWeightsMode::kNone ? 0 : int64_t{B} * hq * nmax * nmax);
    SdpaArgs a;
    a.shape = {B, hq, hkv, nmax, nmax, d};
    a.q = ConstAttnView::Interleaved(q.data(), hq, nmax, d);
    a.k = ConstAttnView::Interleaved(k.data(), hkv, nmax, d);
    a.v = ConstAttnView::Interleaved(v.data(), hkv, nmax, d);
    a.out = AttnView::Interleaved(out.data(), hq, nmax, d);
    a.masks.key_lengths = lengths.data();
    a.masks.window = window;
    a.row_offsets = offsets.data();
    a.options.weights = var.mode;
    a.weights = weights.empty() ? nullptr : weights.data();
    attention_internal::DisableAvx512FlashKernel(var.no_avx512);
    attention_internal::ForceScalarFlashKernel(var.scalar);
    const absl::Status st = ScaledDotProductAttention(a);
    attention_internal::DisableAvx512FlashKernel(false);
    attention_internal::ForceScalarFlashKernel(false);
    ASSERT_TRUE(st.ok()) << st;
    for (int b = 0; b < B; ++b) {
      const int n = lengths[b];
      std::vector<float> ref_out(int64_t{n} * hq * d);
      std::vector<float> ref_weights(int64_t{hq} * n * n);
      SdpaArgs r;
      r.shape = {1, hq, hkv, n, n, d};
      r.q = ConstAttnView::Interleaved(q.data() + offsets[b] * hq * d, hq, n, d);
      r.k = ConstAttnView::Interleaved(k.data() + offsets[b] * hkv * d, hkv, n, d);
      r.v = ConstAttnView::Interleaved(v.data() + offsets[b] * hkv * d, hkv, n, d);
      r.out = AttnView::Interleaved(ref_out.data(), hq, n, d);
      r.masks.window = window;
      r.options.weights = AttentionWeightsMode::kPerHead;
      r.weights = ref_weights.data();
      ASSERT_TRUE(ScaledDotProductAttentionRef(r).ok());
      const std::vector<float> got(out.begin() + offsets[b] * hq * d, out.begin() + (offsets[b] + n) * hq * d);
      EXPECT_TRUE(AllClose(got, ref_out, 2e-5, 1e-4)) << label << ", sequence " << b;
      if (weights.empty()) continue;
      for (int h = 0; h < hq; ++h) {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            const float w = weights[((int64_t{b} * hq + h) * nmax + i) * nmax + j];
            EXPECT_NEAR(w, ref_weights[(int64_t{h} * n + i) * n + j], 1e-5) << label << " " << b << h << i << j;
            if (std::abs(i - j) > window) {
              EXPECT_EQ(w, 0.0f);
            }
          }
        }
      }
    }
  }
}

TEST(SdpaTest, SlidingWindowNeedsSelfAttention) {
  std::vector<float> x(2 * 3 * 8);
  SdpaArgs a;
  a.shape = {1, 1, 1, 2, 3, 8};
  a.q = ConstAttnView::Interleaved(x.data(), 1, 2, 8);
  a.k = ConstAttnView::Interleaved(x.data(), 1, 3, 8);
  a.v = ConstAttnView::Interleaved(x.data(), 1, 3, 8);
  a.out = AttnView::Interleaved(x.data(), 1, 2, 8);
  a.masks.window = 1;
  const absl::Status st = ScaledDotProductAttention(a);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
}

// Ragged self-attention (row_offsets): sequences packed back to back, no
// padding. Each must equal the reference run on that sequence alone, rows
// past the last sequence must stay untouched, and with weights the rows past
// a sequence's length are zero. f32 and bf16 K/V, the flash and the
// weights paths, GQA.
TEST(SdpaTest, RaggedBatchEqualsEachSequenceAlone) {
  const std::vector<int32_t> lengths = {37, 1, 130, 64};
  const int B = 4, hq = 4, hkv = 2, d = 32, nmax = 130;
  int64_t total = 0;
  const std::vector<int64_t> offsets = PackedOffsets(lengths, &total);
  std::mt19937 rng(21);
  const std::vector<float> q = RandomVec(total * hq * d, rng, -2, 2);
  const std::vector<float> k = RandomVec(total * hkv * d, rng, -2, 2);
  const std::vector<float> v = RandomVec(total * hkv * d, rng);
  const std::vector<uint16_t> k16 = ToBf16(k), v16 = ToBf16(v);
  for (DType kv : {DType::kF32, DType::kBF16})
  for (AttentionWeightsMode mode : {AttentionWeightsMode::kNone, AttentionWeightsMode::kPerHead}) {
    const std::string label = absl::StrCat(DTypeName(kv), mode == AttentionWeightsMode::kNone ? " flash" : " weights");
    const void* kd = kv == DType::kF32 ? static_cast<const void*>(k.data()) : k16.data();
    const void* vd = kv == DType::kF32 ? static_cast<const void*>(v.data()) : v16.data();
    const size_t es = DTypeSize(kv);
    const int64_t guard = 3 * hq * d;  // rows after the last sequence
    std::vector<float> out(total * hq * d + guard, -99.f);
    std::vector<float> weights(mode == AttentionWeightsMode::kNone ? 0 : int64_t{B} * hq * nmax * nmax, -99.f);
    SdpaArgs a;
    a.shape = {B, hq, hkv, nmax, nmax, d};
    a.q = ConstAttnView::Interleaved(q.data(), hq, nmax, d);
    a.k = ConstAttnView::Interleaved(kd, hkv, nmax, d, kv);
    a.v = ConstAttnView::Interleaved(vd, hkv, nmax, d, kv);
    a.out = AttnView::Interleaved(out.data(), hq, nmax, d);
    a.masks.key_lengths = lengths.data();
    a.row_offsets = offsets.data();
    a.options.weights = mode;
    a.weights = weights.empty() ? nullptr : weights.data();
    ASSERT_TRUE(ScaledDotProductAttention(a).ok()) << label;
    for (int64_t i = total * hq * d; i < static_cast<int64_t>(out.size()); ++i) {
      ASSERT_EQ(out[i], -99.f) << label << ": wrote past the last sequence";
    }
    for (int b = 0; b < B; ++b) {
      const int n = lengths[b];
      std::vector<float> ref_out(int64_t{n} * hq * d), ref_w(int64_t{hq} * n * n);
      SdpaArgs r;
      r.shape = {1, hq, hkv, n, n, d};
      r.q = ConstAttnView::Interleaved(q.data() + offsets[b] * hq * d, hq, n, d);
      r.k = ConstAttnView::Interleaved(static_cast<const std::byte*>(kd) + offsets[b] * hkv * d * es, hkv, n, d, kv);
      r.v = ConstAttnView::Interleaved(static_cast<const std::byte*>(vd) + offsets[b] * hkv * d * es, hkv, n, d, kv);
      r.out = AttnView::Interleaved(ref_out.data(), hq, n, d);
      r.options.weights = mode;
      r.weights = mode == AttentionWeightsMode::kNone ? nullptr : ref_w.data();
      ASSERT_TRUE(ScaledDotProductAttentionRef(r).ok());
      const std::vector<float> got(out.begin() + offsets[b] * hq * d, out.begin() + (offsets[b] + n) * hq * d);
      EXPECT_TRUE(AllClose(got, ref_out, 2e-5, 1e-4)) << label << " sequence " << b;
      if (mode == AttentionWeightsMode::kNone) continue;
      for (int h = 0; h < hq; ++h)
        for (int i = 0; i < nmax; ++i)
          for (int j = 0; j < nmax; ++j) {
            const float w = weights[((int64_t{b} * hq + h) * nmax + i) * nmax + j];
            const float want = i < n && j < n ? ref_w[(int64_t{h} * n + i) * n + j] : 0.0f;
            ASSERT_NEAR(w, want, 1e-6) << label << " b=" << b << " h=" << h << " i=" << i << " j=" << j;
          }
    }
  }
  // Ragged needs the lengths, and self-attention.
  SdpaArgs bad;
  bad.shape = {B, hq, hkv, nmax, nmax, d};
  std::vector<float> out(total * hq * d);
  bad.q = ConstAttnView::Interleaved(q.data(), hq, nmax, d);
  bad.k = ConstAttnView::Interleaved(k.data(), hkv, nmax, d);
  bad.v = ConstAttnView::Interleaved(v.data(), hkv, nmax, d);
  bad.out = AttnView::Interleaved(out.data(), hq, nmax, d);
  bad.row_offsets = offsets.data();
  EXPECT_EQ(ScaledDotProductAttention(bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

TEST(SdpaTest, KeyPaddingIsNotCausal) {
  // Catches padding and causal masks confused: 3 valid keys of 5, query 0.
  Problem p = Fixed(1, 1, 1, 5, 5, 32);
  std::fill(p.q.begin(), p.q.end(), 0.0f);
  std::fill(p.v.begin(), p.v.end(), 0.0f);
  for (int j = 0; j < 5; ++j) p.v[j * 32 + j] = 1.0f;
  p.key_lengths = {3};
  p.masks.key_lengths = p.key_lengths.data();
  std::vector<float> out, w;
  SdpaArgs a = p.Args(out, w);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(out[i * 32 + j], j < 3 ? 1.0f / 3 : 0.0f, 1e-6);
}

}  // namespace
}  // namespace attnserve
