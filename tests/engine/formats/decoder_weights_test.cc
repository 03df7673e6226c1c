#include "engine/formats/decoder_weights.h"

#include <cstring>
#include <string>

#include "engine/core/half.h"
#include "engine/formats/decoder_config.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/";
const std::string kStories = std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";

struct Loaded {
  DecoderConfig config;
  DecoderWeights weights;
};

Loaded FromGguf(const std::string& path, DType dtype) {
  auto g = GgufFile::Open(path);
  EXPECT_TRUE(g.ok()) << g.status();
  auto c = DecoderConfigFromGguf(**g);
  EXPECT_TRUE(c.ok()) << c.status();
  auto w = LoadDecoderWeightsFromGguf(**g, *c, dtype);
  EXPECT_TRUE(w.ok()) << w.status();
  return {*c, std::move(*w)};
}

Loaded FromHf(const std::string& dir, DType dtype) {
  auto hf = HfConfig::Read(dir);
  EXPECT_TRUE(hf.ok()) << hf.status();
  auto c = DecoderConfigFromHf(*hf);
  EXPECT_TRUE(c.ok()) << c.status();
  auto a = SafetensorsArchive::OpenDirectory(dir);
  EXPECT_TRUE(a.ok()) << a.status();
  auto w = LoadDecoderWeightsFromHf(**a, *c, dtype);
  EXPECT_TRUE(w.ok()) << w.status();
  return {*c, std::move(*w)};
}

void ExpectSame(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << what;
}

// Undo convert_hf_to_gguf.py's permutation: GGUF row (h, j, t) of a head
// [n_head, d/2, 2] layout came from HF row (h, t, j) of [n_head, 2, d/2].
Tensor Unpermute(const Tensor& w, int n_head) {
  const int64_t rows = w.dim(0), cols = w.dim(1), d = rows / n_head;
  Tensor out = Tensor::Empty({rows, cols});
  for (int h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < d / 2; ++j)
      for (int t = 0; t < 2; ++t) {
        const int64_t src = h * d + j * 2 + t, dst = h * d + t * (d / 2) + j;
        std::memcpy(out.f32() + dst * cols, w.f32() + src * cols, cols * 4);
      }
  return out;
}

TEST(DecoderWeightsTest, Stories260K) {
  Loaded m = FromGguf(kStories, DType::kF32);
  EXPECT_EQ(m.weights.layers.size(), 5u);
  EXPECT_EQ(m.weights.token_embedding.shape(), (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(m.weights.layers[0].k_weight.shape(), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(m.weights.layers[0].gate_weight.shape(), (std::vector<int64_t>{172, 64}));
  ExpectSame(m.weights.LmHead(), m.weights.token_embedding, "output is a copy of token_embd");
  // 292.8 K parameters as llama.cpp reports (README): all f32 here.
  EXPECT_EQ(m.weights.TotalBytes(), 4 * (260032 + 512 * 64));
}

TEST(DecoderWeightsTest, LlamaGgufIsHfWithPermutedQk) {
  Loaded hf = FromHf(kModels + "llama_tiny", DType::kF32);
  Loaded gg = FromGguf(kModels + "llama_tiny/model.gguf", DType::kF32);
  ExpectSame(hf.weights.token_embedding, gg.weights.token_embedding, "embedding");
  ExpectSame(hf.weights.lm_head, gg.weights.lm_head, "lm_head");
  ExpectSame(hf.weights.final_norm_weight, gg.weights.final_norm_weight, "final norm");
  for (size_t i = 0; i < hf.weights.layers.size(); ++i) {
    const DecoderLayerWeights& a = hf.weights.layers[i];
    const DecoderLayerWeights& b = gg.weights.layers[i];
    ExpectSame(a.q_weight, Unpermute(b.q_weight, 4), "q");
    ExpectSame(a.k_weight, Unpermute(b.k_weight, 2), "k");
    EXPECT_NE(std::memcmp(a.q_weight.raw(), b.q_weight.raw(), a.q_weight.bytes()), 0) << "GGUF q is permuted";
    for (auto [x, y, what] : {std::tuple{&a.v_weight, &b.v_weight, "v"}, {&a.o_weight, &b.o_weight, "o"},
                              {&a.gate_weight, &b.gate_weight, "gate"}, {&a.up_weight, &b.up_weight, "up"},
                              {&a.down_weight, &b.down_weight, "down"},
                              {&a.attn_norm_weight, &b.attn_norm_weight, "attn norm"},
                              {&a.mlp_norm_weight, &b.mlp_norm_weight, "mlp norm"}}) {
      ExpectSame(*x, *y, what);
    }
  }
}

TEST(DecoderWeightsTest, Qwen2BiasesMatchAcrossFormats) {
  Loaded hf = FromHf(kModels + "qwen2_tiny", DType::kF32);
  Loaded gg = FromGguf(kModels + "qwen2_tiny/model.gguf", DType::kF32);
  for (size_t i = 0; i < hf.weights.layers.size(); ++i) {
    ExpectSame(hf.weights.layers[i].q_weight, gg.weights.layers[i].q_weight, "q (qwen2 is not permuted)");
    ExpectSame(hf.weights.layers[i].q_bias, gg.weights.layers[i].q_bias, "q bias");
    ExpectSame(hf.weights.layers[i].k_bias, gg.weights.layers[i].k_bias, "k bias");
    ExpectSame(hf.weights.layers[i].v_bias, gg.weights.layers[i].v_bias, "v bias");
    EXPECT_TRUE(hf.weights.layers[i].o_bias.empty());
  }
}

TEST(DecoderWeightsTest, Qwen3QkNormsMatchAcrossFormats) {
  Loaded hf = FromHf(kModels + "qwen3_tiny", DType::kF32);
  Loaded gg = FromGguf(kModels + "qwen3_tiny/model.gguf", DType::kF32);
  for (size_t i = 0; i < hf.weights.layers.size(); ++i) {
    const DecoderLayerWeights& a = hf.weights.layers[i];
    ASSERT_EQ(a.q_norm_weight.shape(), (std::vector<int64_t>{32}));
    ExpectSame(a.q_norm_weight, gg.weights.layers[i].q_norm_weight, "q_norm");
    ExpectSame(a.k_norm_weight, gg.weights.layers[i].k_norm_weight, "k_norm");
    ExpectSame(a.q_weight, gg.weights.layers[i].q_weight, "q (qwen3 is not permuted)");
    EXPECT_EQ(a.q_weight.shape(), (std::vector<int64_t>{128, 64}));  // 4 heads of 32 over hidden 64
  }
  // A file without the norms is refused, naming the missing tensor.
  auto g = GgufFile::Open(kModels + "qwen2_tiny/model.gguf");
  ASSERT_TRUE(g.ok());
  auto c = DecoderConfigFromGguf(**g);
  ASSERT_TRUE(c.ok());
  c->qk_norm = true;
  c->qkv_bias = false;
  absl::Status s = LoadDecoderWeightsFromGguf(**g, *c, DType::kF32).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("blk.0.attn_q_norm.weight"));
}

TEST(DecoderWeightsTest, Gpt2ConvWeightsTransposedAndSplit) {
  Loaded hf = FromHf(kModels + "gpt2_tiny", DType::kF32);
  Loaded gg = FromGguf(kModels + "gpt2_tiny/model.gguf", DType::kF32);
  ExpectSame(hf.weights.position_embedding, gg.weights.position_embedding, "wpe");
  for (size_t i = 0; i < hf.weights.layers.size(); ++i) {
    const DecoderLayerWeights& a = hf.weights.layers[i];
    const DecoderLayerWeights& b = gg.weights.layers[i];
    for (auto [x, y, what] : {std::tuple{&a.q_weight, &b.q_weight, "q"}, {&a.k_weight, &b.k_weight, "k"},
                              {&a.v_weight, &b.v_weight, "v"}, {&a.q_bias, &b.q_bias, "q bias"},
                              {&a.v_bias, &b.v_bias, "v bias"}, {&a.o_weight, &b.o_weight, "o"},
                              {&a.up_weight, &b.up_weight, "up"}, {&a.down_weight, &b.down_weight, "down"},
                              {&a.mlp_norm_bias, &b.mlp_norm_bias, "ln_2 bias"}}) {
      ExpectSame(*x, *y, what);
    }
  }
  EXPECT_EQ(hf.weights.layers[0].up_weight.shape(), (std::vector<int64_t>{128, 64}));
  EXPECT_TRUE(hf.weights.lm_head.empty());
  EXPECT_EQ(&hf.weights.LmHead(), &hf.weights.token_embedding);
}

TEST(DecoderWeightsTest, Bf16StorageRoundsEachWeight) {
  Loaded f = FromGguf(kModels + "llama_tiny/model.gguf", DType::kF32);
  Loaded b = FromGguf(kModels + "llama_tiny/model.gguf", DType::kBF16);
  const Tensor& x = f.weights.layers[1].down_weight;
  const Tensor& y = b.weights.layers[1].down_weight;
  ASSERT_EQ(y.dtype(), DType::kBF16);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.u16()[i], FloatToBf16(x.f32()[i]));
  EXPECT_EQ(b.weights.layers[1].attn_norm_weight.dtype(), DType::kF32);  // vectors stay f32
  // Q8_0 dequantised to bf16 is accepted too.
  Loaded q = FromGguf(kModels + "llama_tiny/model-q8_0.gguf", DType::kBF16);
  EXPECT_EQ(q.weights.layers[0].q_weight.dtype(), DType::kBF16);
}

TEST(DecoderWeightsTest, ShapeMismatchNamesTheTensor) {
  auto g = GgufFile::Open(kModels + "llama_tiny/model.gguf");
  ASSERT_TRUE(g.ok());
  auto c = DecoderConfigFromGguf(**g);
  ASSERT_TRUE(c.ok());
  DecoderConfig wrong = *c;
  wrong.intermediate_size = 100;
  absl::Status s = LoadDecoderWeightsFromGguf(**g, wrong, DType::kF32).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("blk.0.ffn_gate.weight"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("[100, 64]"));
  DecoderConfig bias = *c;
  bias.qkv_bias = true;
  s = LoadDecoderWeightsFromGguf(**g, bias, DType::kF32).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("blk.0.attn_q.bias"));
  EXPECT_FALSE(LoadDecoderWeightsFromGguf(**g, *c, DType::kF16).ok());
  // Validation catches hand-built weights that disagree with the config.
  Loaded m = FromGguf(kModels + "llama_tiny/model.gguf", DType::kF32);
  m.weights.layers[1].k_weight = Tensor::Zeros({64, 64});
  s = ValidateDecoderWeights(m.config, m.weights, DType::kF32);
  EXPECT_THAT(std::string(s.message()), HasSubstr("layers.1.k_weight"));
}

}  // namespace
}  // namespace attnserve
