// Decoder-based embedders (Qwen3-Embedding's kind: a Llama-family body run
// causally over each input, pooled at the last token or by the mean) against
// transformers and sentence-transformers (tools/golden/causal_embedder_golden.py):
// Qwen2's and Llama-3's byte-level tokenizers (NFC with decomposed input,
// their regex splits, the appended <|endoftext|>) and the Llama-2 /
// Mistral SentencePiece-style BPE (legacy Prepend + Replace and transformers
// 5's Metaspace layouts, byte fallback), embeddings batched and alone up to
// the 64-token limit, the instruction prompt, and what the Encode path
// refuses for such a model.
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/models/decoder_model.h"
#include "engine/models/encoder_model.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/unicode_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/engine/tokenizers/tokenizer_golden_checks.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("causal_embedder_golden.json"); }

std::string ModelDir(const std::string& name) { return testing_util::GoldenEncoderModelDir(name); }

class CausalEmbedderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CausalEmbedderTest, TokenizerIdsAndOffsetsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(ModelDir(GetParam()) + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_GE(Golden()["tokenizer"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"][GetParam()]);
}

// Every text in one batch (sequences of 2 to 64 tokens packed together),
// then each alone.
TEST_P(CausalEmbedderTest, EmbeddingsMatchSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()["embeddings"][GetParam()].size(), 10u);
  testing_util::ExpectGoldenEmbeddings(**model, Golden()["embeddings"][GetParam()], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, CausalEmbedderTest,
                         ::testing::Values("qwen3_embedding_tiny", "llama_embedder_tiny", "mistral_embedder_tiny",
                                           "embeddinggemma_tiny"));

// The same vocabulary in transformers 5's layout (Metaspace pre-tokenizer,
// prepend_scheme first, no normalizer).
TEST(SentencePieceBpeEncoderTest, MetaspaceLayoutIdsAndOffsetsEqualTokenizers) {
  ASSERT_FALSE(Golden().is_null());
  auto tok = LoadEncoderTokenizer(std::string(ATTNSERVE_SOURCE_DIR) +
                                  "/tests/golden/decoder_tokenizers/tok512_metaspace_tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->kind(), "sentencepiece_bpe");
  ASSERT_GE(Golden()["tokenizer"]["tok512_metaspace"].size(), 10u);
  testing_util::ExpectGoldenEncodings(**tok, Golden()["tokenizer"]["tok512_metaspace"]);
}

TEST(SentencePieceBpeEncoderTest, MalformedFilesNameTheComponent) {
  auto base = ReadJsonFile(ModelDir("mistral_embedder_tiny") + "/tokenizer.json");
  ASSERT_TRUE(base.ok()) << base.status();
  testing_util::ExpectRefusals(*base, {
      {"dropout", [](nlohmann::json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout"},
      {"ignore_merges", [](nlohmann::json& j) { j["model"]["ignore_merges"] = true; }, "model.ignore_merges"},
      {"decoder", [](nlohmann::json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, "decoder \"WordPiece\""},
      {"decoder step",
       [](nlohmann::json& j) { j["decoder"]["decoders"].push_back({{"type", "CTC"}}); },
       "decoder step \"CTC\""},
      {"pre_tokenizer", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "Whitespace"},
      {"merges", [](nlohmann::json& j) { j["model"]["merges"][0] = "zzz qqq"; }, "model.merges[0]"},
      {"unk", [](nlohmann::json& j) { j["model"]["unk_token"] = "<nothing>"; }, "unk_token \"<nothing>\""},
  });
}

// Decoder *ForSequenceClassification heads: a Qwen3 reranker whose pad token
// is the <|endoftext|> its template appends (the score is read one token
// earlier), and a 3-label Llama classifier without a pad token.
class CausalClassifierTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CausalClassifierTest, LogitsMatchTransformers) {
  ASSERT_FALSE(Golden().is_null());
  testing_util::ExpectGoldenClassifier(ModelDir(GetParam()), Golden()["logits"][GetParam()], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Heads, CausalClassifierTest,
                         ::testing::Values("qwen3_reranker_tiny", "llama_classifier_tiny"));

// Decoding: "▁" back to spaces, byte-fallback runs back to their
// characters, the leading space dropped, special tokens skipped.
TEST(SentencePieceBpeEncoderTest, DecodesItsOwnIds) {
  auto model = EncoderModel::Load(ModelDir("mistral_embedder_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  for (const std::string text : {"The quick brown fox.", "Der schnelle braune Fuchs springt \xC3\xBC ber.",
                                 "caf\xC3\xA9 \xE2\x9C\x93 ok"}) {
    auto ids = (*model)->Tokenize(text, true);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(ids->front(), 1);
    EXPECT_EQ(ids->back(), 2);
    auto back = (*model)->Detokenize(*ids, /*skip_special_tokens=*/true);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, text);
  }
}

TEST(CausalEmbedderLoadTest, ReadsTheSentenceTransformersModules) {
  auto qwen = EncoderModel::Load(ModelDir("qwen3_embedding_tiny"), {});
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  const ModelDescription& d = (*qwen)->description();
  EXPECT_EQ(d.architecture, "qwen3");
  EXPECT_EQ(d.num_layers, 3);
  EXPECT_EQ(d.num_heads, 4);
  EXPECT_EQ(d.num_kv_heads, 2);
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_EQ(d.hidden_size, 32);
  EXPECT_GT(d.weight_bytes, 0);
  EXPECT_EQ(d.kv_bytes_per_token, 0);
  EXPECT_EQ((*qwen)->max_tokens(), 64);
  EXPECT_EQ((*qwen)->default_pooling(), PoolingMode::kLast);
  EXPECT_TRUE((*qwen)->default_normalize());
  EXPECT_FALSE((*qwen)->sparse());
  EXPECT_EQ((*qwen)->prompts().size(), 2u);
  // Per token: at least the fused QKV row ((4 + 2 * 2) heads of 16) and the
  // MLP's (2 * 64 + 64), in f32; no K/V cache grows with the layers.
  EXPECT_GE((*qwen)->ScratchBytes(2, 16), 32 * ((4 + 2 * 2) * 16 + 3 * 64) * 4);
  EXPECT_EQ((*qwen)->ScratchBytes(4, 16), 2 * (*qwen)->ScratchBytes(2, 16));

  auto llama = EncoderModel::Load(ModelDir("llama_embedder_tiny"), {});
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ((*llama)->description().architecture, "llama");
  EXPECT_EQ((*llama)->description().num_kv_heads, 1);
  EXPECT_EQ((*llama)->default_pooling(), PoolingMode::kMean);
  EXPECT_FALSE((*llama)->default_normalize());
}

// The same model as llama.cpp's GGUF (qwen3.pooling_type LAST,
// add_eos_token): the ids and vectors transformers gives for the texts NFC
// leaves unchanged (llama.cpp does not normalize), and the offsets.
TEST(CausalEmbedderLoadTest, GgufFileMatchesTheDirectory) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir("qwen3_embedding_tiny.gguf"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelDescription& d = (*model)->description();
  EXPECT_EQ(d.architecture, "qwen3");
  EXPECT_EQ(d.name, "qwen3_embedding_tiny");
  EXPECT_EQ(d.num_kv_heads, 2);
  EXPECT_EQ((*model)->max_tokens(), 64);
  EXPECT_EQ((*model)->default_pooling(), PoolingMode::kLast);
  EXPECT_TRUE((*model)->default_normalize());
  ASSERT_GE(Golden()["gguf"].size(), 8u);
  testing_util::ExpectGoldenEmbeddings(**model, Golden()["gguf"], 1e-4);
  nlohmann::json nfc_cases = nlohmann::json::array();
  for (const nlohmann::json& c : Golden()["tokenizer"]["qwen3_embedding_tiny"]) {
    std::string unused;
    if (!ToNfc(c["text"].get<std::string>(), &unused)) nfc_cases.push_back(c);
  }
  ASSERT_GE(nfc_cases.size(), 8u);
  testing_util::ExpectGoldenEncodings((*model)->tokenizer(), nfc_cases);
}

// Qwen3-Embedding's instruction and EmbeddingGemma's "task: search result |
// query: " (through its Dense modules).
class CausalEmbedderPromptTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CausalEmbedderPromptTest, QueryPromptMatchesSentenceTransformers) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(ModelDir(GetParam()), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json& cases =
      GetParam() == "qwen3_embedding_tiny" ? Golden()["prompted"] : Golden()["prompted_models"][GetParam()];
  ASSERT_EQ(cases.size(), 2u);
  EncodeOptions options;
  options.prompt_name = "query";
  auto out = (*model)->Encode(testing_util::GoldenInputs(cases), options);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_THAT((*out)[i].token_ids, ElementsAreArray(cases[i]["ids"].get<std::vector<int32_t>>()));
    const std::vector<float> want = cases[i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ((*out)[i].embedding.numel(), static_cast<int64_t>(want.size()));
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*out)[i].embedding.f32()[k], want[k], 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CausalEmbedderPromptTest,
                         ::testing::Values("qwen3_embedding_tiny", "embeddinggemma_tiny"));

// EmbeddingGemma: the bidirectional body is an embedder only; --decoder-model
// refuses it, naming the field and what to do.
TEST(CausalEmbedderLoadTest, ABidirectionalModelIsNotADecoder) {
  auto decoder = DecoderModel::Load(ModelDir("embeddinggemma_tiny"), DecoderLoadOptions());
  ASSERT_FALSE(decoder.ok());
  EXPECT_THAT(std::string(decoder.status().message()),
              HasSubstr("use_bidirectional_attention is true: an embedding model (EmbeddingGemma), which cannot "
                        "generate; serve it with --encoder-model"));
  auto model = EncoderModel::Load(ModelDir("embeddinggemma_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().embedding_size, 64);  // 64 -> 128 -> 64 through the two Dense modules
}

// transformers' hidden_states: the embeddings, each layer's input, and last
// the normed output (what pooling none returns).
TEST(CausalEmbedderLoadTest, HiddenStatesEndWithTheNormedOutput) {
  auto model = EncoderModel::Load(ModelDir("qwen3_embedding_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in;
  in.text = "A man is eating food.";
  EncodeOptions options;
  options.pooling = PoolingMode::kNone;
  options.normalize = false;
  options.return_hidden_states = true;
  auto out = (*model)->Encode({&in, 1}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const EncodeResult& r = (*out)[0];
  ASSERT_EQ(r.hidden_states.size(), 4u);
  ASSERT_EQ(r.hidden_states.back().numel(), r.embedding.numel());
  for (int64_t k = 0; k < r.embedding.numel(); ++k) {
    EXPECT_EQ(r.hidden_states.back().f32()[k], r.embedding.f32()[k]);
  }
  // The input of layer 1 is not the output: the norm ran only at the end.
  float diff = 0.0f;
  for (int64_t k = 0; k < r.embedding.numel(); ++k) {
    diff = std::max(diff, std::abs(r.hidden_states[2].f32()[k] - r.embedding.f32()[k]));
  }
  EXPECT_GT(diff, 1e-3f);
}

TEST(CausalEmbedderLoadTest, AttentionWeightsAreRefusedNamingTheField) {
  auto model = EncoderModel::Load(ModelDir("qwen3_embedding_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in;
  in.text = "x";
  EncodeOptions options;
  options.attention_layers.push_back(0);  // (= {0} trips GCC 14 -Warray-bounds under ASan)
  auto out = (*model)->Encode({&in, 1}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("attention_layers"));
  options.attention_layers.clear();
  options.pooling = PoolingMode::kSplade;
  out = (*model)->Encode({&in, 1}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("splade"));
}

// Over-long input: truncated to the limit with <|endoftext|> kept last (the
// template goes on after truncation), or refused with truncation off.
TEST(CausalEmbedderLoadTest, TruncationKeepsTheAppendedToken) {
  auto model = EncoderModel::Load(ModelDir("qwen3_embedding_tiny"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EncoderInput in;
  for (int i = 0; i < 40; ++i) in.text += "alpha beta gamma ";
  auto out = (*model)->Encode({&in, 1}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].truncated);
  ASSERT_EQ((*out)[0].token_ids.size(), 64u);
  auto eos = (*model)->Tokenize("<|endoftext|>", false);
  ASSERT_TRUE(eos.ok() && eos->size() == 1u);
  EXPECT_EQ((*out)[0].token_ids.back(), (*eos)[0]);
  EncodeOptions strict;
  strict.truncate = false;
  out = (*model)->Encode({&in, 1}, strict);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("limit is 64"));
}

}  // namespace
}  // namespace attnserve
