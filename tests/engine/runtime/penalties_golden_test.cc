// min_tokens, logit bias and the repetition, frequency and presence penalties through the
// whole engine, against transformers' logits processors (and OpenAI's
// formula for the two penalties it lacks): greedy continuations from
// tools/golden/decoder_penalties.py on the real stories260K and the tiny
// random Llama. Each case was checked there to differ from plain greedy, so
// a penalty that is ignored, counted over the wrong tokens or applied in
// the wrong order fails here.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/decoder_engine.h"
#include "gtest/gtest.h"
#include "tests/engine/models/decoder_test_util.h"

namespace attnserve {
namespace {

const nlohmann::json& Golden() {
  static const nlohmann::json* doc = new nlohmann::json(
      testing_util::ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_sampling/penalties.json"));
  return *doc;
}

std::shared_ptr<const DecoderModel> Model(const std::string& name) {
  static auto* models = new std::map<std::string, std::shared_ptr<const DecoderModel>>();
  auto it = models->find(name);
  if (it != models->end()) return it->second;
  DecoderLoadOptions opt;
  std::string path = ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/" + name;
  if (name == "stories260K") {
    path = ATTNSERVE_SHARED_DIR "/models/stories260K/stories260K.gguf";
    opt.context_length = 512;  // trained context; the GGUF header says 128
  }
  auto model = DecoderModel::Load(path, opt);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  return models->emplace(name, *model).first->second;
}

GenerationParams ParamsOf(const nlohmann::json& c) {
  GenerationParams p;
  p.temperature = 0.0f;
  // The reference never stops early: EOS is ignored, or with min_tokens
  // (as long as the case) suppressed, with the stop token ids.
  p.min_tokens = c.value("min_tokens", 0);
  p.ignore_eos = p.min_tokens == 0;
  if (c.contains("stop_token_ids")) p.stop_token_ids = c["stop_token_ids"].get<std::vector<int32_t>>();
  p.max_new_tokens = c["new_tokens"].get<int>();
  p.repetition_penalty = c.value("repetition_penalty", 1.0f);
  p.frequency_penalty = c.value("frequency_penalty", 0.0f);
  p.presence_penalty = c.value("presence_penalty", 0.0f);
  if (c.contains("logit_bias")) {
    for (const auto& [id, bias] : c["logit_bias"].items()) p.logit_bias.push_back({std::stoi(id), bias.get<float>()});
  }
  return p;
}

std::unique_ptr<DecoderEngine> MakeEngine(const std::shared_ptr<const DecoderModel>& model) {
  KvCacheOptions kv;
  kv.kv_cache_bytes = model->description().kv_bytes_per_token * 1024;
  auto engine = DecoderEngine::Create(model, kv);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

// Runs one sequence to the end, stepping it alone; when `preempt_at` > 0 it
// is released after that many tokens and re-added with them at the end of
// its prompt (resumed_tokens), as the scheduler does on preemption.
std::vector<int32_t> GenerateGreedy(DecoderEngine& engine, const std::vector<int32_t>& prompt, const GenerationParams& p,
                                    int preempt_at) {
  std::vector<int32_t> out;
  auto id = engine.AddSequence(prompt, p);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return out;
  SeqId seq = *id;
  while (!engine.IsFinished(seq)) {
    StepItem item{seq, 3};  // prompt chunks of 3
    auto events = engine.Step({&item, 1});
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) out.insert(out.end(), ev.token_ids.begin(), ev.token_ids.end());
    if (preempt_at > 0 && static_cast<int>(out.size()) == preempt_at && !engine.IsFinished(seq)) {
      engine.Release(seq);
      std::vector<int32_t> resumed = prompt;
      resumed.insert(resumed.end(), out.begin(), out.end());
      GenerationParams q = p;
      q.max_new_tokens -= preempt_at;
      q.resumed_tokens = preempt_at;
      id = engine.AddSequence(std::move(resumed), q);
      EXPECT_TRUE(id.ok()) << id.status();
      if (!id.ok()) return out;
      seq = *id;
      preempt_at = 0;
    }
  }
  engine.Release(seq);
  return out;
}

TEST(PenaltiesGoldenTest, FixtureIsThere) {
  ASSERT_FALSE(Golden().is_discarded());
  EXPECT_GE(Golden()["cases"].size(), 9u);
}

TEST(PenaltiesGoldenTest, GreedyTokensEqualTheReference) {
  for (const nlohmann::json& c : Golden()["cases"]) {
    const std::string name = c["name"].get<std::string>();
    auto model = Model(c["model"].get<std::string>());
    ASSERT_NE(model, nullptr) << name;
    auto engine = MakeEngine(model);
    ASSERT_NE(engine, nullptr);
    const auto want = c["tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(GenerateGreedy(*engine, c["prompt"].get<std::vector<int32_t>>(), ParamsOf(c), 0), want) << name;
  }
}

// The frequency and presence penalties count the request's output, which
// after a preemption sits at the end of the resumed prompt: resuming must
// count it still, and not count the real prompt.
TEST(PenaltiesGoldenTest, PreemptedSequenceKeepsCountingItsOutput) {
  for (const nlohmann::json& c : Golden()["cases"]) {
    const std::string name = c["name"].get<std::string>();
    auto model = Model(c["model"].get<std::string>());
    ASSERT_NE(model, nullptr) << name;
    auto engine = MakeEngine(model);
    ASSERT_NE(engine, nullptr);
    const auto want = c["tokens"].get<std::vector<int32_t>>();
    for (int k : {1, static_cast<int>(want.size()) / 2, static_cast<int>(want.size()) - 1}) {
      EXPECT_EQ(GenerateGreedy(*engine, c["prompt"].get<std::vector<int32_t>>(), ParamsOf(c), k), want)
          << name << " preempted after " << k << " tokens";
    }
  }
}

}  // namespace
}  // namespace attnserve
