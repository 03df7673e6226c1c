// DeBERTa-v2 / v3 encoders from a Hugging Face directory against
// transformers 5's DebertaV2Model / DebertaV2ForSequenceClassification and
// sentence-transformers (tools/golden/deberta_golden.py): deberta-v3's
// configuration (log-bucketed relative positions, shared key projections,
// a normed table, no position table) as an embedder and as a reranker, and
// the other branches (pos_key_proj / pos_query_proj, exact clamped
// positions, a position table, token types); the bucket function against
// torch's; the refusals of the variants the encoder does not run.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/bert_config.h"
#include "engine/models/deberta.h"
#include "engine/models/deberta_attention.h"
#include "engine/formats/json_util.h"
#include "engine/models/encoder_model.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("deberta_golden.json"); }

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

TEST(DebertaConfigTest, V3Layout) {
  auto c = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("deberta_v3_tiny"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, EncoderFamily::kDebertaV2);
  const DebertaConfig& d = c->deberta;
  EXPECT_TRUE(d.relative_attention);
  EXPECT_TRUE(d.c2p);
  EXPECT_TRUE(d.p2c);
  EXPECT_EQ(d.position_buckets, 32);
  EXPECT_EQ(d.max_relative_positions, 128);  // -1: max_position_embeddings
  EXPECT_EQ(d.span(), 32);
  EXPECT_TRUE(d.share_att_key);
  EXPECT_TRUE(d.norm_rel_embeddings);
  EXPECT_FALSE(d.position_biased_input);
  EXPECT_FALSE(c->learned_positions());
  EXPECT_EQ(c->type_vocab_size, 0);
  EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-7f);
  EXPECT_FLOAT_EQ(c->deberta_scale(), 1.0f / std::sqrt(8.0f * 3.0f));
  EXPECT_TRUE(c->labels.empty());
}

TEST(DebertaConfigTest, V2BranchesAndTheReranker) {
  auto c = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("deberta_v2_tiny"));
  ASSERT_TRUE(c.ok()) << c.status();
  const DebertaConfig& d = c->deberta;
  EXPECT_TRUE(d.c2p && d.p2c);  // "c2p|p2c"
  EXPECT_EQ(d.position_buckets, 0);
  EXPECT_EQ(d.span(), 24);
  EXPECT_FALSE(d.share_att_key);
  EXPECT_FALSE(d.norm_rel_embeddings);
  EXPECT_TRUE(c->learned_positions());
  EXPECT_EQ(c->type_vocab_size, 2);
  auto reranker = testing_util::ParseBertConfigJson(testing_util::GoldenEncoderConfig("deberta_v3_reranker_tiny"));
  ASSERT_TRUE(reranker.ok()) << reranker.status();
  EXPECT_EQ(reranker->labels, std::vector<std::string>{"LABEL_0"});
  // Without pos_att_type the scale is head_dim's alone.
  nlohmann::json plain = testing_util::GoldenEncoderConfig("deberta_v2_tiny");
  plain["relative_attention"] = false;
  plain.erase("pos_att_type");
  auto absolute = testing_util::ParseBertConfigJson(plain);
  ASSERT_TRUE(absolute.ok()) << absolute.status();
  EXPECT_FALSE(absolute->deberta.disentangled());
  EXPECT_FLOAT_EQ(absolute->deberta_scale(), 1.0f / std::sqrt(8.0f));
}

TEST(DebertaConfigTest, VariantsItDoesNotRunAreRefusedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"conv_kernel_size", 3}}, "conv_kernel_size 3 is not supported"},
      {{{"embedding_size", 64}}, "embedding_size 64 is not supported (32"},
      {{{"attention_head_size", 16}}, "attention_head_size 16 is not supported (8"},
      {{{"pos_att_type", {"p2c", "p2p"}}}, "pos_att_type entry \"p2p\" is not supported"},
      {{{"pos_att_type", 3}}, "pos_att_type must be a list"},
      {{{"hidden_act", "relu"}}, "hidden_act \"relu\" is not supported"},
      {{{"norm_rel_ebd", "batch_norm"}}, "norm_rel_ebd entry \"batch_norm\" is not supported"},
      {{{"relative_attention", false}}, "position_biased_input is false and relative_attention"},
      {{{"position_buckets", 300}}, "position_buckets 300 needs max_relative_positions"},
      {{{"architectures", {"DebertaV2ForTokenClassification"}}}, "architecture DebertaV2ForTokenClassification"},
      {{{"architectures", {"DebertaV2ForSequenceClassification"}}, {"pooler_hidden_act", "tanh"}},
       "pooler_hidden_act \"tanh\" is not supported"},
      {{{"architectures", {"DebertaV2ForSequenceClassification"}}, {"pooler_hidden_size", 16}},
       "pooler_hidden_size 16 is not supported"},
  };
  for (const auto& [patch, want] : cases) {
    nlohmann::json json = testing_util::GoldenEncoderConfig("deberta_v3_tiny");
    json.update(patch);
    auto c = testing_util::ParseBertConfigJson(json);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_THAT(c.status().message(), HasSubstr("dir/config.json: " + want));
  }
}

// make_log_bucket_position, evaluated by torch for every relative position
// in [-600, 600], at deberta-v3's sizes and the fixtures'.
TEST(DebertaBucketTest, LogBucketsMatchTorch) {
  ASSERT_FALSE(Golden().is_null());
  for (const nlohmann::json& table : Golden()["buckets"]) {
    const int size = table["bucket_size"].get<int>(), max_position = table["max_position"].get<int>();
    int relative = table["first"].get<int>(), logarithmic = 0;
    for (const nlohmann::json& want : table["buckets"]) {
      EXPECT_EQ(DebertaLogBucketPosition(relative, size, max_position), want.get<int>())
          << relative << " at " << size << "/" << max_position;
      logarithmic += std::abs(relative) > size / 2;
      ++relative;
    }
    EXPECT_GT(logarithmic, 100);
  }
}

TEST(DebertaBucketTest, PositionIndexClampsIntoTheTable) {
  DebertaConfig exact;
  exact.relative_attention = exact.c2p = true;
  exact.max_relative_positions = 4;
  // Query i, key j: entry i - j + n - 1 holds clamp(i - j + 4, 0, 7).
  EXPECT_EQ(DebertaPositionIndex(exact, 6), (std::vector<int32_t>{0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7}));
}

// The checkpoints' tokenizer.json (DebertaV2Converter: Strip, Precompiled,
// Replace) and the one transformers 5 writes for the same vocabulary (NFC,
// whitespace runs replaced, Strip right).
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LayoutTokenizer(const std::string& layout) {
  auto j = ReadJsonFile(ModelDir("deberta_v3_tiny") + "/tokenizer.json");
  if (!j.ok()) return j.status();
  if (layout == "v5") {
    (*j)["normalizer"] = Golden()["v5_layout"]["normalizer"];
    (*j)["pre_tokenizer"] = Golden()["v5_layout"]["pre_tokenizer"];
  }
  return EncoderTokenizerFromJson(*j, layout + "/tokenizer.json");
}

class DebertaTokenizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DebertaTokenizerTest, IdsOffsetsAndPairsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LayoutTokenizer(GetParam());
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_GE(Golden()["tokenizer"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"][GetParam()]);
  EXPECT_GE(testing_util::ExpectGoldenPairs(**tok, Golden()["pairs"][GetParam()]), 2);  // the short limits cut
}

INSTANTIATE_TEST_SUITE_P(Layouts, DebertaTokenizerTest, ::testing::Values("legacy", "v5"));

TEST(DebertaEncoderTest, LoadsWithoutAPositionTable) {
  auto model = EncoderModel::Load(ModelDir("deberta_v3_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().architecture, "deberta-v2");
  EXPECT_EQ((*model)->max_tokens(), 128);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kMean);
  EXPECT_TRUE((*model)->default_normalize());
  // Word table, norms, 2 layers of 4 biased [32, 32] projections and a
  // 64-wide feed-forward, and per layer the 64-row position table through
  // the query and key projections, packed per head (2 panels of 32 rows,
  // head_dim 8 padded to 16): no position table.
  const int64_t d = 32, inner = 64, vocab = (*model)->description().vocab_size;
  const int64_t per_layer = 4 * (d * d + d) + (inner * d + inner) + (d * inner + d) + 4 * d;
  const int64_t positions_packed = 2 * 2 * 4 * (2 * 16 * 32);
  const int64_t unpadded = (vocab * d + 2 * d + 2 * per_layer + positions_packed) * 4;
  EXPECT_GE((*model)->description().weight_bytes, unpadded);  // packed panels may pad
  EXPECT_LT((*model)->description().weight_bytes, unpadded + 128 * d * 4);
  // A token's activations (x, q/k/v, context, sum, feed-forward), and one
  // sequence's [H, N, N] bias planes and two [N, 64] position products (the
  // sequences' attention runs one at a time): not B times those.
  EXPECT_EQ((*model)->ScratchBytes(2, 16), (2 * 16 * (6 * d + inner) + 4 * 16 * 16 + 2 * 16 * 64) * 4);
  EXPECT_EQ((*model)->ScratchBytes(4, 16) - (*model)->ScratchBytes(2, 16), 2 * 16 * (6 * d + inner) * 4);
}

// Every text in one batch (the planes of sequences of several lengths),
// then each alone; the long text reaches the logarithmic buckets.
TEST(DebertaEncoderTest, V3EmbeddingsMatchSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("deberta_v3_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["v3_embeddings"].size(), 6u);
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["v3_embeddings"], 2e-5), 1);
}

TEST(DebertaEncoderTest, V2BranchesMatchSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("deberta_v2_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(testing_util::ExpectGoldenEmbeddings(**model, Golden()["v2_embeddings"], 2e-5), 1);
}

// A request for a layer's attention weights runs that layer's batch at once
// (all planes together); the others run sequence by sequence. The same
// vectors either way, and weights that are distributions over the keys.
TEST(DebertaEncoderTest, WholeBatchAndPerSequenceAttentionAgree) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("deberta_v3_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<EncoderInput> inputs = testing_util::GoldenInputs(Golden()["v3_embeddings"]);
  auto plain = (*model)->Encode(inputs, {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EncodeOptions with_weights;
  with_weights.attention_layers = {0, 1};
  auto weighed = (*model)->Encode(inputs, with_weights);
  ASSERT_TRUE(weighed.ok()) << weighed.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& a = (*plain)[i].embedding;
    const Tensor& b = (*weighed)[i].embedding;
    ASSERT_EQ(a.numel(), b.numel());
    for (int64_t k = 0; k < a.numel(); ++k) EXPECT_NEAR(a.f32()[k], b.f32()[k], 1e-6) << inputs[i].text;
    ASSERT_EQ((*weighed)[i].attentions.size(), 2u);
    const Tensor& w = (*weighed)[i].attentions[1].second;  // [H, n, n]
    const int64_t n = static_cast<int64_t>((*weighed)[i].token_ids.size());
    ASSERT_EQ(w.numel(), 4 * n * n);
    for (int64_t row = 0; row < 4 * n; ++row) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += w.f32()[row * n + k];
      EXPECT_NEAR(sum, 1.0, 1e-5) << inputs[i].text;
    }
  }
}

// bf16 and q8_0 weight storage: the projections round, the position
// tables (projected at load from the stored weights) stay f32; the vectors
// stay within a cosine of 0.999 of transformers'.
TEST(DebertaEncoderTest, ReducedPrecisionWeightsStayClose) {
  ASSERT_FALSE(Golden().is_null());
  for (DType storage : {DType::kBF16, DType::kQ8_0}) {
    auto model = EncoderModel::Load(ModelDir("deberta_v3_tiny"), {.weight_dtype = storage});
    ASSERT_TRUE(model.ok()) << model.status();
    const std::vector<EncoderInput> inputs = testing_util::GoldenInputs(Golden()["v3_embeddings"]);
    auto batch = (*model)->Encode(inputs, {});
    ASSERT_TRUE(batch.ok()) << batch.status();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<float> want = Golden()["v3_embeddings"][i]["embedding"].get<std::vector<float>>();
      EXPECT_GT(testing_util::Cosine((*batch)[i].embedding.f32(), want.data(), static_cast<int64_t>(want.size())),
                0.999)
          << DTypeName(storage) << ": " << inputs[i].text;
    }
  }
}

// Tensors under "deberta.", ContextPooler's GELU and the classifier.
TEST(DebertaEncoderTest, RerankerLogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  testing_util::ExpectGoldenClassifier(ModelDir("deberta_v3_reranker_tiny"), Golden()["logits"], 1e-4);
}

}  // namespace
}  // namespace attnserve
