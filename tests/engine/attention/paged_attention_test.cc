#include "engine/attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/attention/attention_ref.h"
#include "engine/core/half.h"
#include "gtest/gtest.h"
#include "tests/engine/attention/attention_test_util.h"

namespace attnserve {
namespace {

using testing_util::AllClose;
using testing_util::RandomVec;

// A block pool written in the KvLayout format, plus each sequence's dense
// K/V ([Hkv, L, d]) for the reference.
struct PagedFixture {
  KvLayout layout;
  int num_heads = 0;
  std::vector<std::byte> pool;
  int32_t pool_blocks = 0;
  std::vector<std::vector<int32_t>> tables;
  std::vector<PagedKvSequence> seqs;
  std::vector<int32_t> query_start;
  std::vector<std::vector<float>> dense_k, dense_v;  // bf16-rounded when dtype is bf16
  std::vector<float> q;

  void Write(int32_t block, int kv_head, int row, bool is_v, const float* src) {
    const int64_t off = (is_v ? layout.VOffset(kv_head, row) : layout.KOffset(kv_head, row));
    std::byte* base = pool.data() + int64_t{block} * layout.BlockBytes();
    if (layout.dtype == DType::kF32) {
      std::memcpy(base + off * 4, src, layout.head_dim * 4);
    } else {
      auto* dst = reinterpret_cast<uint16_t*>(base) + off;
      ConvertF32ToBf16(src, dst, layout.head_dim);
    }
  }
};

PagedFixture MakeFixture(std::mt19937& rng, int hq, int hkv, int d, int block_size, DType dtype,
                         const std::vector<int>& lens, const std::vector<int>& new_tokens) {
  PagedFixture f;
  f.layout = {hkv, d, block_size, dtype};
  f.num_heads = hq;
  const int num_seqs = static_cast<int>(lens.size());
  int total_blocks = 0;
  for (int L : lens) total_blocks += (L + block_size - 1) / block_size + 1;  // + a spare
  f.pool_blocks = total_blocks + 3;
  f.pool.assign(f.pool_blocks * f.layout.BlockBytes(), std::byte{0x7f});  // garbage-ish fill
  // Shuffled block ids: tables are neither contiguous nor in order.
  std::vector<int32_t> ids(f.pool_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  int next = 0;
  f.query_start.push_back(0);
  for (int s = 0; s < num_seqs; ++s) {
    const int L = lens[s];
    const int nb = (L + block_size - 1) / block_size + 1;
    f.tables.emplace_back(ids.begin() + next, ids.begin() + next + nb);
    next += nb;
    std::vector<float> k = RandomVec(int64_t{hkv} * L * d, rng, -2, 2);
    std::vector<float> v = RandomVec(int64_t{hkv} * L * d, rng);
    for (int h = 0; h < hkv; ++h)
      for (int p = 0; p < L; ++p) {
        const int32_t block = f.tables[s][p / block_size];
        f.Write(block, h, p % block_size, false, &k[(int64_t{h} * L + p) * d]);
        f.Write(block, h, p % block_size, true, &v[(int64_t{h} * L + p) * d]);
      }
    if (dtype == DType::kBF16) {
      for (auto& x : k) x = Bf16ToFloat(FloatToBf16(x));
      for (auto& x : v) x = Bf16ToFloat(FloatToBf16(x));
    }
    f.dense_k.push_back(std::move(k));
    f.dense_v.push_back(std::move(v));
    f.query_start.push_back(f.query_start.back() + new_tokens[s]);
  }
  for (int s = 0; s < num_seqs; ++s)
    f.seqs.push_back({f.tables[s].data(), static_cast<int>(f.tables[s].size()), lens[s]});
  f.q = RandomVec(int64_t{f.query_start.back()} * hq * d, rng, -2, 2);
  return f;
}

// Reference: for each sequence, dense causal SDPA with Nq = n new tokens and
// Nk = num_tokens (the same offset rule), Q/out read as [n, Hq, d]. With a
// sliding window (> 0) the causal rule becomes an explicit allow mask: new
// token t at position p = num_tokens - n + t sees keys p - window < j <= p,
// transformers' sliding_window_overlay.
std::vector<float> Reference(const PagedFixture& f, int window = 0) {
  const int d = f.layout.head_dim, hq = f.num_heads, hkv = f.layout.num_kv_heads;
  std::vector<float> out(f.q.size());
  for (size_t s = 0; s < f.seqs.size(); ++s) {
    const int n = f.query_start[s + 1] - f.query_start[s];
    if (n == 0) continue;
    const int L = f.seqs[s].num_tokens;
    SdpaArgs a;
    a.shape = {1, hq, hkv, n, L, d};
    const int64_t off = int64_t{f.query_start[s]} * hq * d;
    a.q = ConstAttnView::Interleaved(f.q.data() + off, hq, n, d);
    a.k = ConstAttnView::Contiguous(f.dense_k[s].data(), hkv, L, d);
    a.v = ConstAttnView::Contiguous(f.dense_v[s].data(), hkv, L, d);
    std::vector<uint8_t> allow;
    if (window > 0) {
      allow.assign(int64_t{n} * L, 0);
      for (int t = 0; t < n; ++t) {
        const int p = L - n + t;
        for (int j = std::max(0, p - window + 1); j <= p; ++j) allow[int64_t{t} * L + j] = 1;
      }
      a.masks.allow = {allow.data(), false};
    } else {
      a.masks.causal = true;
    }
    a.out = AttnView::Interleaved(out.data() + off, hq, n, d);
    EXPECT_TRUE(ScaledDotProductAttentionRef(a).ok());
  }
  return out;
}

PagedAttentionArgs ArgsFor(const PagedFixture& f, std::vector<float>& out) {
  out.assign(f.q.size(), -99.f);
  PagedAttentionArgs a;
  a.num_heads = f.num_heads;
  a.q = f.q.data();
  a.out = out.data();
  a.kv = {&f.layout, f.pool.data(), f.pool_blocks};
  a.seqs = f.seqs.data();
  a.query_start = f.query_start.data();
  a.num_seqs = static_cast<int>(f.seqs.size());
  return a;
}

TEST(PagedAttentionTest, RaggedBatchMatchesDenseReference) {
  std::mt19937 rng(11);
  struct Cfg {
    int hq, hkv, d, block;
  };
  for (Cfg c : {Cfg{4, 4, 32, 16}, Cfg{8, 2, 64, 16}, Cfg{8, 1, 128, 32}, Cfg{12, 4, 80, 8},
                Cfg{16, 8, 64, 128}, Cfg{2, 1, 32, 5}, Cfg{32, 8, 128, 16},
                // Heads of 8 (stories260K: 8 over 4), with groups of 4 and 8 and blocks of 5.
                Cfg{8, 4, 8, 16}, Cfg{8, 2, 8, 5}, Cfg{16, 2, 8, 16}}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      const int num_seqs = 1 + rng() % 5;
      std::vector<int> lens, news;
      for (int s = 0; s < num_seqs; ++s) {
        int L = 1 + rng() % 300;
        lens.push_back(L);
        news.push_back(std::min<int>(L, rng() % 3 == 0 ? 1 + rng() % 7 : 1));  // decode or chunk
      }
      PagedFixture f = MakeFixture(rng, c.hq, c.hkv, c.d, c.block, dtype, lens, news);
      std::vector<float> out;
      ASSERT_TRUE(PagedAttention(ArgsFor(f, out)).ok());
      EXPECT_TRUE(AllClose(out, Reference(f), 2e-5, 1e-4))
          << "Hq=" << c.hq << " Hkv=" << c.hkv << " d=" << c.d << " block=" << c.block << " "
          << DTypeName(dtype);
    }
  }
}

// Sliding windows (Mistral, Qwen2 with use_sliding_window): every kernel
// path — heads of 8, the decode kernel (f32 and bf16, 1-8 rows), the tiled
// path for prefill chunks — skips the keys before the window, including
// windows of one key, windows that start mid-block and mid-chunk, and
// windows longer than the sequence.
TEST(PagedAttentionTest, SlidingWindowMatchesMaskedReference) {
  std::mt19937 rng(14);
  struct Cfg {
    int hq, hkv, d, block;
  };
  for (Cfg c : {Cfg{8, 4, 8, 16}, Cfg{8, 2, 8, 5}, Cfg{4, 2, 16, 4}, Cfg{8, 2, 64, 16}, Cfg{8, 8, 32, 16},
                Cfg{16, 2, 128, 32}}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int window : {1, 3, 16, 17, 70, 1000}) {
        const int num_seqs = 1 + rng() % 4;
        std::vector<int> lens, news;
        for (int s = 0; s < num_seqs; ++s) {
          const int L = 1 + rng() % 400;
          lens.push_back(L);
          // Decode (1), a GQA decode pair (2), or a prefill chunk of up to 40.
          const int kind = rng() % 3;
          news.push_back(std::min<int>(L, kind == 0 ? 1 : kind == 1 ? 2 : 1 + rng() % 40));
        }
        PagedFixture f = MakeFixture(rng, c.hq, c.hkv, c.d, c.block, dtype, lens, news);
        std::vector<float> out;
        PagedAttentionArgs args = ArgsFor(f, out);
        args.window = window;
        ASSERT_TRUE(PagedAttention(args).ok());
        EXPECT_TRUE(AllClose(out, Reference(f, window), 2e-5, 1e-4))
            << "Hq=" << c.hq << " Hkv=" << c.hkv << " d=" << c.d << " block=" << c.block << " "
            << DTypeName(dtype) << " window=" << window;
      }
    }
  }
}

// Gemma 2's score cap: softcap * tanh(scaled score / softcap) before the
// causal / window rule and the softmax, against a scalar reference written
// from that formula (decode rows, GQA pairs and prefill chunks, with and
// without a window).
TEST(PagedAttentionTest, SoftcapMatchesScalarReference) {
  std::mt19937 rng(15);
  for (int window : {0, 5}) {
    for (float cap : {0.5f, 3.0f}) {
      PagedFixture f = MakeFixture(rng, 8, 2, 32, 4, DType::kF32, {30, 1, 57, 9}, {1, 1, 13, 2});
      std::vector<float> out;
      PagedAttentionArgs args = ArgsFor(f, out);
      args.window = window;
      args.softcap = cap;
      ASSERT_TRUE(PagedAttention(args).ok());
      const int d = 32, hq = 8, group = 4;
      const float scale = 1.0f / std::sqrt(static_cast<float>(d));
      std::vector<float> want(out.size());
      for (size_t s = 0; s < f.seqs.size(); ++s) {
        const int L = f.seqs[s].num_tokens, n = f.query_start[s + 1] - f.query_start[s];
        for (int t = 0; t < n; ++t) {
          const int p = L - n + t;
          const int first = window > 0 ? std::max(0, p - window + 1) : 0;
          for (int h = 0; h < hq; ++h) {
            const float* q = &f.q[(int64_t{f.query_start[s] + t} * hq + h) * d];
            const float* k = &f.dense_k[s][int64_t{h / group} * L * d];
            const float* v = &f.dense_v[s][int64_t{h / group} * L * d];
            std::vector<double> w(p + 1, 0.0);
            double max_w = -1e300, sum = 0.0;
            for (int j = first; j <= p; ++j) {
              double dot = 0.0;
              for (int c = 0; c < d; ++c) dot += double{q[c]} * k[int64_t{j} * d + c];
              w[j] = cap * std::tanh(dot * scale / cap);
              max_w = std::max(max_w, w[j]);
            }
            for (int j = first; j <= p; ++j) sum += (w[j] = std::exp(w[j] - max_w));
            float* o = &want[(int64_t{f.query_start[s] + t} * hq + h) * d];
            for (int c = 0; c < d; ++c) {
              double acc = 0.0;
              for (int j = first; j <= p; ++j) acc += w[j] * v[int64_t{j} * d + c];
              o[c] = static_cast<float>(acc / sum);
            }
          }
        }
      }
      EXPECT_TRUE(AllClose(out, want, 2e-5, 1e-4)) << "cap=" << cap << " window=" << window;
      // And the cap changes the answer (the scores here exceed it).
      std::vector<float> uncapped;
      PagedAttentionArgs plain = ArgsFor(f, uncapped);
      plain.window = window;
      ASSERT_TRUE(PagedAttention(plain).ok());
      EXPECT_FALSE(AllClose(uncapped, want, 2e-5, 1e-4)) << "cap=" << cap;
    }
  }
}

TEST(PagedAttentionTest, SequenceWithNoNewTokensIsSkipped) {
  std::mt19937 rng(12);
  PagedFixture f = MakeFixture(rng, 4, 2, 32, 16, DType::kF32, {20, 33, 7}, {1, 0, 3});
  std::vector<float> out;
  ASSERT_TRUE(PagedAttention(ArgsFor(f, out)).ok());
  EXPECT_TRUE(AllClose(out, Reference(f), 2e-5, 1e-4));
}

TEST(PagedAttentionTest, RejectsInconsistentBatches) {
  std::mt19937 rng(13);
  PagedFixture f = MakeFixture(rng, 4, 2, 32, 16, DType::kF32, {20, 33}, {1, 2});
  std::vector<float> out;
  PagedAttentionArgs a = ArgsFor(f, out);
  a.num_heads = 3;
  EXPECT_EQ(PagedAttention(a).code(), absl::StatusCode::kInvalidArgument);
  a = ArgsFor(f, out);
  f.tables[1][0] = f.pool_blocks + 5;
  absl::Status st = PagedAttention(a);
  EXPECT_NE(st.message().find("block_table[0]"), std::string::npos) << st;
  f.tables[1][0] = 0;
  f.seqs[0].num_tokens = 1000;  // more than its blocks hold
  st = PagedAttention(a);
  EXPECT_NE(st.message().find("cannot hold"), std::string::npos) << st;
  f.seqs[0].num_tokens = 20;
  f.query_start[1] = 25;  // 25 new tokens > 20 cached
  st = PagedAttention(a);
  EXPECT_NE(st.message().find("new queries"), std::string::npos) << st;
  f.query_start[1] = 1;
  a.window = -1;
  st = PagedAttention(a);
  EXPECT_NE(st.message().find("window -1"), std::string::npos) << st;
  a.window = 0;
  a.softcap = -1.0f;
  st = PagedAttention(a);
  EXPECT_NE(st.message().find("softcap -1"), std::string::npos) << st;
}

TEST(KvLayoutTest, OffsetsAndSizes) {
  KvLayout L{8, 128, 16, DType::kBF16};
  EXPECT_EQ(L.BlockElems(), 2 * 8 * 16 * 128);
  EXPECT_EQ(L.BlockBytes(), 2 * 8 * 16 * 128 * 2);
  EXPECT_EQ(L.KOffset(1, 2), (16 + 2) * 128);
  EXPECT_EQ(L.VOffset(0, 0), 8 * 16 * 128);
  EXPECT_TRUE(L.Validate().ok());
  EXPECT_FALSE((KvLayout{0, 128, 16, DType::kF32}).Validate().ok());
  EXPECT_FALSE((KvLayout{8, 128, 16, DType::kF16}).Validate().ok());
}

}  // namespace
}  // namespace attnserve
