#include "engine/formats/decoder_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/json_util.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/gguf_test_writer.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/";
const std::string kStories = std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";

DecoderConfig FromGgufFile(const std::string& path) {
  auto g = GgufFile::Open(path);
  EXPECT_TRUE(g.ok()) << g.status();
  auto c = DecoderConfigFromGguf(**g);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

DecoderConfig FromHfDir(const std::string& dir) {
  auto hf = HfConfig::Read(dir);
  EXPECT_TRUE(hf.ok()) << hf.status();
  auto c = DecoderConfigFromHf(*hf);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(DecoderConfigTest, Stories260KFromGguf) {
  DecoderConfig c = FromGgufFile(kStories);
  // Values from the models README's hyper-parameter table.
  EXPECT_EQ(c.arch, DecoderArch::kLlama);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_positions, 128);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_pairing, RopePairing::kAdjacent);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FALSE(c.tie_word_embeddings);  // the converter wrote output.weight
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_EQ(c.KvBytesPerToken(DType::kF32), 2 * 5 * 4 * 8 * 4);
  EXPECT_EQ(c.KvBytesPerToken(DType::kBF16), 2 * 5 * 4 * 8 * 2);
}

TEST(DecoderConfigTest, LlamaHfAndGgufAgreeExceptPairing) {
  DecoderConfig hf = FromHfDir(kModels + "llama_tiny");
  DecoderConfig gg = FromGgufFile(kModels + "llama_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gg}) {
    EXPECT_EQ(c->hidden_size, 64);
    EXPECT_EQ(c->num_heads, 4);
    EXPECT_EQ(c->num_kv_heads, 2);
    EXPECT_EQ(c->head_dim, 16);
    EXPECT_EQ(c->num_layers, 2);
    EXPECT_EQ(c->intermediate_size, 96);
    EXPECT_FLOAT_EQ(c->rope_theta, 50000.0f);
    EXPECT_FALSE(c->tie_word_embeddings);
    EXPECT_FALSE(c->qkv_bias);
    EXPECT_EQ(c->max_positions, 256);
  }
  EXPECT_EQ(hf.vocab_size, gg.vocab_size);
  EXPECT_EQ(hf.bos_token_id, gg.bos_token_id);
  EXPECT_EQ(hf.eos_token_id, gg.eos_token_id);
  EXPECT_EQ(hf.rope_pairing, RopePairing::kHalfSplit);
  EXPECT_EQ(gg.rope_pairing, RopePairing::kAdjacent);
}

TEST(DecoderConfigTest, Qwen2HasQkvBiasAndHalfSplitInBothFormats) {
  DecoderConfig hf = FromHfDir(kModels + "qwen2_tiny");
  DecoderConfig gg = FromGgufFile(kModels + "qwen2_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gg}) {
    EXPECT_TRUE(c->qkv_bias);
    EXPECT_FALSE(c->attn_out_bias);
    EXPECT_EQ(c->rope_pairing, RopePairing::kHalfSplit);
    EXPECT_NEAR(c->norm_eps, 1e-6f, 1e-12f);
  }
}

TEST(DecoderConfigTest, Qwen3HasQkNormHalfSplitAndItsOwnHeadDimInBothFormats) {
  DecoderConfig hf = FromHfDir(kModels + "qwen3_tiny");
  DecoderConfig gg = FromGgufFile(kModels + "qwen3_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gg}) {
    EXPECT_EQ(c->arch, DecoderArch::kLlama);
    EXPECT_TRUE(c->qk_norm);
    EXPECT_FALSE(c->qkv_bias || c->attn_out_bias);
    EXPECT_EQ(c->rope_pairing, RopePairing::kHalfSplit);
    EXPECT_EQ(c->head_dim, 32);  // not hidden 64 / 4 heads
    EXPECT_EQ(c->rope_dim, 32);
    EXPECT_TRUE(c->tie_word_embeddings);
  }
  // Qwen2 and Llama have no q/k norms.
  EXPECT_FALSE(FromHfDir(kModels + "qwen2_tiny").qk_norm);
  EXPECT_FALSE(FromGgufFile(kModels + "llama_tiny/model.gguf").qk_norm);
}

// A Gemma GGUF describes the model as llama.cpp runs it: the file's norms
// already hold 1 + weight, the attention scale and the sliding layers come
// from the architecture, Gemma 3's sliding layers rotate with
// rope.freq_base_swa; otherwise the same model as its HF directory.
// The ids a GGUF decoder stops at are llama.cpp's end-of-generation tokens
// (tools/golden/gguf_eog_llamacpp.py: llama_vocab_is_eog over every id of
// each fixture): EOS, the file's EOT / EOM / FIM ids, and the tokens spelled
// as llama.cpp's list of turn and text ends, whatever their type
// (eog_tiny/model.gguf takes each path; Qwen's <|endoftext|> beside
// <|im_end|>, Gemma's <end_of_turn>).
TEST(DecoderConfigTest, GgufEndOfGenerationIdsAreLlamaCpps) {
  std::ifstream in(kModels + "gguf_eog_llamacpp.json");
  ASSERT_TRUE(in.good()) << "run tools/golden/gguf_eog_llamacpp.py";
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_GE(doc["files"].size(), 10u);
  size_t most = 0;
  for (const nlohmann::json& f : doc["files"]) {
    const std::string name = f["file"].get<std::string>();
    SCOPED_TRACE(name);
    DecoderConfig c = FromGgufFile(name == "stories260K" ? kStories : kModels + name);
    std::vector<int> ids = c.eos_token_ids;
    EXPECT_EQ(ids.front(), c.eos_token_id);  // EOS first, as before
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, f["eog_ids"].get<std::vector<int>>());
    most = std::max(most, ids.size());
  }
  EXPECT_GE(most, 18u);  // eog_tiny's: every path taken
}

TEST(DecoderConfigTest, GemmaGgufMatchesItsHfDirectory) {
  for (const char* name : {"gemma_tiny", "gemma2_gguf_tiny", "gemma3_gguf_tiny"}) {
    SCOPED_TRACE(name);
    DecoderConfig hf = FromHfDir(kModels + name);
    DecoderConfig gg = FromGgufFile(kModels + name + "/model.gguf");
    EXPECT_EQ(hf.norm_weight_offset, 1.0f);
    EXPECT_EQ(gg.norm_weight_offset, 0.0f);
    EXPECT_EQ(gg.mlp, MlpKind::kGeGlu);
    EXPECT_EQ(gg.rope_pairing, RopePairing::kHalfSplit);
    EXPECT_FLOAT_EQ(gg.embedding_scale, hf.embedding_scale);
    EXPECT_EQ(gg.embedding_scale, 8.0f);  // sqrt(64)
    EXPECT_EQ(gg.sandwich_norms, hf.sandwich_norms);
    EXPECT_EQ(gg.qk_norm, hf.qk_norm);
    EXPECT_FLOAT_EQ(gg.attn_scale, hf.attn_scale);
    EXPECT_EQ(gg.sliding_window, hf.sliding_window);
    EXPECT_EQ(gg.sliding_layers, hf.sliding_layers);
    EXPECT_EQ(gg.attn_logit_softcap, hf.attn_logit_softcap);
    EXPECT_EQ(gg.final_logit_softcap, hf.final_logit_softcap);
    EXPECT_EQ(gg.local_rope_theta, hf.local_rope_theta);
    EXPECT_EQ(gg.rope_theta, hf.rope_theta);
    EXPECT_EQ(gg.rope_scaling.kind, hf.rope_scaling.kind);
    EXPECT_EQ(gg.rope_scaling.factor, hf.rope_scaling.factor);
    EXPECT_EQ(gg.head_dim, 32);  // key_length, not hidden 64 / 4 heads
    EXPECT_TRUE(gg.tie_word_embeddings);
    EXPECT_EQ(gg.bos_token_id, 2);
    // <end_of_turn> (id 5) found by its text, as llama.cpp does.
    EXPECT_EQ(gg.eos_token_ids, (std::vector<int>{1, 5}));
  }
  DecoderConfig g3 = FromGgufFile(kModels + "gemma3_gguf_tiny/model.gguf");
  EXPECT_EQ(g3.sliding_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(g3.local_rope_theta, 10000.0f);
  EXPECT_EQ(g3.rope_theta, 50000.0f);
  EXPECT_FLOAT_EQ(g3.attn_scale, 1.0f / std::sqrt(32.0f));
  DecoderConfig g2 = FromGgufFile(kModels + "gemma2_gguf_tiny/model.gguf");
  EXPECT_EQ(g2.sliding_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(g2.attn_logit_softcap, 2.0f);
  EXPECT_EQ(g2.final_logit_softcap, 8.0f);
}

TEST(DecoderConfigTest, Gpt2) {
  DecoderConfig hf = FromHfDir(kModels + "gpt2_tiny");
  DecoderConfig gg = FromGgufFile(kModels + "gpt2_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gg}) {
    EXPECT_EQ(c->arch, DecoderArch::kGpt2);
    EXPECT_EQ(c->positions, PositionKind::kLearned);
    EXPECT_EQ(c->norm, NormKind::kLayerNorm);
    EXPECT_EQ(c->mlp, MlpKind::kGeluTanh);
    EXPECT_EQ(c->num_heads, c->num_kv_heads);
    EXPECT_EQ(c->intermediate_size, 128);
    EXPECT_EQ(c->max_positions, 128);
    EXPECT_TRUE(c->qkv_bias && c->attn_out_bias && c->mlp_bias);
    EXPECT_TRUE(c->tie_word_embeddings);
  }
}

absl::StatusOr<DecoderConfig> FromJsonText(const std::string& text) {
  auto j = ParseJson(text, "config.json");
  if (!j.ok()) return j.status();
  auto hf = HfConfig::FromJson(*j, "test/config.json");
  if (!hf.ok()) return hf.status();
  return DecoderConfigFromHf(*hf);
}

constexpr char kLlamaBase[] = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100,
  "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "eos_token_id": [5, 7])";

TEST(DecoderConfigTest, HfRopeScalingKinds) {
  auto c = FromJsonText(std::string(kLlamaBase) +
                        R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_THAT(c->eos_token_ids, ::testing::ElementsAre(5, 7));
  auto inv = RopeInvFreq(*c);
  ASSERT_TRUE(inv.ok());
  DecoderConfig plain = *c;
  plain.rope_scaling = RopeScaling();
  auto base = RopeInvFreq(plain);
  ASSERT_TRUE(base.ok());
  // llama3: wavelengths shorter than orig/high_freq_factor keep their
  // frequency, those longer than orig/low_freq_factor are divided by factor,
  // the ones between are interpolated.
  for (size_t i = 0; i < inv->size(); ++i) {
    float wavelen = 2 * static_cast<float>(M_PI) / (*base)[i];
    if (wavelen < 64.0f / 4.0f) EXPECT_FLOAT_EQ((*inv)[i], (*base)[i]) << i;
    else if (wavelen > 64.0f) EXPECT_FLOAT_EQ((*inv)[i], (*base)[i] / 8.0f) << i;
    else EXPECT_TRUE((*inv)[i] < (*base)[i] && (*inv)[i] > (*base)[i] / 8.0f) << i;
  }
  auto lin = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"type": "linear", "factor": 2.0}})");
  ASSERT_TRUE(lin.ok());
  auto linv = RopeInvFreq(*lin);
  for (size_t i = 0; i < linv->size(); ++i) EXPECT_FLOAT_EQ((*linv)[i], (*base)[i] / 2.0f);
  EXPECT_FLOAT_EQ((*base)[1], 1.0f / std::pow(500000.0f, 2.0f / 16.0f));
  auto yarn = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})");
  ASSERT_TRUE(yarn.ok()) << yarn.status();
  // Values against HF are in tests/engine/models/rope_scaling_test.cc; here
  // the parse-time defaults: original = max_position_embeddings, attention
  // factor 0.1 ln(4) + 1.
  EXPECT_EQ(yarn->rope_scaling.original_max_positions, 256);
  EXPECT_FLOAT_EQ(yarn->rope_scaling.attn_factor, static_cast<float>(0.1 * std::log(4.0) + 1.0));
  EXPECT_TRUE(RopeInvFreq(*yarn).ok());
  auto yarn_ms = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "mscale": 0.707, "mscale_all_dim": 0.707}})");
  ASSERT_TRUE(yarn_ms.ok()) << yarn_ms.status();
  EXPECT_FLOAT_EQ(yarn_ms->rope_scaling.attn_factor, 1.0f);  // DeepSeek style: equal mscales cancel
  auto yarn_af = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "attention_factor": 0.5}})");
  ASSERT_TRUE(yarn_af.ok()) << yarn_af.status();
  EXPECT_FLOAT_EQ(yarn_af->rope_scaling.attn_factor, 0.5f);
  auto dyn = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})");
  ASSERT_TRUE(dyn.ok()) << dyn.status();
  // Up to max_position_embeddings dynamic NTK is the plain rope.
  EXPECT_EQ(*RopeInvFreq(*dyn), *base);
  EXPECT_EQ(RopeInvFreqForLength(*dyn, 256), *base);
  EXPECT_LT(RopeInvFreqForLength(*dyn, 512)[1], (*base)[1]);
  EXPECT_FLOAT_EQ(RopeInvFreqForLength(*dyn, 512)[0], 1.0f);
  auto bad = FromJsonText(std::string(kLlamaBase) + R"(, "rope_scaling": {"rope_type": "weird"}})");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("weird"));
}

// A one-layer decoder GGUF's required keys (hidden 8, two heads of 4) and
// its embedding table, for the rope keys a test adds.
testing::GgufTestWriter MinimalDecoderGguf(const std::string& arch, uint32_t context) {
  testing::GgufTestWriter w;
  w.KvStr("general.architecture", arch);
  w.KvU32(arch + ".block_count", 1);
  w.KvU32(arch + ".embedding_length", 8);
  w.KvU32(arch + ".feed_forward_length", 8);
  w.KvU32(arch + ".attention.head_count", 2);
  w.KvU32(arch + ".context_length", context);
  w.TensorF32("token_embd.weight", {8, 10}, std::vector<float>(80, 0.0f));
  return w;
}

TEST(DecoderConfigTest, GgufYarnKeys) {
  // llama.cpp's keys for yarn; the attention factor follows HF's default
  // 0.1 ln(factor) + 1 (llama.cpp's mscale), the betas come from the file.
  testing::GgufTestWriter w = MinimalDecoderGguf("llama", 256);
  w.KvStr("llama.rope.scaling.type", "yarn");
  w.KvF32("llama.rope.scaling.factor", 4.0f);
  w.KvU32("llama.rope.scaling.original_context_length", 64);
  w.KvF32("llama.rope.scaling.yarn_beta_fast", 16.0f);
  const std::vector<std::byte> image = w.Build();
  auto g = GgufFile::Parse(image, "yarn.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = DecoderConfigFromGguf(**g);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kYarn);
  EXPECT_EQ(c->rope_scaling.original_max_positions, 64);
  EXPECT_FLOAT_EQ(c->rope_scaling.beta_fast, 16.0f);
  EXPECT_FLOAT_EQ(c->rope_scaling.beta_slow, 1.0f);
  EXPECT_FLOAT_EQ(RopeAttentionScaling(*c), 0.1f * std::log(4.0f) + 1.0f);
  auto inv = RopeInvFreq(*c);
  ASSERT_TRUE(inv.ok()) << inv.status();
  // Highest frequency extrapolated (unchanged), lowest interpolated (/ factor).
  EXPECT_FLOAT_EQ(inv->front(), 1.0f);
  EXPECT_FLOAT_EQ(inv->back(), 1.0f / std::pow(10000.0f, 2.0f / 4.0f) / 4.0f);
}

TEST(DecoderConfigTest, HfErrorsNameTheProblem) {
  auto gqa = FromJsonText(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 96, "vocab_size": 100})");
  EXPECT_THAT(std::string(gqa.status().message()), HasSubstr("not a multiple of num_kv_heads"));
  auto type = FromJsonText(R"({"model_type": "bert", "hidden_size": 64})");
  EXPECT_THAT(std::string(type.status().message()), HasSubstr("'bert'"));
  auto missing = FromJsonText(R"({"model_type": "llama", "hidden_size": 64})");
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("test/config.json"));
  auto act = FromJsonText(std::string(kLlamaBase) + R"(, "hidden_act": "relu"})");
  EXPECT_THAT(std::string(act.status().message()), HasSubstr("relu"));
  auto gptq = FromJsonText(std::string(kLlamaBase) + R"(, "quantization_config": {"quant_method": "gptq", "bits": 4}})");
  EXPECT_THAT(std::string(gptq.status().message()),
              HasSubstr("test/config.json: quantization_config (quant_method gptq) is not supported"));
}

// Sliding windows as transformers 5.24's configs resolve them.
TEST(DecoderConfigTest, HfSlidingWindows) {
  auto with = [](const std::string& type, const std::string& extra) {
    return FromJsonText(R"({"model_type": ")" + type + R"(", "hidden_size": 64, "num_hidden_layers": 4,
      "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100)" + extra + "}");
  };
  auto windows = [](const DecoderConfig& c) {
    std::vector<int> w;
    for (int l = 0; l < c.num_layers; ++l) w.push_back(c.LayerWindow(l));
    return w;
  };
  using ::testing::ElementsAre;
  // Mistral: MistralConfig's default 4096 when the key is absent (v0.1's
  // own value), none when null (v0.2 and later), on every layer.
  auto mistral = with("mistral", "");
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_THAT(windows(*mistral), ElementsAre(4096, 4096, 4096, 4096));
  auto mistral_null = with("mistral", R"(, "sliding_window": null)");
  ASSERT_TRUE(mistral_null.ok());
  EXPECT_THAT(windows(*mistral_null), ElementsAre(0, 0, 0, 0));
  auto mistral_6 = with("mistral", R"(, "sliding_window": 6)");
  ASSERT_TRUE(mistral_6.ok());
  EXPECT_THAT(windows(*mistral_6), ElementsAre(6, 6, 6, 6));
  EXPECT_THAT(mistral_6->DebugString(), HasSubstr("sliding window 6"));
  // Qwen2 / Qwen3: off unless use_sliding_window, whatever sliding_window
  // says (every released Qwen2.5 config carries one); then the layers at or
  // after max_window_layers, or layer_types' entries.
  for (const char* type : {"qwen2", "qwen3"}) {
    SCOPED_TRACE(type);
    auto off = with(type, R"(, "sliding_window": 32768, "max_window_layers": 1)");
    ASSERT_TRUE(off.ok()) << off.status();
    EXPECT_THAT(windows(*off), ElementsAre(0, 0, 0, 0));
    auto derived = with(type, R"(, "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 2)");
    ASSERT_TRUE(derived.ok()) << derived.status();
    EXPECT_THAT(windows(*derived), ElementsAre(0, 0, 8, 8));
    EXPECT_THAT(derived->DebugString(), HasSubstr("sliding window 8 (layers 2,3)"));
    auto default_layers = with(type, R"(, "use_sliding_window": true, "sliding_window": 8)");
    ASSERT_TRUE(default_layers.ok());  // max_window_layers 28 by default: none of 4 layers
    EXPECT_THAT(windows(*default_layers), ElementsAre(0, 0, 0, 0));
    auto listed = with(type, R"(, "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 0,
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"])");
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_THAT(windows(*listed), ElementsAre(8, 0, 8, 0));
    // layer_types naming sliding layers with the window off: transformers
    // cannot build that mask either.
    auto contradictory = with(type, R"(, "sliding_window": 8,
      "layer_types": ["sliding_attention", "full_attention", "full_attention", "full_attention"])");
    EXPECT_THAT(std::string(contradictory.status().message()),
                HasSubstr("test/config.json: layer_types names sliding_attention layers but use_sliding_window is "
                          "false"));
    auto short_list = with(type, R"(, "layer_types": ["full_attention"])");
    EXPECT_THAT(std::string(short_list.status().message()),
                HasSubstr("layer_types must be an array of num_hidden_layers (4) strings"));
    auto unknown = with(type, R"(, "layer_types": ["full_attention", "chunked_attention", "full_attention",
      "full_attention"])");
    EXPECT_THAT(std::string(unknown.status().message()),
                HasSubstr("layer_types[1] = chunked_attention is not supported"));
  }
  auto bad = with("mistral", R"(, "sliding_window": 0)");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("\"sliding_window\" = 0 is outside"));
  // Llama has no window (transformers' LlamaConfig ignores the key).
  auto llama = with("llama", R"(, "sliding_window": 8)");
  ASSERT_TRUE(llama.ok());
  EXPECT_THAT(windows(*llama), ElementsAre(0, 0, 0, 0));
}

// Gemma 3's text decoder, from transformers 5's file (gemma3_tiny) and from
// the keys of the files published with transformers 4 (gemma-3-1b-it:
// rope_theta, rope_local_base_freq, rope_scaling, sliding_window_pattern).
TEST(DecoderConfigTest, Gemma3TextBothConfigLayouts) {
  DecoderConfig g = FromHfDir(kModels + "gemma3_tiny");
  EXPECT_EQ(g.mlp, MlpKind::kGeGlu);
  EXPECT_TRUE(g.qk_norm);
  EXPECT_TRUE(g.sandwich_norms);
  EXPECT_TRUE(g.tie_word_embeddings);
  EXPECT_EQ(g.norm_weight_offset, 1.0f);
  EXPECT_EQ(g.embedding_scale, 8.0f);                            // sqrt(64)
  EXPECT_FLOAT_EQ(g.attn_scale, 1.0f / std::sqrt(24.0f));        // query_pre_attn_scalar 24, head_dim 32
  EXPECT_EQ(g.head_dim, 32);
  EXPECT_EQ(g.rope_theta, 50000.0f);                              // full_attention
  EXPECT_EQ(g.rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_EQ(g.rope_scaling.factor, 2.0f);
  EXPECT_EQ(g.local_rope_theta, 10000.0f);                        // sliding_attention
  EXPECT_EQ(g.sliding_window, 6);
  EXPECT_THAT(g.sliding_layers, ::testing::ElementsAre(true, true, true, false));
  EXPECT_EQ(g.UniformWindow(), 0);  // the full layer keeps every block
  EXPECT_EQ(g.bos_token_id, 2);
  EXPECT_EQ(g.eos_token_id, 1);

  const std::string base = R"({"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 8,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912,
    "vocab_size": 262144, "max_position_embeddings": 32768, "query_pre_attn_scalar": 256,
    "rope_local_base_freq": 10000, "rope_theta": 1000000, "sliding_window": 512,
    "sliding_window_pattern": 6)";
  auto legacy = FromJsonText(base + R"(, "rope_scaling": {"rope_type": "linear", "factor": 8.0}})");
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(legacy->rope_theta, 1000000.0f);
  EXPECT_EQ(legacy->rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_EQ(legacy->rope_scaling.factor, 8.0f);
  EXPECT_EQ(legacy->local_rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(legacy->embedding_scale, std::sqrt(1152.0f));
  EXPECT_FLOAT_EQ(legacy->attn_scale, 1.0f / 16.0f);
  // Every sixth layer is full: layers 5 (and 11, ...) of 8.
  EXPECT_THAT(legacy->sliding_layers, ::testing::ElementsAre(true, true, true, true, true, false, true, true));
  EXPECT_EQ(legacy->LayerWindow(0), 512);
  EXPECT_EQ(legacy->LayerWindow(5), 0);

  auto softcap = FromJsonText(base + R"(, "attn_logit_softcapping": 50.0})");
  EXPECT_THAT(std::string(softcap.status().message()), HasSubstr("attn_logit_softcapping = 50.0 is not supported"));
  // EmbeddingGemma: read (DecoderModel refuses it for generation; the
  // Encode path runs it, tests/engine/models/causal_embedder_test.cc).
  auto bidirectional = FromJsonText(base + R"(, "use_bidirectional_attention": true})");
  ASSERT_TRUE(bidirectional.ok()) << bidirectional.status();
  EXPECT_TRUE(bidirectional->bidirectional);
  EXPECT_FALSE(legacy->bidirectional);
  auto act = FromJsonText(base + R"(, "hidden_activation": "gelu"})");
  EXPECT_THAT(std::string(act.status().message()), HasSubstr("hidden_activation 'gelu' is not supported"));
  auto multimodal = FromJsonText(R"({"model_type": "gemma3", "text_config": {}})");
  EXPECT_THAT(std::string(multimodal.status().message()), HasSubstr("gemma3_text"));
}

// Gemma 1 and 2 with the keys their published config.json files have
// (gemma-2b: hidden_act "gelu", read as the tanh form as transformers does;
// gemma-2-2b: the caps and window left to Gemma2Config's defaults).
TEST(DecoderConfigTest, Gemma1And2Defaults) {
  auto g1 = FromJsonText(R"({"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 18,
    "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 16384,
    "vocab_size": 256000, "hidden_act": "gelu", "rope_theta": 10000.0})");
  ASSERT_TRUE(g1.ok()) << g1.status();
  EXPECT_EQ(g1->mlp, MlpKind::kGeGlu);
  EXPECT_FALSE(g1->sandwich_norms);
  EXPECT_FALSE(g1->qk_norm);
  EXPECT_EQ(g1->attn_scale, 0.0f);  // 1/sqrt(head_dim)
  EXPECT_EQ(g1->norm_weight_offset, 1.0f);
  EXPECT_FLOAT_EQ(g1->embedding_scale, std::sqrt(2048.0f));
  EXPECT_EQ(g1->sliding_window, 0);
  EXPECT_EQ(g1->attn_logit_softcap, 0.0f);
  EXPECT_EQ(g1->final_logit_softcap, 0.0f);
  EXPECT_EQ(g1->max_positions, 8192);
  EXPECT_TRUE(g1->tie_word_embeddings);
  auto relu = FromJsonText(R"({"model_type": "gemma", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "hidden_act": "relu"})");
  EXPECT_THAT(std::string(relu.status().message()), HasSubstr("hidden_act 'relu' is not supported"));

  auto g2 = FromJsonText(R"({"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216,
    "vocab_size": 256000, "query_pre_attn_scalar": 256})");
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_TRUE(g2->sandwich_norms);
  EXPECT_FALSE(g2->qk_norm);
  EXPECT_EQ(g2->attn_logit_softcap, 50.0f);
  EXPECT_EQ(g2->final_logit_softcap, 30.0f);
  EXPECT_EQ(g2->sliding_window, 4096);
  EXPECT_THAT(g2->sliding_layers, ::testing::ElementsAre(true, false, true, false));  // the even layers
  EXPECT_EQ(g2->local_rope_theta, 0.0f);  // one rope for every layer
  EXPECT_EQ(g2->rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(g2->attn_scale, 1.0f / 16.0f);
  auto uncapped = FromJsonText(R"({"model_type": "gemma2", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "attn_logit_softcapping": null,
    "final_logit_softcapping": null})");
  ASSERT_TRUE(uncapped.ok()) << uncapped.status();
  EXPECT_EQ(uncapped->attn_logit_softcap, 0.0f);
  EXPECT_EQ(uncapped->final_logit_softcap, 0.0f);
}

TEST(DecoderConfigTest, SlidingWindowFixturesAsTransformersWroteThem) {
  DecoderConfig mistral = FromHfDir(kModels + "mistral_swa_tiny");
  EXPECT_EQ(mistral.sliding_window, 6);
  EXPECT_THAT(mistral.sliding_layers, ::testing::ElementsAre(true, true));
  DecoderConfig qwen2 = FromHfDir(kModels + "qwen2_swa_tiny");
  EXPECT_EQ(qwen2.sliding_window, 5);
  EXPECT_THAT(qwen2.sliding_layers, ::testing::ElementsAre(false, true, true));
}

// Phi-3: the longrope fixture's directory and GGUF file (llama.cpp's
// converter's keys and factor tensors) describe the same model.
TEST(DecoderConfigTest, Phi3HfAndGgufAgree) {
  const DecoderConfig hf = FromHfDir(kModels + "phi3_longrope_tiny");
  const DecoderConfig gguf = FromGgufFile(kModels + "phi3_longrope_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gguf}) {
    EXPECT_EQ(c->architecture, "phi3");
    EXPECT_EQ(c->rope_dim, 12);  // 16 * partial_rotary_factor 0.75
    EXPECT_EQ(c->rope_pairing, RopePairing::kHalfSplit);
    EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kLongRope);
    EXPECT_EQ(c->rope_scaling.original_max_positions, 256);
    EXPECT_EQ(c->max_positions, 1024);
    EXPECT_FLOAT_EQ(c->rope_scaling.attn_factor, std::sqrt(1.0f + std::log(4.0f) / std::log(256.0f)));
    EXPECT_THAT(c->rope_scaling.short_factor, ::testing::ElementsAre(1.0f, 1.05f, 1.2f, 1.6f, 2.3f, 3.1f));
    EXPECT_THAT(c->rope_scaling.long_factor, ::testing::ElementsAre(1.1f, 1.6f, 3.0f, 6.5f, 14.0f, 27.0f));
    EXPECT_TRUE(c->tie_word_embeddings);
    EXPECT_EQ(c->sliding_window, 0);
    EXPECT_FALSE(c->qkv_bias);
  }
  DecoderConfig c = hf;
  for (bool use_long : {false, true}) {
    c.rope_scaling.use_long = use_long;
    auto inv = RopeInvFreq(c);
    ASSERT_TRUE(inv.ok()) << inv.status();
    ASSERT_EQ(inv->size(), 6u);
    const std::vector<float>& ext = use_long ? c.rope_scaling.long_factor : c.rope_scaling.short_factor;
    for (int i = 0; i < 6; ++i) {
      EXPECT_FLOAT_EQ((*inv)[i], 1.0f / (ext[i] * std::pow(10000.0f, 2.0f * i / 12.0f))) << i;
    }
  }
  const DecoderConfig windowed = FromHfDir(kModels + "phi3_tiny");
  EXPECT_EQ(windowed.sliding_window, 6);
  EXPECT_THAT(windowed.sliding_layers, ::testing::ElementsAre(true, true));
  EXPECT_EQ(windowed.rope_scaling.kind, RopeScalingKind::kNone);
  EXPECT_EQ(windowed.rope_dim, 16);
}

constexpr char kPhi3Base[] = R"({"model_type": "phi3", "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 131072,
  "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.5)";

// Phi-3's older config.json layouts (rope_scaling with "su" or "longrope",
// the top-level partial_rotary_factor of Phi-4-mini) and its refusals.
TEST(DecoderConfigTest, Phi3LegacyLayoutsAndErrors) {
  auto su = FromJsonText(std::string(kPhi3Base) + R"(, "rope_scaling": {"type": "su",
    "short_factor": [1, 1, 1, 1], "long_factor": [2, 3, 4, 5]}})");
  ASSERT_TRUE(su.ok()) << su.status();
  EXPECT_EQ(su->rope_scaling.kind, RopeScalingKind::kLongRope);
  EXPECT_EQ(su->rope_dim, 8);
  EXPECT_EQ(su->rope_scaling.original_max_positions, 4096);
  EXPECT_FLOAT_EQ(su->rope_scaling.attn_factor, std::sqrt(1.0f + std::log(32.0f) / std::log(4096.0f)));
  EXPECT_EQ(su->sliding_window, 0);  // Phi3Config's default: none
  auto explicit_factor = FromJsonText(std::string(kPhi3Base) + R"(, "rope_scaling": {"rope_type": "longrope",
    "short_factor": [1, 1, 1, 1], "long_factor": [2, 3, 4, 5], "attention_factor": 1.5}})");
  ASSERT_TRUE(explicit_factor.ok()) << explicit_factor.status();
  EXPECT_FLOAT_EQ(explicit_factor->rope_scaling.attn_factor, 1.5f);
  auto short_list = FromJsonText(std::string(kPhi3Base) + R"(, "rope_scaling": {"type": "longrope",
    "short_factor": [1, 1, 1], "long_factor": [2, 3, 4, 5]}})");
  EXPECT_THAT(std::string(short_list.status().message()),
              HasSubstr("test/config.json: rope_scaling.short_factor must be a list of rope_dim / 2 = 4 numbers"));
  auto dynamic = FromJsonText(std::string(kPhi3Base) + R"(, "rope_scaling": {"type": "dynamic", "factor": 2}})");
  EXPECT_THAT(std::string(dynamic.status().message()), HasSubstr("rope_scaling type 'dynamic' is not supported"));
  auto partial = FromJsonText(R"({"model_type": "phi3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "partial_rotary_factor": 1.5})");
  EXPECT_THAT(std::string(partial.status().message()), HasSubstr("partial_rotary_factor 1.5 must be in (0, 1]"));
}

TEST(DecoderConfigTest, Phi3GgufNeedsBothFactorLists) {
  testing::GgufTestWriter w = MinimalDecoderGguf("phi3", 1024);
  w.KvU32("phi3.rope.scaling.original_context_length", 256);
  w.TensorF32("rope_factors_long.weight", {2}, {2.0f, 4.0f});
  const std::vector<std::byte> image = w.Build();
  auto g = GgufFile::Parse(image, "phi3.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = DecoderConfigFromGguf(**g);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("phi3.gguf: tensor 'rope_factors_short.weight' is missing (longrope needs both"));
}

// The mixtures of experts from their directories and GGUF files read the
// same: counts, expert width (Qwen3-MoE's moe_intermediate_size, which its
// GGUF writes as expert_feed_forward_length), renormalisation, and the
// Qwen3 / Llama attention each family keeps.
TEST(DecoderConfigTest, MixtureOfExpertsHfAndGgufAgree) {
  const DecoderConfig qwen_hf = FromHfDir(kModels + "qwen3_moe_tiny");
  const DecoderConfig qwen_gguf = FromGgufFile(kModels + "qwen3_moe_tiny/model.gguf");
  for (const DecoderConfig* c : {&qwen_hf, &qwen_gguf}) {
    EXPECT_EQ(c->num_experts, 8);
    EXPECT_EQ(c->experts_per_token, 3);
    EXPECT_EQ(c->intermediate_size, 32);
    EXPECT_TRUE(c->norm_topk_prob);
    EXPECT_TRUE(c->qk_norm);
    EXPECT_EQ(c->head_dim, 32);
    EXPECT_EQ(c->rope_pairing, RopePairing::kHalfSplit);
    EXPECT_EQ(c->sliding_window, 0);
  }
  EXPECT_FALSE(FromHfDir(kModels + "qwen3_moe_unnorm_tiny").norm_topk_prob);
  const DecoderConfig mixtral_hf = FromHfDir(kModels + "mixtral_tiny");
  const DecoderConfig mixtral_gguf = FromGgufFile(kModels + "mixtral_tiny/model.gguf");
  for (const DecoderConfig* c : {&mixtral_hf, &mixtral_gguf}) {
    EXPECT_EQ(c->num_experts, 4);
    EXPECT_EQ(c->experts_per_token, 2);
    EXPECT_EQ(c->intermediate_size, 96);
    EXPECT_TRUE(c->norm_topk_prob);
    EXPECT_FALSE(c->qk_norm);
    EXPECT_FLOAT_EQ(c->rope_theta, 1e6f);
  }
  EXPECT_EQ(mixtral_gguf.rope_pairing, RopePairing::kAdjacent);  // llama.cpp's permuted Q/K
  EXPECT_EQ(FromHfDir(kModels + "llama_tiny").num_experts, 0);
  const DecoderConfig qwen2_hf = FromHfDir(kModels + "qwen2_moe_tiny");
  const DecoderConfig qwen2_gguf = FromGgufFile(kModels + "qwen2_moe_tiny/model.gguf");
  for (const DecoderConfig* c : {&qwen2_hf, &qwen2_gguf}) {
    EXPECT_EQ(c->num_experts, 8);
    EXPECT_EQ(c->experts_per_token, 2);
    EXPECT_EQ(c->intermediate_size, 32);
    EXPECT_EQ(c->shared_expert_size, 48);
    EXPECT_FALSE(c->norm_topk_prob);  // llama.cpp's qwen2moe does not renormalise either
    EXPECT_TRUE(c->qkv_bias);
    EXPECT_FALSE(c->attn_out_bias);
    EXPECT_FALSE(c->qk_norm);
  }
}

constexpr char kQwen3MoeBase[] = R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "moe_intermediate_size": 16)";

// Defaults as transformers 5.24's configs have them, the older
// "num_experts" and transformers 5's "num_local_experts", windows, and the
// refusals naming their field.
TEST(DecoderConfigTest, MixtureOfExpertsDefaultsAndErrors) {
  auto qwen = FromJsonText(std::string(kQwen3MoeBase) + "}");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_EQ(qwen->num_experts, 128);
  EXPECT_EQ(qwen->experts_per_token, 8);
  EXPECT_FALSE(qwen->norm_topk_prob);
  EXPECT_EQ(qwen->max_positions, 32768);
  auto local = FromJsonText(std::string(kQwen3MoeBase) + R"(, "num_local_experts": 6, "num_experts_per_tok": 2,
    "use_sliding_window": true, "sliding_window": 64})");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->num_experts, 6);
  EXPECT_EQ(local->sliding_window, 64);
  EXPECT_THAT(local->sliding_layers, ::testing::ElementsAre(true, true));
  auto mixtral = FromJsonText(R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "sliding_window": 32})");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status();
  EXPECT_EQ(mixtral->num_experts, 8);
  EXPECT_EQ(mixtral->experts_per_token, 2);
  EXPECT_EQ(mixtral->sliding_window, 32);
  EXPECT_FLOAT_EQ(mixtral->rope_theta, 1e6f);
  auto dense = FromJsonText(std::string(kQwen3MoeBase) + R"(, "mlp_only_layers": [1]})");
  EXPECT_THAT(std::string(dense.status().message()), HasSubstr("mlp_only_layers / decoder_sparse_step"));
  auto step = FromJsonText(std::string(kQwen3MoeBase) + R"(, "decoder_sparse_step": 2})");
  EXPECT_THAT(std::string(step.status().message()), HasSubstr("decoder_sparse_step 2"));
  auto too_many = FromJsonText(std::string(kQwen3MoeBase) + R"(, "num_experts": 4, "num_experts_per_tok": 5})");
  EXPECT_THAT(std::string(too_many.status().message()), HasSubstr("num_experts_per_tok"));
  auto qwen2 = FromJsonText(R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100})");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  // Qwen2MoeConfig's defaults (Qwen1.5-MoE-A2.7B's shape).
  EXPECT_EQ(qwen2->num_experts, 60);
  EXPECT_EQ(qwen2->experts_per_token, 4);
  EXPECT_EQ(qwen2->intermediate_size, 1408);
  EXPECT_EQ(qwen2->shared_expert_size, 5632);
  EXPECT_FALSE(qwen2->norm_topk_prob);
  EXPECT_TRUE(qwen2->qkv_bias);
  auto qwen2_windows = FromJsonText(R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "use_sliding_window": true})");
  EXPECT_THAT(std::string(qwen2_windows.status().message()),
              HasSubstr("use_sliding_window without layer_types is not supported"));
}

TEST(DecoderConfigTest, MixtureOfExpertsGgufKeys) {
  testing::GgufTestWriter w = MinimalDecoderGguf("qwen3moe", 256);
  w.KvU32("qwen3moe.expert_count", 4);
  const std::vector<std::byte> image = w.Build();
  auto g = GgufFile::Parse(image, "moe.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = DecoderConfigFromGguf(**g);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("qwen3moe.expert_used_count"));
  testing::GgufTestWriter gemma = MinimalDecoderGguf("gemma", 256);
  gemma.KvU32("gemma.expert_count", 4);
  const std::vector<std::byte> gemma_image = gemma.Build();
  auto gg = GgufFile::Parse(gemma_image, "gemma.gguf");
  ASSERT_TRUE(gg.ok()) << gg.status();
  EXPECT_THAT(std::string(DecoderConfigFromGguf(**gg).status().message()),
              HasSubstr("gemma.expert_count: experts are supported for llama (Mixtral), qwen2moe, qwen3moe, "
                        "granitemoe and olmoe, not gemma"));
}
// Granite's multipliers from config.json and the GGUF scales llama.cpp's
// converter writes read the same (Q/K pairs adjacent in the GGUF, which
// the converter permutes as Llama's); Granite MoE's experts.
TEST(DecoderConfigTest, GraniteHfAndGgufAgree) {
  for (const char* name : {"granite_tiny", "granitemoe_tiny"}) {
    const DecoderConfig hf = FromHfDir(kModels + name);
    const DecoderConfig gguf = FromGgufFile(kModels + name + "/model.gguf");
    for (const DecoderConfig* c : {&hf, &gguf}) {
      EXPECT_FLOAT_EQ(c->embedding_scale, 4.0f) << name;
      EXPECT_FLOAT_EQ(c->attn_scale, 0.2f) << name;
      EXPECT_FLOAT_EQ(c->residual_scale, 0.5f) << name;
      EXPECT_FLOAT_EQ(c->logit_scale, 2.5f) << name;
      EXPECT_EQ(c->num_experts, std::string(name) == "granitemoe_tiny" ? 6 : 0) << name;
    }
    EXPECT_EQ(gguf.rope_pairing, RopePairing::kAdjacent);
    EXPECT_EQ(hf.rope_pairing, RopePairing::kHalfSplit);
  }
  const DecoderConfig moe = FromHfDir(kModels + "granitemoe_tiny");
  EXPECT_EQ(moe.experts_per_token, 2);
  EXPECT_EQ(moe.intermediate_size, 32);
  EXPECT_TRUE(moe.norm_topk_prob);
}

// OLMo 2 and OLMoE from their directories and GGUF files: whole-projection
// q/k norms, OLMo 2's post-norms only, OLMoE's experts; the refusals.
TEST(DecoderConfigTest, OlmoHfAndGgufAgree) {
  for (const char* name : {"olmo2_tiny", "olmoe_tiny"}) {
    const bool moe = std::string(name) == "olmoe_tiny";
    const DecoderConfig hf = FromHfDir(kModels + name);
    const DecoderConfig gguf = FromGgufFile(kModels + name + "/model.gguf");
    for (const DecoderConfig* c : {&hf, &gguf}) {
      EXPECT_TRUE(c->qk_norm_whole) << name;
      EXPECT_FALSE(c->qk_norm) << name;
      EXPECT_EQ(c->pre_norms, moe) << name;
      EXPECT_EQ(c->sandwich_norms, !moe) << name;
      EXPECT_EQ(c->num_experts, moe ? 8 : 0) << name;
      EXPECT_FALSE(c->norm_topk_prob && moe) << name;
      EXPECT_EQ(c->rope_pairing, RopePairing::kHalfSplit) << name;
      EXPECT_FLOAT_EQ(c->clip_qkv, 0.0f) << name;
    }
  }
  EXPECT_FLOAT_EQ(FromHfDir(kModels + "olmoe_clip_tiny").clip_qkv, 1.0f);
  auto gqa = FromJsonText(R"({"model_type": "olmoe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "head_dim": 8, "intermediate_size": 32, "vocab_size": 100})");
  EXPECT_THAT(std::string(gqa.status().message()), HasSubstr("num_attention_heads x head_dim must equal it"));
  testing::GgufTestWriter w = MinimalDecoderGguf("olmo2", 256);
  w.KvU32("olmo2.attention.sliding_window", 16);
  const std::vector<std::byte> image = w.Build();
  auto g = GgufFile::Parse(image, "olmo3.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(std::string(DecoderConfigFromGguf(**g).status().message()),
              HasSubstr("olmo3.gguf: olmo2.attention.sliding_window (OLMo 3's windows) is not supported"));
}

// SmolLM3's NoPE layers: no_rope_layers from config.json, llama.cpp's fixed
// every-4th rule from its GGUF, the interval when the list is absent.
TEST(DecoderConfigTest, SmolLM3RopeLayers) {
  const DecoderConfig hf = FromHfDir(kModels + "smollm3_tiny");
  const DecoderConfig gguf = FromGgufFile(kModels + "smollm3_tiny/model.gguf");
  for (const DecoderConfig* c : {&hf, &gguf}) {
    EXPECT_THAT(c->rope_layers, ::testing::ElementsAre(true, true, true, false));
    EXPECT_TRUE(c->tie_word_embeddings);
  }
  EXPECT_EQ(gguf.rope_pairing, RopePairing::kAdjacent);
  constexpr char kBase[] = R"({"model_type": "smollm3", "hidden_size": 64, "num_hidden_layers": 6,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100)";
  auto every_third = FromJsonText(std::string(kBase) + R"(, "no_rope_layer_interval": 3})");
  ASSERT_TRUE(every_third.ok()) << every_third.status();
  EXPECT_THAT(every_third->rope_layers, ::testing::ElementsAre(true, true, false, true, true, false));
  auto short_list = FromJsonText(std::string(kBase) + R"(, "no_rope_layers": [1, 0]})");
  EXPECT_THAT(std::string(short_list.status().message()),
              HasSubstr("no_rope_layers must be a list of num_hidden_layers (6) 0 / 1 entries"));
  auto windows = FromJsonText(std::string(kBase) + R"(, "use_sliding_window": true, "sliding_window": 8})");
  EXPECT_THAT(std::string(windows.status().message()), HasSubstr("use_sliding_window without layer_types"));
}

TEST(DecoderConfigTest, GraniteDefaultsAndErrors) {
  auto plain = FromJsonText(R"({"model_type": "granite", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  // GraniteConfig's multipliers default to 1: Llama's arithmetic.
  EXPECT_FLOAT_EQ(plain->embedding_scale, 1.0f);
  EXPECT_FLOAT_EQ(plain->attn_scale, 1.0f);
  EXPECT_FLOAT_EQ(plain->residual_scale, 1.0f);
  EXPECT_FLOAT_EQ(plain->logit_scale, 1.0f);
  auto zero = FromJsonText(R"({"model_type": "granite", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "logits_scaling": 0})");
  EXPECT_THAT(std::string(zero.status().message()), HasSubstr("logits_scaling must be a positive number (got 0)"));
  testing::GgufTestWriter w = MinimalDecoderGguf("granite", 256);
  const std::vector<std::byte> image = w.Build();
  auto g = GgufFile::Parse(image, "granite.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(std::string(DecoderConfigFromGguf(**g).status().message()),
              HasSubstr("granite.gguf: granite.logit_scale must be > 0 (got 0)"));
  testing::GgufTestWriter shared = MinimalDecoderGguf("granitemoe", 256);
  shared.KvF32("granitemoe.logit_scale", 1.0f);
  shared.KvU32("granitemoe.expert_count", 4);
  shared.KvU32("granitemoe.expert_used_count", 2);
  shared.KvU32("granitemoe.expert_shared_feed_forward_length", 16);
  const std::vector<std::byte> shared_image = shared.Build();
  auto gs = GgufFile::Parse(shared_image, "shared.gguf");
  ASSERT_TRUE(gs.ok()) << gs.status();
  EXPECT_THAT(std::string(DecoderConfigFromGguf(**gs).status().message()),
              HasSubstr("granitemoe.expert_shared_feed_forward_length 16: a shared expert"));
}

}  // namespace
}  // namespace attnserve
