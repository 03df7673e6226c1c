// DecoderEngine on sliding-window models (tests/golden/decoder_models,
// references from transformers by tools/golden/decoder_logits.py):
// mistral_swa_tiny (window 6 on every layer) gives back each sequence's KV
// blocks as they leave the window, so a pool far smaller than prompt +
// output serves it, alone and batched, with transformers' tokens;
// qwen2_swa_tiny (layer 0 full) keeps every block.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/models/decoder_model.h"
#include "engine/runtime/decoder_engine.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/models/decoder_test_util.h"
#include "tests/engine/runtime/engine_test_util.h"

namespace attnserve {
namespace {

const std::string kModels = ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/";
constexpr int kBlock = 4;
constexpr int kChunk = 7;

nlohmann::json Golden(const std::string& name) {
  return testing_util::ReadJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_logits/" + name + ".json");
}

std::unique_ptr<DecoderEngine> MakeEngine(const std::string& name, int pool_blocks) {
  auto model = DecoderModel::Load(kModels + name, DecoderLoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  KvCacheOptions kv;
  kv.block_size = kBlock;
  kv.kv_cache_bytes = (*model)->description().kv_bytes_per_token * kBlock * pool_blocks;
  auto engine = DecoderEngine::Create(*model, kv);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return *std::move(engine);
}

using testing_util::Greedy;

// Runs every prompt at once in chunks of kChunk until all finish; records
// the most blocks any sequence held after a step.
struct BatchRun {
  std::vector<std::vector<int32_t>> ids;
  int most_blocks_held = 0;
  int released = 0;  // blocks given back, summed over the sequences
};

BatchRun RunTogether(DecoderEngine& engine, const std::vector<std::vector<int32_t>>& prompts, int n) {
  BatchRun run;
  run.ids.resize(prompts.size());
  std::map<SeqId, size_t> index;
  std::map<SeqId, int> released;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto id = engine.AddSequence(prompts[i], Greedy(n));
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return run;
    index[*id] = i;
  }
  while (true) {
    std::vector<StepItem> items;
    for (const auto& [id, i] : index)
      if (!engine.IsFinished(id)) items.push_back({id, kChunk});
    if (items.empty()) break;
    auto events = engine.Step(items);
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) {
      auto& out = run.ids[index[ev.seq]];
      out.insert(out.end(), ev.token_ids.begin(), ev.token_ids.end());
      // (A sequence that finished has given all its blocks back already.)
      const KvSequenceStats st = engine.kv_sequence_stats(ev.seq);
      run.most_blocks_held = std::max(run.most_blocks_held, st.num_blocks);
      released[ev.seq] = std::max(released[ev.seq], st.released_blocks);
    }
  }
  for (const auto& [id, i] : index) {
    run.released += released[id];
    engine.Release(id);
  }
  return run;
}

TEST(SlidingWindowEngineTest, EveryLayerWindowedHoldsOnlyItsWindowAndMatchesTransformers) {
  const nlohmann::json ref = Golden("mistral_swa_tiny");
  const auto prompts = ref["prompts"].get<std::vector<std::vector<int32_t>>>();
  const auto want = ref["greedy"].get<std::vector<std::vector<int32_t>>>();
  // A step holds blocks from the window's first key to the chunk's end:
  // ceil((6 - 1 + 7) / 4) + 1 = 4 blocks, however long the sequence (the
  // longest here is 40 + 64 = 104 positions, 26 blocks).
  const int bound = (6 - 1 + kChunk + kBlock - 1) / kBlock + 1;
  {
    auto engine = MakeEngine("mistral_swa_tiny", bound);
    ASSERT_EQ(engine->kv_window(), 6);
    for (size_t p = 0; p < prompts.size(); ++p) {
      BatchRun run = RunTogether(*engine, {prompts[p]}, static_cast<int>(want[p].size()));
      EXPECT_EQ(run.ids[0], want[p]) << "prompt " << p;
      EXPECT_LE(run.most_blocks_held, bound);
      if (p == prompts.size() - 1) {
        EXPECT_GE(run.released, 20);
      }
      EXPECT_EQ(engine->kv_stats().blocks_used, 0);
    }
  }
  // All four at once, in a pool of four windows (16 blocks, against 73 for
  // their whole lengths).
  auto engine = MakeEngine("mistral_swa_tiny", static_cast<int>(prompts.size()) * bound);
  BatchRun run = RunTogether(*engine, prompts, static_cast<int>(want[0].size()));
  EXPECT_EQ(run.ids, want);
  EXPECT_LE(run.most_blocks_held, bound);
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
}

TEST(SlidingWindowEngineTest, AFullAttentionLayerKeepsEveryBlock) {
  // qwen2_swa_tiny's layer 0 attends to everything: a block holds every
  // layer's K/V, so none can go.
  const nlohmann::json ref = Golden("qwen2_swa_tiny");
  const auto prompts = ref["prompts"].get<std::vector<std::vector<int32_t>>>();
  const auto want = ref["greedy"].get<std::vector<std::vector<int32_t>>>();
  auto engine = MakeEngine("qwen2_swa_tiny", 128);
  EXPECT_EQ(engine->kv_window(), 0);
  BatchRun run = RunTogether(*engine, prompts, static_cast<int>(want[0].size()));
  EXPECT_EQ(run.ids, want);
  EXPECT_EQ(run.released, 0);
  EXPECT_EQ(run.most_blocks_held, (40 + 64 + kBlock - 1) / kBlock);
}

}  // namespace
}  // namespace attnserve
