// Golden tests against PyTorch 2.13 (fixtures from
// tools/golden/attention_make_fixtures.py; versions in versions.json).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/attention/multi_head_attention.h"
#include "engine/attention/sdpa.h"
#include "engine/attention/torch_compat.h"
#include "engine/core/tensor.h"
#include "gtest/gtest.h"
#include "tests/engine/attention/attention_test_util.h"
#include "tests/testing/npy.h"

namespace attnserve {
namespace {

using testing_util::AllClose;
using testing_util::NpyArray;
using testing_util::ReadNpy;

std::string Dir(const std::string& c) {
  return std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/attention/" + c + "/";
}

NpyArray Load(const std::string& c, const std::string& name) {
  auto a = ReadNpy(Dir(c) + name + ".npy");
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : NpyArray{};
}

bool Has(const std::string& c, const std::string& name) {
  return ReadNpy(Dir(c) + name + ".npy").ok();
}

Tensor ToTensor(const NpyArray& a) {
  Tensor t = Tensor::Empty(a.shape);
  EXPECT_EQ(a.descr, "<f4");
  std::memcpy(t.raw(), a.data.data(), t.bytes());
  return t;
}

struct MhaRun {
  std::vector<float> out, weights, weights_avg;
};

void RunMhaCase(const std::string& c) {
  SCOPED_TRACE(c);
  std::vector<int32_t> cfg = Load(c, "config").As<int32_t>();
  ASSERT_EQ(cfg.size(), 7u);
  const int embed = cfg[0], heads = cfg[1], kdim = cfg[2], vdim = cfg[3], B = cfg[4], nq = cfg[5],
            nk = cfg[6];
  TensorMap sd;
  for (const char* name : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias",
                           "q_proj_weight", "k_proj_weight", "v_proj_weight"}) {
    if (Has(c, std::string("sd.") + name)) sd.emplace(name, ToTensor(Load(c, std::string("sd.") + name)));
  }
  auto mha = MultiHeadAttention::FromStateDict({embed, heads, kdim, vdim}, sd);
  ASSERT_TRUE(mha.ok()) << mha.status();
  std::vector<float> q = Load(c, "query").As<float>();
  std::vector<float> k = Load(c, "key").As<float>();
  std::vector<float> v = Load(c, "value").As<float>();
  const bool self = q == k && k == v && nq == nk;
  MultiHeadAttention::Inputs in;
  in.query = q.data();
  in.key = self ? q.data() : k.data();
  in.value = self ? q.data() : v.data();
  in.batch_size = B;
  in.q_len = nq;
  in.kv_len = nk;
  std::vector<uint8_t> key_allow, allow;
  std::vector<float> additive;
  if (Has(c, "key_padding_mask")) {
    NpyArray m = Load(c, "key_padding_mask");  // torch: True = padding
    key_allow = AllowFromTorchMhaMask(reinterpret_cast<const uint8_t*>(m.data.data()), m.numel());
    in.masks.key_allow.data = key_allow.data();
  }
  if (Has(c, "attn_mask")) {
    NpyArray m = Load(c, "attn_mask");
    if (m.descr == "<f4") {
      additive = m.As<float>();
      in.masks.additive.data = additive.data();
    } else {  // torch MHA bool: True = blocked
      allow = AllowFromTorchMhaMask(reinterpret_cast<const uint8_t*>(m.data.data()), m.numel());
      in.masks.allow.data = allow.data();
    }
  }
  std::vector<float> want_out = Load(c, "out").As<float>();
  std::vector<float> want_w = Load(c, "weights").As<float>();
  std::vector<float> want_avg = Load(c, "weights_avg").As<float>();
  ASSERT_EQ(want_w.size(), size_t(B) * heads * nq * nk);

  std::vector<float> out(want_out.size()), w(want_w.size()), avg(want_avg.size());
  in.weights_mode = AttentionWeightsMode::kPerHead;
  ASSERT_TRUE(mha->Forward(in, out.data(), w.data()).ok());
  EXPECT_TRUE(AllClose(out, want_out, 1e-5, 1e-5)) << "out (weights path)";
  EXPECT_TRUE(AllClose(w, want_w, 1e-6, 1e-5)) << "per-head weights";
  in.weights_mode = AttentionWeightsMode::kAveraged;
  ASSERT_TRUE(mha->Forward(in, out.data(), avg.data()).ok());
  EXPECT_TRUE(AllClose(avg, want_avg, 1e-6, 1e-5)) << "averaged weights";
  in.weights_mode = AttentionWeightsMode::kNone;
  std::fill(out.begin(), out.end(), 0.f);
  ASSERT_TRUE(mha->Forward(in, out.data()).ok());
  EXPECT_TRUE(AllClose(out, want_out, 1e-5, 1e-5)) << "out (flash path)";
}

TEST(GoldenMhaTest, SelfAttention128x4) { RunMhaCase("mha_self_128x4"); }
TEST(GoldenMhaTest, CausalMask64x4) { RunMhaCase("mha_causal_64x4"); }
TEST(GoldenMhaTest, KeyPadding64x4) { RunMhaCase("mha_padding_64x4"); }
TEST(GoldenMhaTest, CrossAttention128x8) { RunMhaCase("mha_cross_128x8"); }
TEST(GoldenMhaTest, SeparateProjectionsKdimVdim) { RunMhaCase("mha_kdim_vdim_64x4"); }
TEST(GoldenMhaTest, AdditiveFloatMask) { RunMhaCase("mha_float_mask_32x2"); }

void RunSdpaCase(const std::string& c, double rtol, double atol) {
  SCOPED_TRACE(c);
  std::vector<int32_t> cfg = Load(c, "config").As<int32_t>();
  ASSERT_EQ(cfg.size(), 7u);
  SdpaArgs a;
  a.shape = {cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5]};
  const SdpaShape& s = a.shape;
  a.masks.causal = cfg[6] != 0;
  std::vector<float> q = Load(c, "q").As<float>(), k, v;
  std::vector<uint16_t> k16, v16;
  a.q = ConstAttnView::Contiguous(q.data(), s.num_heads, s.q_len, s.head_dim);
  if (Has(c, "k_bf16")) {
    k16 = Load(c, "k_bf16").As<uint16_t>();
    v16 = Load(c, "v_bf16").As<uint16_t>();
    a.k = ConstAttnView::Contiguous(k16.data(), s.num_kv_heads, s.kv_len, s.head_dim, DType::kBF16);
    a.v = ConstAttnView::Contiguous(v16.data(), s.num_kv_heads, s.kv_len, s.head_dim, DType::kBF16);
  } else {
    k = Load(c, "k").As<float>();
    v = Load(c, "v").As<float>();
    a.k = ConstAttnView::Contiguous(k.data(), s.num_kv_heads, s.kv_len, s.head_dim);
    a.v = ConstAttnView::Contiguous(v.data(), s.num_kv_heads, s.kv_len, s.head_dim);
  }
  std::vector<uint8_t> allow;
  if (Has(c, "attn_mask")) {  // SDPA bool mask [B, 1, Nq, Nk]: True = may attend
    NpyArray m = Load(c, "attn_mask");
    allow = AllowFromTorchSdpaMask(reinterpret_cast<const uint8_t*>(m.data.data()), m.numel());
    a.masks.allow = {allow.data(), m.shape[0] > 1};
  }
  if (Has(c, "scale")) a.options.scale = Load(c, "scale").As<float>()[0];
  std::vector<float> want = Load(c, "out").As<float>();
  std::vector<float> out(want.size());
  a.out = AttnView::Contiguous(out.data(), s.num_heads, s.q_len, s.head_dim);
  ASSERT_TRUE(ScaledDotProductAttention(a).ok());
  EXPECT_TRUE(AllClose(out, want, atol, rtol));
}

TEST(GoldenSdpaTest, GqaMatchesEnableGqa) { RunSdpaCase("sdpa_gqa_8x2", 1e-5, 1e-5); }
TEST(GoldenSdpaTest, MqaCausal) { RunSdpaCase("sdpa_mqa_causal", 1e-5, 1e-5); }
TEST(GoldenSdpaTest, BoolAllowMaskCross) { RunSdpaCase("sdpa_bool_mask_cross", 1e-5, 1e-5); }
TEST(GoldenSdpaTest, ScaleOverride) { RunSdpaCase("sdpa_scale_override", 1e-5, 1e-5); }
TEST(GoldenSdpaTest, Bf16KvWithinBf16Tolerance) { RunSdpaCase("sdpa_bf16_kv_gqa", 1e-2, 1e-2); }

}  // namespace
}  // namespace attnserve
