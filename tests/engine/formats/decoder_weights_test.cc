#include "engine/formats/decoder_weights.h"

#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/half.h"
#include "engine/core/q8_0.h"
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

// The matrices a test compares across two loads of one Llama model (Q and K
// apart: a GGUF's are permuted).
std::vector<std::pair<const Tensor*, const Tensor*>> UnpermutedMatrices(const DecoderWeights& a,
                                                                        const DecoderWeights& b) {
  std::vector<std::pair<const Tensor*, const Tensor*>> out = {{&a.token_embedding, &b.token_embedding},
                                                              {&a.lm_head, &b.lm_head}};
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const DecoderLayerWeights &x = a.layers[i], &y = b.layers[i];
    for (auto [p, q] : {std::pair{&x.v_weight, &y.v_weight}, {&x.o_weight, &y.o_weight},
                        {&x.gate_weight, &y.gate_weight}, {&x.up_weight, &y.up_weight},
                        {&x.down_weight, &y.down_weight}}) {
      out.emplace_back(p, q);
    }
  }
  return out;
}

// q8_0 storage: a Q8_0 GGUF's matrices are handed over as the file's own
// blocks (never expanded), and f32 safetensors quantised at load give the
// same blocks as gguf-py's quantiser wrote into that file (an independent
// implementation of ggml's quantize_row_q8_0_ref). Vectors stay f32, and the
// weights held are the Q8_0 bytes: 34 per 32 weights, not 4 per weight.
TEST(DecoderWeightsTest, Q8_0StorageKeepsAQ8_0FilesBlocks) {
  const std::string path = kModels + "llama_tiny/model-q8_0.gguf";
  Loaded gg = FromGguf(path, DType::kQ8_0);
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const GgufTensorInfo* q = (*file)->FindTensor("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->type, GgmlType::kQ8_0);
  const Tensor& held = gg.weights.layers[1].q_weight;
  ASSERT_EQ(held.dtype(), DType::kQ8_0);
  ASSERT_EQ(held.bytes(), q->data.size());
  EXPECT_EQ(std::memcmp(held.raw(), q->data.data(), held.bytes()), 0);
  EXPECT_EQ(gg.weights.layers[1].attn_norm_weight.dtype(), DType::kF32);

  Loaded hf = FromHf(kModels + "llama_tiny", DType::kQ8_0);
  int64_t matrix_weights = 0;
  for (auto [x, y] : UnpermutedMatrices(hf.weights, gg.weights)) {
    ASSERT_EQ(x->dtype(), DType::kQ8_0);
    ExpectSame(*x, *y, "a matrix quantised at load against gguf-py's blocks");
  }
  Loaded f32 = FromHf(kModels + "llama_tiny", DType::kF32);
  for (const DecoderLayerWeights& l : f32.weights.layers) {
    for (const Tensor* t : {&l.q_weight, &l.k_weight, &l.v_weight, &l.o_weight, &l.gate_weight, &l.up_weight,
                            &l.down_weight}) {
      matrix_weights += t->numel();
    }
  }
  matrix_weights += f32.weights.token_embedding.numel() + f32.weights.lm_head.numel();
  const int64_t vector_bytes = f32.weights.TotalBytes() - 4 * matrix_weights;
  EXPECT_EQ(hf.weights.TotalBytes(), matrix_weights / 32 * 34 + vector_bytes);
  EXPECT_EQ(gg.weights.TotalBytes(), hf.weights.TotalBytes());
}

// Other block types are expanded a tensor at a time and quantised to Q8_0:
// the blocks of each matrix of llama_quant_mix (every type llama-quantize
// writes) are those of its f32 values, slice by slice.
TEST(DecoderWeightsTest, Q8_0StorageQuantisesOtherBlockTypes) {
  const std::string path = kModels + "llama_quant_mix/model.gguf";
  Loaded f32 = FromGguf(path, DType::kF32);
  Loaded q8 = FromGguf(path, DType::kQ8_0);
  auto expect_blocks_of = [](const Tensor& values, const Tensor& held, const std::string& what) {
    ASSERT_EQ(held.dtype(), DType::kQ8_0) << what;
    ASSERT_EQ(held.shape(), values.shape()) << what;
    std::vector<std::byte> want(held.bytes());
    QuantizeRowQ8_0(values.f32(), values.numel(), want.data());
    EXPECT_EQ(std::memcmp(held.raw(), want.data(), want.size()), 0) << what;
  };
  expect_blocks_of(f32.weights.token_embedding, q8.weights.token_embedding, "token_embd");
  for (size_t i = 0; i < f32.weights.layers.size(); ++i) {
    const DecoderLayerWeights &a = f32.weights.layers[i], &b = q8.weights.layers[i];
    for (auto [x, y, what] : {std::tuple{&a.q_weight, &b.q_weight, "q"}, {&a.k_weight, &b.k_weight, "k"},
                              {&a.v_weight, &b.v_weight, "v"}, {&a.o_weight, &b.o_weight, "o"},
                              {&a.gate_weight, &b.gate_weight, "gate"}, {&a.up_weight, &b.up_weight, "up"},
                              {&a.down_weight, &b.down_weight, "down"}}) {
      expect_blocks_of(*x, *y, absl::StrCat("layers.", i, ".", what));
    }
  }
}

// A matrix whose rows are not a multiple of 32 cannot be Q8_0 blocks: it
// stays f32 (stories260K's down projection reads 172 values a row), and is
// quantised with zero padding when packed; its other matrices are Q8_0. A
// tensor asked for as q8_0 with such rows is refused, naming it.
TEST(DecoderWeightsTest, Q8_0StorageKeepsRowsThatAreNotWholeBlocksF32) {
  Loaded m = FromGguf(kStories, DType::kQ8_0);
  EXPECT_EQ(m.weights.layers[0].gate_weight.dtype(), DType::kQ8_0);
  EXPECT_EQ(m.weights.layers[0].down_weight.dtype(), DType::kF32);
  EXPECT_EQ(m.weights.layers[0].down_weight.shape(), (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(MatrixStorage(DType::kQ8_0, {64, 172}), DType::kF32);
  EXPECT_EQ(MatrixStorage(DType::kQ8_0, {172, 64}), DType::kQ8_0);
  EXPECT_EQ(MatrixStorage(DType::kBF16, {64, 172}), DType::kBF16);
  auto g = GgufFile::Open(kStories);
  ASSERT_TRUE(g.ok());
  absl::Status s = (*g)->LoadTensor("blk.0.ffn_down.weight", DType::kQ8_0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("blk.0.ffn_down.weight"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("multiple of 32"));
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
