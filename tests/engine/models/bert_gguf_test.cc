// llama.cpp BERT GGUF files (tools/golden/bert_gguf_golden.py: tiny
// BertModel, DistilBertModel, XLMRobertaModel and reranker files written by
// gguf_bert_writer.py in convert_hf_to_gguf.py's conventions, and a tiny
// nomic-bert) against sentence-transformers on the directory it was
// converted from and against llama.cpp reading the file: the phantom-space
// vocabulary spelled back to WordPiece (ids equal Hugging Face's), the
// tensors read under their Hugging Face names, mean pooling and L2
// normalisation from the file; and the files it refuses, each naming the
// key or tensor.
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/formats/gguf_file.h"
#include "engine/formats/json_util.h"
#include "engine/models/encoder_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/models/encoder_golden_checks.h"
#include "tests/engine/models/encoder_test_util.h"
#include "tests/fuzz/gguf_test_writer.h"

namespace attnserve {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const nlohmann::json& Golden() { return testing_util::GoldenEncoderJson("bert_gguf_golden.json"); }
std::string TinyGguf() { return testing_util::GoldenEncoderModelDir("bert_gguf_tiny.gguf"); }

// A golden file and its cases: the BertModel, the DistilBertModel (no
// token-type table, DistilBERT's layer names mapped by gguf-py), the
// RobertaModel (a byte-level BPE vocabulary, pre "roberta-bpe"), the
// XLMRobertaModel (a SentencePiece Unigram vocabulary, "t5"; the position
// table cut past the padding id by the converter) and a nomic-bert
// (nomic-embed-text's layers: rotary positions, SwiGLU, a fused Wqkv).
struct GoldenFile {
  const char* cases;
  const char* file;
};
void PrintTo(const GoldenFile& f, std::ostream* os) { *os << f.file; }
class BertGgufFileTest : public ::testing::TestWithParam<GoldenFile> {};

// The reference: sentence-transformers on the directory a file was
// converted from; for the nomic-bert file (no Hugging Face class of it runs
// offline) the golden script's numpy transcription, itself checked against
// llama.cpp.
TEST_P(BertGgufFileTest, EmbeddingsEqualTheReference) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir(GetParam().file), {});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_GE(Golden()[GetParam().cases].size(), 9u);
  // Ids equal Hugging Face's (the file's vocabulary spelled back), vectors
  // sentence-transformers' (mean pooling, normalised), batched and alone.
  testing_util::ExpectGoldenEmbeddings(**model, Golden()[GetParam().cases], 1e-4);
}

TEST_P(BertGgufFileTest, EmbeddingsEqualLlamaCppReadingTheFile) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir(GetParam().file), {});
  ASSERT_TRUE(model.ok()) << model.status();
  int compared = 0;
  for (const nlohmann::json& c : Golden()[GetParam().cases]) {
    // llama.cpp's embed() reads "[CLS]" in the text as text, and its
    // Unigram splitter drops trailing whitespace.
    if (c["llama_cpp_embedding"].is_null()) continue;
    EncoderInput in;
    in.text = c["text"].get<std::string>();
    auto out = (*model)->Encode({&in, 1}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].token_ids, ElementsAreArray(c["llama_cpp_ids"].get<std::vector<int32_t>>())) << in.text;
    const std::vector<float> want = c["llama_cpp_embedding"].get<std::vector<float>>();
    ASSERT_EQ((*out)[0].embedding.numel(), static_cast<int64_t>(want.size()));
    // llama.cpp's GELU is the tanh approximation; BERT's (ours) is erf's.
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR((*out)[0].embedding.f32()[k], want[k], 5e-4) << in.text;
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

INSTANTIATE_TEST_SUITE_P(Files, BertGgufFileTest,
                         ::testing::Values(GoldenFile{"tiny", "bert_gguf_tiny.gguf"},
                                           GoldenFile{"distil", "distilbert_gguf_tiny.gguf"},
                                           GoldenFile{"roberta", "roberta_gguf_tiny.gguf"},
                                           GoldenFile{"xlmr", "xlmr_gguf_tiny.gguf"},
                                           GoldenFile{"nomic", "nomic_bert_gguf_tiny.gguf"}),
                         [](const ::testing::TestParamInfo<GoldenFile>& info) {
                           return std::string(info.param.cases);
                         });

TEST(BertGgufTest, DescribesTheFile) {
  auto model = EncoderModel::Load(TinyGguf(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelDescription& d = (*model)->description();
  EXPECT_EQ(d.architecture, "bert");
  EXPECT_EQ(d.name, "bert_gguf_tiny");
  EXPECT_EQ(d.num_layers, 2);
  EXPECT_EQ(d.hidden_size, 32);
  EXPECT_EQ(d.max_positions, 64);
  EXPECT_EQ((*model)->max_tokens(), 64);
  EXPECT_TRUE((*model)->default_normalize());
}

TEST(BertGgufTest, Q8_0StorageStaysCloseAndIsSmaller) {
  ASSERT_FALSE(Golden().is_null());
  auto f32 = EncoderModel::Load(TinyGguf(), {});
  auto q8 = EncoderModel::Load(TinyGguf(), {.weight_dtype = DType::kQ8_0});
  ASSERT_TRUE(f32.ok()) << f32.status();
  ASSERT_TRUE(q8.ok()) << q8.status();
  EXPECT_LT((*q8)->description().weight_bytes, (*f32)->description().weight_bytes / 2);
  for (const nlohmann::json& c : Golden()["tiny"]) {
    EncoderInput in;
    in.text = c["text"].get<std::string>();
    auto out = (*q8)->Encode({&in, 1}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    double dot = 0;
    for (size_t k = 0; k < want.size(); ++k) dot += double{(*out)[0].embedding.f32()[k]} * want[k];
    EXPECT_GT(dot, 0.99) << in.text;  // both unit length
  }
}

// The golden file re-written with edits: `keep_key` / `keep_tensor` drop
// entries, `extra` adds more; saved under the test's temporary directory.
std::string RewrittenGguf(const std::string& name, const std::function<bool(const std::string&)>& keep_key,
                          const std::function<bool(const std::string&)>& keep_tensor,
                          const std::function<void(testing::GgufTestWriter&)>& extra,
                          const std::string& source = TinyGguf()) {
  auto src = GgufFile::Open(source);
  EXPECT_TRUE(src.ok()) << src.status();
  testing::GgufTestWriter w;
  for (const auto& [key, v] : (*src)->metadata()) {
    if (!keep_key(key)) continue;
    if (v.type == GgufValueType::kString) {
      w.KvStr(key, v.s);
    } else if (v.type == GgufValueType::kBool) {
      w.KvBool(key, v.b);
    } else if (v.is_float()) {
      w.KvF64(key, v.f);
    } else if (v.is_integer()) {
      w.KvI64(key, v.i);
    } else if (v.array_type == GgufValueType::kString) {
      w.KvStrArray(key, v.strings);
    } else if (v.array_type == GgufValueType::kFloat32) {
      w.KvF32Array(key, std::vector<float>(v.floats.begin(), v.floats.end()));
    } else {
      w.KvI32Array(key, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
    }
  }
  extra(w);
  for (const GgufTensorInfo& t : (*src)->tensors()) {
    if (!keep_tensor(t.name)) continue;
    w.Tensor(t.name, t.ne, static_cast<uint32_t>(t.type), std::vector<std::byte>(t.data.begin(), t.data.end()));
  }
  const std::vector<std::byte> bytes = w.Build();
  const std::string path = (std::filesystem::path(::testing::TempDir()) / (name + ".gguf")).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
}

auto All = [](const std::string&) { return true; };
auto Nothing = [](testing::GgufTestWriter&) {};

TEST(BertGgufTest, AFaithfulRewriteLoadsTheSame) {
  // The rewriting itself loses nothing, so the refusals below are the edits'.
  auto model = EncoderModel::Load(RewrittenGguf("same", All, All, Nothing), {});
  ASSERT_TRUE(model.ok()) << model.status();
  testing_util::ExpectGoldenEmbeddings(**model, Golden()["tiny"], 1e-4);
}

TEST(BertGgufTest, ACasedVocabularyIsNotLowerCased) {
  // An upper-case token in the vocabulary makes it a cased one: "Hello"
  // then no longer reads as "hello".
  auto cased = EncoderModel::Load(
      RewrittenGguf("cased", [](const std::string& k) { return k != "tokenizer.ggml.tokens"; }, All,
                    [](testing::GgufTestWriter& w) {
                      auto src = GgufFile::Open(TinyGguf());
                      std::vector<std::string> tokens = *(*src)->GetStringArray("tokenizer.ggml.tokens").value();
                      tokens.back() = "\xE2\x96\x81" "ZZZ";
                      w.KvStrArray("tokenizer.ggml.tokens", tokens);
                    }),
      {});
  auto uncased = EncoderModel::Load(TinyGguf(), {});
  ASSERT_TRUE(cased.ok()) << cased.status();
  ASSERT_TRUE(uncased.ok()) << uncased.status();
  auto a = (*cased)->tokenizer().Encode("HELLO", true);
  auto b = (*uncased)->tokenizer().Encode("HELLO", true);
  auto c = (*uncased)->tokenizer().Encode("hello", true);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(b->ids, c->ids);
  EXPECT_NE(a->ids, b->ids);
}

TEST(BertGgufTest, RefusalsNameTheKeyOrTensor) {
  auto refused = [](const std::string& path) {
    auto m = EncoderModel::Load(path, {});
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  auto without_key = [](const std::string& dropped) {
    return [dropped](const std::string& k) { return k != dropped; };
  };
  EXPECT_THAT(refused(RewrittenGguf("causal", without_key("bert.attention.causal"), All,
                                    [](testing::GgufTestWriter& w) { w.KvBool("bert.attention.causal", true); })),
              HasSubstr("bert.attention.causal"));
  EXPECT_THAT(refused(RewrittenGguf("no_ffn", without_key(""), [](const std::string& t) {
                return t != "blk.1.ffn_down.bias";
              }, Nothing)),
              HasSubstr("'blk.1.ffn_down.bias' is missing"));
  EXPECT_THAT(refused(RewrittenGguf("bad_shape", without_key(""), [](const std::string& t) {
                return t != "blk.1.ffn_down.weight";
              }, [](testing::GgufTestWriter& w) {
                w.TensorF32("blk.1.ffn_down.weight", {63, 32}, std::vector<float>(63 * 32));
              })),
              HasSubstr("(blk.1.ffn_down.weight): tensor \"encoder.layer.1.output.dense.weight\" has shape [32, 63]"));
  EXPECT_THAT(refused(RewrittenGguf("no_heads", without_key("bert.attention.head_count"), All, Nothing)),
              HasSubstr("bert.attention.head_count"));
  EXPECT_THAT(refused(RewrittenGguf("no_unk", without_key("tokenizer.ggml.unknown_token_id"), All, Nothing)),
              HasSubstr("tokenizer.ggml.unknown_token_id"));
  EXPECT_THAT(refused(RewrittenGguf("odd_heads", without_key("bert.attention.head_count"), All,
                                    [](testing::GgufTestWriter& w) { w.KvU32("bert.attention.head_count", 5); })),
              HasSubstr("not a multiple of bert.attention.head_count 5"));
  EXPECT_THAT(refused(RewrittenGguf("rank", without_key("bert.pooling_type"), All,
                                    [](testing::GgufTestWriter& w) { w.KvU32("bert.pooling_type", 4); })),
              HasSubstr("bert.pooling_type 4"));
  EXPECT_THAT(refused(RewrittenGguf("qkv", without_key(""), All,
                                    [](testing::GgufTestWriter& w) {
                                      w.TensorF32("blk.0.attn_qkv.weight", {32, 96}, std::vector<float>(32 * 96));
                                    })),
              HasSubstr("attn_qkv"));
  EXPECT_THAT(refused(RewrittenGguf("jina", without_key("general.architecture"), All,
                                    [](testing::GgufTestWriter& w) { w.KvStr("general.architecture", "jina-bert-v3"); })),
              HasSubstr("'jina-bert-v3' is not read"));
}

TEST(BertGgufTest, PoolingComesFromTheFile) {
  ASSERT_FALSE(Golden().is_null());
  auto without_pooling = [](const std::string& k) { return k != "bert.pooling_type"; };
  auto none = EncoderModel::Load(RewrittenGguf("no_pooling", without_pooling, All, Nothing), {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)->default_pooling(), PoolingMode::kMean);
  // bert.pooling_type 2 (a bge file's): transformers' [CLS] state, normalised.
  auto cls = EncoderModel::Load(
      RewrittenGguf("cls_pooling", without_pooling, All,
                    [](testing::GgufTestWriter& w) { w.KvU32("bert.pooling_type", 2); }),
      {});
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_EQ((*cls)->default_pooling(), PoolingMode::kCls);
  nlohmann::json cases = Golden()["tiny"];
  for (nlohmann::json& c : cases) c["embedding"] = c["cls_embedding"];
  testing_util::ExpectGoldenEmbeddings(**cls, cases, 1e-4);
}

TEST(BertGgufTest, ARerankerFileScoresAsTransformersAndLlamaCpp) {
  ASSERT_FALSE(Golden().is_null());
  auto model = EncoderModel::Load(testing_util::GoldenEncoderModelDir("xlmr_reranker_gguf_tiny.gguf"), {});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT((*model)->description().labels, ElementsAreArray({"LABEL_0"}));
  EXPECT_FALSE((*model)->default_normalize());
  const nlohmann::json& cases = Golden()["reranker"];
  ASSERT_GE(cases.size(), 5u);
  // Pairs as transformers encodes them (<s> q </s></s> d </s>), logits through
  // RobertaClassificationHead.
  testing_util::ExpectGoldenLogits(**model, cases, 1e-4);
  int compared = 0;
  for (const nlohmann::json& c : cases) {
    if (c["llama_cpp_score"].is_null()) continue;
    EncoderInput in;
    in.text = c["text"].get<std::string>();
    in.text_pair = c["text_pair"].get<std::string>();
    auto out = (*model)->Encode({&in, 1}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].token_ids, ElementsAreArray(c["llama_cpp_ids"].get<std::vector<int32_t>>()));
    ASSERT_EQ((*out)[0].logits.size(), 1u);
    EXPECT_NEAR((*out)[0].logits[0], c["llama_cpp_score"].get<double>(), 5e-3);  // llama.cpp: tanh GELU
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

TEST(BertGgufTest, AClassifierWithoutItsPoolerIsRefused) {
  const std::string reranker = testing_util::GoldenEncoderModelDir("xlmr_reranker_gguf_tiny.gguf");
  auto m = EncoderModel::Load(
      RewrittenGguf("no_pooler", All, [](const std::string& t) { return t != "cls.weight" && t != "cls.bias"; },
                    Nothing, reranker),
      {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("'cls.output.weight' without 'cls.weight'"));
  auto labels = EncoderModel::Load(
      RewrittenGguf("three_labels", [](const std::string& k) { return k != "bert.classifier.output_labels"; }, All,
                    [](testing::GgufTestWriter& w) { w.KvStrArray("bert.classifier.output_labels", {"a", "b", "c"}); },
                    reranker),
      {});
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.status().message(), HasSubstr("names 3 labels but cls.output.weight has 1 rows"));
}

}  // namespace
}  // namespace attnserve
