// all-MiniLM-L6-v2 end to end against the sentence-transformers / Hugging
// Face golden fixture (tools/golden/encoder_golden.py).
#include "engine/models/encoder_model.h"

#include <filesystem>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;
using testing_util::Cosine;
using testing_util::MaxAbsDiff;

class EncoderModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = testing_util::MiniLmDir();
    ASSERT_TRUE(std::filesystem::is_directory(dir))
        << "all-MiniLM-L6-v2 not found at " << dir << " (set ATTNSERVE_MINILM_DIR or run ./dev setup)";
    auto m = EncoderModel::Load(dir, {});
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = m->release();
    auto g = ReadJsonFile(testing_util::EncoderGoldenPath());
    ASSERT_TRUE(g.ok()) << g.status();
    golden_ = new nlohmann::json(std::move(*g));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete golden_;
    model_ = nullptr;
    golden_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(model_, nullptr);
    ASSERT_NE(golden_, nullptr);
  }

  static std::vector<EncoderInput> GoldenInputs() {
    std::vector<EncoderInput> inputs;
    for (const nlohmann::json& s : (*golden_)["sentences"]) {
      EncoderInput in;
      in.text = s["text"].get<std::string>();
      inputs.push_back(std::move(in));
    }
    return inputs;
  }

  // Encodes the golden sentences in batches of 8 (as the fixture was made)
  // and checks every embedding.
  static void CheckGoldenEmbeddings(const EncoderModel& model, double min_cosine, double max_abs) {
    std::vector<EncoderInput> inputs = GoldenInputs();
    const auto& sentences = (*golden_)["sentences"];
    ASSERT_GE(inputs.size(), 60u);
    double worst_cos = 1, worst_abs = 0;
    for (size_t begin = 0; begin < inputs.size(); begin += 8) {
      const size_t count = std::min<size_t>(8, inputs.size() - begin);
      auto results = model.Encode(absl::MakeConstSpan(inputs).subspan(begin, count), {});
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t k = 0; k < count; ++k) {
        const nlohmann::json& s = sentences[begin + k];
        const EncodeResult& r = (*results)[k];
        EXPECT_EQ(r.token_ids, s["ids_model"].get<std::vector<int32_t>>()) << s["text"];
        EXPECT_EQ(r.truncated, s["truncated"].get<bool>()) << s["text"];
        std::vector<float> expected = s["embedding"].get<std::vector<float>>();
        ASSERT_EQ(r.embedding.numel(), static_cast<int64_t>(expected.size()));
        const double cos = Cosine(r.embedding.f32(), expected.data(), r.embedding.numel());
        const double abs = MaxAbsDiff(r.embedding.f32(), expected.data(), r.embedding.numel());
        EXPECT_GE(cos, min_cosine) << s["text"];
        if (max_abs > 0) {
          EXPECT_LE(abs, max_abs) << s["text"];
        }
        worst_cos = std::min(worst_cos, cos);
        worst_abs = std::max(worst_abs, abs);
      }
    }
    std::printf("golden: worst cosine %.9f, worst max-abs %.3g over %zu sentences\n", worst_cos, worst_abs,
                inputs.size());
  }

  static EncoderModel* model_;
  static nlohmann::json* golden_;
};
EncoderModel* EncoderModelTest::model_ = nullptr;
nlohmann::json* EncoderModelTest::golden_ = nullptr;

TEST_F(EncoderModelTest, DescribesTheModel) {
  const ModelDescription& d = model_->description();
  EXPECT_EQ(d.architecture, "bert");
  EXPECT_EQ(d.num_layers, 6);
  EXPECT_EQ(d.num_heads, 12);
  EXPECT_EQ(d.head_dim, 32);
  EXPECT_EQ(d.hidden_size, 384);
  EXPECT_EQ(d.vocab_size, 30522);
  EXPECT_EQ(d.kv_bytes_per_token, 0);
  EXPECT_GT(d.weight_bytes, 80'000'000);
  EXPECT_EQ(model_->max_tokens(), 256);
  EXPECT_EQ(model_->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE(model_->default_normalize());
  EXPECT_GT(model_->ScratchBytes(32, 128), model_->ScratchBytes(1, 128));
}

TEST_F(EncoderModelTest, GoldenEmbeddingsF32) { CheckGoldenEmbeddings(*model_, 0.99999, 1e-4); }

TEST_F(EncoderModelTest, GoldenEmbeddingsBf16Weights) {
  auto bf16 = EncoderModel::Load(testing_util::MiniLmDir(), {.weight_dtype = DType::kBF16});
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ((*bf16)->description().weight_dtype, DType::kBF16);
  // bf16 really halves what is held (GEMM weights and embedding tables; the
  // f32 biases and LayerNorm parameters are a rounding error of the total).
  const double ratio = static_cast<double>((*bf16)->description().weight_bytes) /
                       static_cast<double>(model_->description().weight_bytes);
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.55);
  CheckGoldenEmbeddings(**bf16, 0.999, /*max_abs=*/0);
}

// q8_0 weights: the projections and the word table in Q8_0 blocks (the
// position and type tables stay f32), so what is held shrinks to about
// 1.1 bytes a weight; embeddings within cosine 0.999 of
// sentence-transformers' f32 golden, the bound bf16 weights are held to.
TEST_F(EncoderModelTest, GoldenEmbeddingsQ8_0Weights) {
  auto q8 = EncoderModel::Load(testing_util::MiniLmDir(), {.weight_dtype = DType::kQ8_0});
  ASSERT_TRUE(q8.ok()) << q8.status();
  EXPECT_EQ((*q8)->description().weight_dtype, DType::kQ8_0);
  // MiniLM: 10.6 M projection weights (1.125 bytes each, panels), a word
  // table of 30522 × 384 = 11.7 M (1.0625: Q8_0 rows), 0.2 M position and
  // type values (4): (11.9 + 12.5 + 0.8) / (22.5 × 4) = 0.28.
  const double ratio = static_cast<double>((*q8)->description().weight_bytes) /
                       static_cast<double>(model_->description().weight_bytes);
  EXPECT_GT(ratio, 0.26);
  EXPECT_LT(ratio, 0.30);
  CheckGoldenEmbeddings(**q8, 0.999, /*max_abs=*/0);
}

// --matmul-precision=bf16: f32 weights, bf16 operands in the projections'
// oneDNN products (AMX here when the CPU has it) — held to the bound the
// issue sets for bf16 weights. The Linear tests check that the bf16 units
// really run on such a CPU.
TEST_F(EncoderModelTest, GoldenEmbeddingsBf16Matmuls) {
  auto bf16mm = EncoderModel::Load(testing_util::MiniLmDir(), {.matmul_precision = MatmulPrecision::kBf16});
  ASSERT_TRUE(bf16mm.ok()) << bf16mm.status();
  EXPECT_EQ((*bf16mm)->description().matmul_precision, MatmulPrecision::kBf16);
  EXPECT_EQ((*bf16mm)->description().weight_bytes, model_->description().weight_bytes);
  CheckGoldenEmbeddings(**bf16mm, 0.999, /*max_abs=*/0);
}

// bf16 weights with bf16 products: the oneDNN rows read the packed bf16
// panels in place (AMX where the CPU has it); held to the same bound.
TEST_F(EncoderModelTest, GoldenEmbeddingsBf16WeightsAndMatmuls) {
  auto both = EncoderModel::Load(testing_util::MiniLmDir(),
                                 {.weight_dtype = DType::kBF16, .matmul_precision = MatmulPrecision::kBf16});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)->description().weight_dtype, DType::kBF16);
  CheckGoldenEmbeddings(**both, 0.999, /*max_abs=*/0);
}

// The server loads with every kernel built up front; that model must give
// the same answers as one that builds them on first use.
TEST_F(EncoderModelTest, GoldenEmbeddingsWithKernelsPreparedAtLoad) {
  auto prepared = EncoderModel::Load(testing_util::MiniLmDir(), {.prepare_kernels = true});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  CheckGoldenEmbeddings(**prepared, 0.99999, 1e-4);
}

// A sentence encoded alone and next to much longer ones (padded batch) gives
// the same embedding: the key padding mask keeps padding out.
TEST_F(EncoderModelTest, BatchInvariance) {
  const auto& sentences = (*golden_)["sentences"];
  std::vector<EncoderInput> batch;
  const int short_index = 2;  // "The cat sits outside."
  for (int i : {70, short_index, 72, 0, 71}) {
    EncoderInput in;
    in.text = sentences[i]["text"].get<std::string>();
    batch.push_back(std::move(in));
  }
  EncodeOptions options;
  options.pooling = PoolingMode::kNone;  // compare every token, not only the mean
  auto together = model_->Encode(batch, options);
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_GT((*together)[0].token_ids.size(), 5 * (*together)[1].token_ids.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    auto alone = model_->Encode(absl::MakeConstSpan(&batch[k], 1), options);
    ASSERT_TRUE(alone.ok());
    const Tensor& a = (*alone)[0].embedding;
    const Tensor& b = (*together)[k].embedding;
    ASSERT_EQ(a.shape(), b.shape());
    EXPECT_LE(MaxAbsDiff(a.f32(), b.f32(), a.numel()), 1e-5) << "input " << k;
  }
  // And pooled, normalised, as served.
  auto pooled_batch = model_->Encode(batch, {});
  auto pooled_alone = model_->Encode(absl::MakeConstSpan(&batch[1], 1), {});
  ASSERT_TRUE(pooled_batch.ok() && pooled_alone.ok());
  EXPECT_LE(MaxAbsDiff((*pooled_batch)[1].embedding.f32(), (*pooled_alone)[0].embedding.f32(), 384), 1e-5);
}

TEST_F(EncoderModelTest, AttentionWeightsMatchHuggingFace) {
  const auto& sentences = (*golden_)["sentences"];
  int checked = 0;
  for (const nlohmann::json& a : (*golden_)["attentions"]) {
    const int sentence = a["sentence"].get<int>();
    const int layer = a["layer"].get<int>();
    // Encoded inside a batch with a longer sentence (~40 tokens), so padding is present.
    std::vector<EncoderInput> inputs(2);
    inputs[0].text = sentences[sentence]["text"].get<std::string>();
    inputs[1].text = sentences[19]["text"].get<std::string>() + " " + sentences[26]["text"].get<std::string>() +
                     " " + sentences[0]["text"].get<std::string>();
    EncodeOptions options;
    options.attention_layers = {layer};
    auto r = model_->Encode(inputs, options);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ((*r)[0].attentions.size(), 1u);
    EXPECT_EQ((*r)[0].attentions[0].first, layer);
    const Tensor& w = (*r)[0].attentions[0].second;
    std::vector<int64_t> shape = a["shape"].get<std::vector<int64_t>>();
    ASSERT_EQ(w.shape(), shape);
    std::vector<float> expected = a["values"].get<std::vector<float>>();
    EXPECT_LE(MaxAbsDiff(w.f32(), expected.data(), w.numel()), 1e-5) << "sentence " << sentence << " layer " << layer;

    // Head-averaged form is the mean of the per-head matrices.
    options.attention_average_heads = true;
    auto avg = model_->Encode(inputs, options);
    ASSERT_TRUE(avg.ok());
    const Tensor& wa = (*avg)[0].attentions[0].second;
    const int64_t heads = shape[0], n = shape[1];
    ASSERT_EQ(wa.shape(), (std::vector<int64_t>{n, n}));
    for (int64_t q = 0; q < n * n; ++q) {
      double mean = 0;
      for (int64_t h = 0; h < heads; ++h) mean += expected[h * n * n + q];
      EXPECT_NEAR(wa.f32()[q], mean / heads, 1e-5);
    }
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST_F(EncoderModelTest, HiddenStatesMatchHuggingFace) {
  const nlohmann::json& h = (*golden_)["hidden_states"];
  std::vector<int64_t> shape = h["shape"].get<std::vector<int64_t>>();  // [L+1, N, D]
  std::vector<float> expected = h["values"].get<std::vector<float>>();
  EncoderInput in;
  in.text = (*golden_)["sentences"][h["sentence"].get<int>()]["text"].get<std::string>();
  EncodeOptions options;
  options.return_hidden_states = true;
  options.pooling = PoolingMode::kNone;
  options.normalize = false;
  auto r = model_->Encode(absl::MakeConstSpan(&in, 1), options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(static_cast<int64_t>((*r)[0].hidden_states.size()), shape[0]);
  const int64_t per = shape[1] * shape[2];
  for (int64_t l = 0; l < shape[0]; ++l) {
    const Tensor& t = (*r)[0].hidden_states[l];
    ASSERT_EQ(t.numel(), per);
    EXPECT_LE(MaxAbsDiff(t.f32(), expected.data() + l * per, per), 2e-4) << "hidden state " << l;
  }
  // kNone without normalisation is the last hidden state itself.
  EXPECT_LE(MaxAbsDiff((*r)[0].embedding.f32(), expected.data() + (shape[0] - 1) * per, per), 2e-4);
  // CLS / max / last pooling of that last hidden state.
  const float* last = expected.data() + (shape[0] - 1) * per;
  for (PoolingMode mode : {PoolingMode::kCls, PoolingMode::kMax, PoolingMode::kLast}) {
    EncodeOptions o;
    o.pooling = mode;
    o.normalize = false;
    auto p = model_->Encode(absl::MakeConstSpan(&in, 1), o);
    ASSERT_TRUE(p.ok());
    std::vector<float> want(shape[2]);
    for (int64_t i = 0; i < shape[2]; ++i) {
      if (mode == PoolingMode::kCls) want[i] = last[i];
      if (mode == PoolingMode::kLast) want[i] = last[(shape[1] - 1) * shape[2] + i];
      if (mode == PoolingMode::kMax) {
        want[i] = last[i];
        for (int64_t t = 1; t < shape[1]; ++t) want[i] = std::max(want[i], last[t * shape[2] + i]);
      }
    }
    EXPECT_LE(MaxAbsDiff(p->at(0).embedding.f32(), want.data(), shape[2]), 2e-4) << PoolingModeName(mode);
  }
}

TEST_F(EncoderModelTest, InvalidInputsAreRejectedBeforeCompute) {
  EXPECT_EQ(model_->Encode({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<EncoderInput> inputs(2);
  inputs[0].text = "fine";
  inputs[1].text = "bad \xff utf8";
  auto bad_utf8 = model_->Encode(inputs, {});
  EXPECT_EQ(bad_utf8.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_utf8.status().message(), HasSubstr("input 1"));
  inputs[1].is_text = false;
  inputs[1].token_ids = {101, 30522, 102};
  auto bad_id = model_->Encode(inputs, {});
  EXPECT_THAT(bad_id.status().message(), HasSubstr("token id 30522"));
  inputs[1].token_ids = {};
  EXPECT_THAT(model_->Encode(inputs, {}).status().message(), HasSubstr("no token ids"));
  inputs[1].is_text = true;
  inputs[1].text = (*golden_)["sentences"][71]["text"].get<std::string>();
  EncodeOptions no_truncate;
  no_truncate.truncate = false;
  auto too_long = model_->Encode(inputs, no_truncate);
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_long.status().message(), HasSubstr("limit is 256"));
  EncodeOptions bad_layer;
  bad_layer.attention_layers = {6};
  EXPECT_THAT(model_->Encode(inputs, bad_layer).status().message(), HasSubstr("attention layer 6"));
  // Token-id input: the ids are used as given; equal to the text path.
  std::vector<EncoderInput> pair(2);
  pair[0].text = "The cat sits outside.";
  pair[1].is_text = false;
  pair[1].token_ids = *model_->Tokenize("The cat sits outside.", true);
  auto same = model_->Encode(pair, {});
  ASSERT_TRUE(same.ok());
  EXPECT_LE(MaxAbsDiff((*same)[0].embedding.f32(), (*same)[1].embedding.f32(), 384), 1e-6);
}

TEST_F(EncoderModelTest, TokenizerHelpers) {
  auto ids = model_->Tokenize("Hello world", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(model_->TokenStrings(*ids), (std::vector<std::string>{"[CLS]", "hello", "world", "[SEP]"}));
  auto text = model_->Detokenize(*ids, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello world");
}

}  // namespace
}  // namespace attnserve
