// DecoderEngine on real models: stories260K (trained) and the tiny HF Llama.
// Batch invariance, chunked prefill next to decodes, KV exhaustion and reuse,
// prefix sharing, seeds, stop conditions, streaming text.
#include "engine/runtime/decoder_engine.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/runtime/engine_test_util.h"

namespace attnserve {
namespace {

const std::string kStories = ATTNSERVE_SHARED_DIR "/models/stories260K";

std::shared_ptr<const DecoderModel> Stories() {
  static std::shared_ptr<const DecoderModel>* model = [] {
    DecoderLoadOptions opt;
    opt.context_length = 512;  // trained context (the GGUF header says 128)
    auto m = DecoderModel::Load(kStories + "/stories260K.gguf", opt);
    EXPECT_TRUE(m.ok()) << m.status();
    return new std::shared_ptr<const DecoderModel>(m.ok() ? *m : nullptr);
  }();
  return *model;
}

std::unique_ptr<DecoderEngine> MakeEngine(int64_t kv_tokens, int block_size = 16,
                                          bool sharing = true) {
  KvCacheOptions kv;
  kv.kv_cache_bytes = Stories()->description().kv_bytes_per_token * kv_tokens;
  kv.block_size = block_size;
  kv.prefix_sharing = sharing;
  auto e = DecoderEngine::Create(Stories(), kv);
  EXPECT_TRUE(e.ok()) << e.status();
  return *std::move(e);
}

using testing_util::Greedy;

struct Result {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  int stop_index = -1;                      // the stop string that matched
  std::vector<SampledToken> prompt_scores;  // with prompt_logprobs
};

Result RunAlone(DecoderEngine& engine, std::vector<int32_t> prompt, const GenerationParams& p,
                int chunk = 512) {
  Result r;
  absl::Status s = GenerateOne(
      engine, std::move(prompt), p,
      [&](const StepEvent& ev) {
        r.ids.insert(r.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
        r.text += ev.text;
        r.prompt_scores.insert(r.prompt_scores.end(), ev.prompt_logprobs.begin(), ev.prompt_logprobs.end());
        if (ev.finished) r.reason = ev.finish_reason;
        if (ev.stop_index >= 0) r.stop_index = ev.stop_index;
        return true;
      },
      chunk);
  EXPECT_TRUE(s.ok()) << s;
  return r;
}

// Runs several sequences together, each joining at step `join[i]`, prefill
// chunks of `chunk`, until all finish.
std::vector<Result> RunBatched(DecoderEngine& engine, const std::vector<std::vector<int32_t>>& prompts,
                               const std::vector<GenerationParams>& params,
                               const std::vector<int>& join, int chunk) {
  std::vector<Result> out(prompts.size());
  std::vector<SeqId> ids(prompts.size(), -1);
  std::map<SeqId, size_t> index;
  for (int step = 0;; ++step) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (join[i] == step) {
        auto id = engine.AddSequence(prompts[i], params[i]);
        EXPECT_TRUE(id.ok()) << id.status();
        ids[i] = *id;
        index[*id] = i;
      }
    }
    std::vector<StepItem> items;
    bool pending = false;
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (join[i] > step) pending = true;
      if (ids[i] >= 0 && !engine.IsFinished(ids[i])) items.push_back({ids[i], chunk});
    }
    if (items.empty() && !pending) break;
    if (items.empty()) continue;
    auto events = engine.Step(items);
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) {
      Result& r = out[index[ev.seq]];
      r.ids.insert(r.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
      r.text += ev.text;
      r.prompt_scores.insert(r.prompt_scores.end(), ev.prompt_logprobs.begin(), ev.prompt_logprobs.end());
      if (ev.finished) r.reason = ev.finish_reason;
    }
  }
  for (SeqId id : ids) engine.Release(id);
  return out;
}

std::vector<int32_t> RefIds(int runc_case) {
  std::ifstream in(kStories + "/expected/greedy_reference.json");
  nlohmann::json ref = nlohmann::json::parse(in);
  return ref["runc_cases"][runc_case]["generated_ids"].get<std::vector<int32_t>>();
}

TEST(DecoderEngineTest, GreedyGenerationMatchesRunCWithStreamedText) {
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::vector<int32_t> want = RefIds(1);
  Result r = RunAlone(*engine, prompt, Greedy(static_cast<int>(want.size())), /*chunk=*/3);
  EXPECT_EQ(r.ids, want);
  EXPECT_EQ(r.reason, FinishReason::kLength);
  std::string expected_text;
  int32_t prev = prompt.back();
  for (int32_t id : want) {
    expected_text += Stories()->tokenizer().TokenBytes(id, prev);
    prev = id;
  }
  EXPECT_EQ(r.text, expected_text);
  EXPECT_THAT(r.text, testing::StartsWith(", there was a little girl named Lily."));
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);  // everything back in the pool
}

// The working buffers are counted as held: none before a step, then at
// least the activations of the largest step (a 40-token prefill, all of it
// in one step) and its logits, kept (not shrunk) by later one-token steps.
TEST(DecoderEngineTest, ScratchBytesAreTheLargestStepsBuffers) {
  auto engine = MakeEngine(256);
  EXPECT_EQ(engine->scratch_bytes(), 0);
  std::vector<int32_t> prompt(40);
  for (int i = 0; i < 40; ++i) prompt[i] = 100 + i;
  RunAlone(*engine, prompt, Greedy(5), /*chunk=*/64);
  const int64_t held = engine->scratch_bytes();
  EXPECT_GE(held, Stories()->ScratchBytes(40));
  EXPECT_LT(held, 4 * Stories()->ScratchBytes(40) + 64 * 1024);  // the step's, not a multiple of the context's
  RunAlone(*engine, {1, 2}, Greedy(3));
  EXPECT_EQ(engine->scratch_bytes(), held);
}

TEST(DecoderEngineTest, BatchInvarianceWithPrefillNextToDecodes) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 403, 407, 261, 378},           // "Once upon a time"
      {1, 291, 280, 294},                // "The cat"
      {1},                               // no prompt
      {1, 291, 280, 294, 269, 261, 268, 414, 422, 382, 276, 337, 300, 301, 302, 303, 304, 305,
       306, 307, 308, 309, 310},         // long prompt, joins late, prefills in chunks
  };
  const std::vector<int> n = {40, 30, 50, 20};
  std::vector<GenerationParams> params;
  std::vector<Result> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    params.push_back(Greedy(n[i]));
    auto engine = MakeEngine(1024);
    alone.push_back(RunAlone(*engine, prompts[i], params[i]));
  }
  // Staggered joins: sequence 3 prefills 5-token chunks while 0..2 decode.
  auto engine = MakeEngine(2048);
  std::vector<Result> together = RunBatched(*engine, prompts, params, {0, 2, 5, 9}, /*chunk=*/5);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i].ids, alone[i].ids) << "sequence " << i;
    EXPECT_EQ(together[i].text, alone[i].text) << "sequence " << i;
  }
  const std::vector<int32_t> ref = RefIds(1);
  EXPECT_EQ(alone[0].ids, std::vector<int32_t>(ref.begin(), ref.begin() + 40));
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
}

// A sequence scoring its prompt asks for a logits row per prompt token; the
// others in the step must still sample from their own last row, and the
// scores must not depend on the chunking or the neighbours.
TEST(DecoderEngineTest, PromptScoringNextToDecodesChangesNothing) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 403, 407, 261, 378},
      {1, 291, 280, 294, 269, 261, 268, 414, 422, 382, 276, 337, 300, 301, 302, 303, 304, 305},
      {1, 291, 280, 294},
  };
  std::vector<GenerationParams> params = {Greedy(30), Greedy(12), Greedy(25)};
  for (int i : {1, 2}) {
    params[i].prompt_logprobs = true;
    params[i].logprobs = true;
    params[i].top_logprobs = 2;
  }
  std::vector<Result> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto engine = MakeEngine(1024);
    alone.push_back(RunAlone(*engine, prompts[i], params[i]));
  }
  EXPECT_TRUE(alone[0].prompt_scores.empty());
  ASSERT_EQ(alone[1].prompt_scores.size(), prompts[1].size() - 1);
  auto engine = MakeEngine(2048);
  std::vector<Result> together = RunBatched(*engine, prompts, params, {0, 3, 4}, /*chunk=*/4);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i].ids, alone[i].ids) << "sequence " << i;
    ASSERT_EQ(together[i].prompt_scores.size(), alone[i].prompt_scores.size()) << "sequence " << i;
    for (size_t p = 0; p < alone[i].prompt_scores.size(); ++p) {
      const SampledToken& a = alone[i].prompt_scores[p];
      const SampledToken& b = together[i].prompt_scores[p];
      EXPECT_EQ(b.id, prompts[i][p + 1]);
      EXPECT_NEAR(b.logprob, a.logprob, 1e-5) << "sequence " << i << " position " << p + 1;
      ASSERT_EQ(b.top.size(), 2u);
      EXPECT_EQ(b.top[0].id, a.top[0].id);
    }
  }
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
}

TEST(DecoderEngineTest, SeededSamplingIsTheSameInAnyBatch) {
  GenerationParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.max_new_tokens = 24;
  p.seed = 777;
  const std::vector<int32_t> prompt = {1, 291, 280, 294};
  auto e1 = MakeEngine(1024);
  Result alone = RunAlone(*e1, prompt, p);
  GenerationParams other = p;
  other.seed = 1;
  other.temperature = 1.3f;
  auto e2 = MakeEngine(2048);
  std::vector<Result> batch =
      RunBatched(*e2, {{1, 403, 407}, prompt, {1}}, {other, p, Greedy(30)}, {0, 1, 3}, 2);
  EXPECT_EQ(batch[1].ids, alone.ids);
  // A different seed gives a different continuation (24 tokens at t=0.9).
  GenerationParams p2 = p;
  p2.seed = 778;
  auto e3 = MakeEngine(1024);
  EXPECT_NE(RunAlone(*e3, prompt, p2).ids, alone.ids);
}

// The bytes the first `k` of `ids` add to the output after token `prev`.
std::string TextOf(const std::vector<int32_t>& ids, int k, int32_t prev) {
  std::string out;
  for (int i = 0; i < k; ++i) out += Stories()->tokenizer().TokenBytes(ids[i], i == 0 ? prev : ids[i - 1]);
  return out;
}

// Runs `prompt` like RunAlone but preempts it once `k` tokens are out: the
// sequence is released and re-added with its output appended to the prompt,
// as the scheduler does when the KV cache runs out.
Result RunPreemptedAt(DecoderEngine& engine, const std::vector<int32_t>& prompt, const GenerationParams& p, int k) {
  Result r;
  auto id = engine.AddSequence(prompt, p);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return r;
  SeqId seq = *id;
  bool preempted = false;
  while (!engine.IsFinished(seq)) {
    StepItem item{seq, 512};
    auto events = engine.Step({&item, 1});
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) {
      r.ids.insert(r.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
      r.text += ev.text;
      if (ev.finished) r.reason = ev.finish_reason;
      if (ev.stop_index >= 0) r.stop_index = ev.stop_index;
    }
    if (!preempted && static_cast<int>(r.ids.size()) == k && !engine.IsFinished(seq)) {
      preempted = true;
      engine.Release(seq);
      std::vector<int32_t> resumed = prompt;
      resumed.insert(resumed.end(), r.ids.begin(), r.ids.end());
      GenerationParams q = p;
      q.max_new_tokens -= k;
      q.resumed_tokens = k;
      id = engine.AddSequence(std::move(resumed), q);
      EXPECT_TRUE(id.ok()) << id.status();
      if (!id.ok()) return r;
      seq = *id;
    }
  }
  EXPECT_TRUE(preempted) << "finished before " << k << " tokens";
  engine.Release(seq);
  return r;
}

TEST(DecoderEngineTest, PreemptedSequenceResumesItsSeedAndText) {
  // Seeded sampling, and a stop string that never matches but whose first
  // letter ends many tokens: the matcher holds that "e" back until the next
  // token shows it is not "e!!", so a preemption often falls while text is
  // held back.
  GenerationParams p;
  p.temperature = 1.0f;
  p.top_k = 40;
  p.seed = 4242;
  p.max_new_tokens = 48;
  p.ignore_eos = true;
  p.stop = {"e!!"};
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  auto engine = MakeEngine(2048);
  const Result alone = RunAlone(*engine, prompt, p);
  ASSERT_EQ(alone.ids.size(), 48u);
  int held_back_at_a_boundary = 0;
  for (int k = 1; k < 48; k += 3) {
    const Result resumed = RunPreemptedAt(*engine, prompt, p, k);
    EXPECT_EQ(resumed.ids, alone.ids) << "preempted after " << k << " tokens";
    EXPECT_EQ(resumed.text, alone.text) << "preempted after " << k << " tokens";
    EXPECT_EQ(resumed.reason, FinishReason::kLength);
    const std::string piece = TextOf(alone.ids, k, prompt.back());
    held_back_at_a_boundary += !piece.empty() && piece.back() == 'e';
  }
  EXPECT_GT(held_back_at_a_boundary, 0) << "no preemption fell on held-back text; pick another seed";
  EXPECT_EQ(engine->kv_stats().num_sequences, 0);
}

TEST(DecoderEngineTest, StopStringAcrossThePreemptionStillStops) {
  // Greedy: a stop string made of the end of the 10th token's text and the
  // start of the 11th's stops the resumed sequence where it stops the whole one.
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const Result plain = RunAlone(*engine, prompt, Greedy(30));
  const std::string before = TextOf(plain.ids, 10, prompt.back()), upto = TextOf(plain.ids, 11, prompt.back());
  ASSERT_GT(upto.size(), before.size());
  ASSERT_GT(before.size(), 2u);
  const std::string stop = before.substr(before.size() - 2) + upto.substr(before.size(), 2);
  GenerationParams p = Greedy(30);
  p.stop = {stop};
  const Result alone = RunAlone(*engine, prompt, p);
  ASSERT_EQ(alone.reason, FinishReason::kStopString) << stop;
  ASSERT_EQ(alone.ids.size(), 11u) << "'" << stop << "' matched before the boundary";
  const Result resumed = RunPreemptedAt(*engine, prompt, p, 10);
  EXPECT_EQ(resumed.reason, FinishReason::kStopString);
  EXPECT_EQ(resumed.ids, alone.ids);
  EXPECT_EQ(resumed.text, alone.text);
}

// include_stop_string (vLLM's include_stop_str_in_output): the text ends
// with the stop string that matched, whose index the finishing event names;
// what the stopping token adds past the stop is still dropped. The same after a
// preemption just before the stop.
TEST(DecoderEngineTest, IncludeStopStringEndsTheTextWithIt) {
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const Result plain = RunAlone(*engine, prompt, Greedy(30));
  // The first token from the 10th on that adds at least 2 bytes: the stop
  // ends inside its text, so something follows the stop.
  int k = 10;
  while (k < 29 && TextOf(plain.ids, k + 1, prompt.back()).size() < TextOf(plain.ids, k, prompt.back()).size() + 2) ++k;
  const std::string before = TextOf(plain.ids, k, prompt.back()), upto = TextOf(plain.ids, k + 1, prompt.back());
  ASSERT_GE(upto.size(), before.size() + 2) << "no token from the 10th on adds 2 bytes";
  ASSERT_GT(before.size(), 2u);
  const std::string stop = before.substr(before.size() - 2) + upto.substr(before.size(), 1);
  ASSERT_EQ(upto.find(stop), before.size() - 2) << "'" << stop << "' occurs earlier";
  GenerationParams p = Greedy(30);
  p.stop = {"never there", stop};
  const Result dropped = RunAlone(*engine, prompt, p);
  ASSERT_EQ(dropped.reason, FinishReason::kStopString);
  EXPECT_EQ(dropped.text, before.substr(0, before.size() - 2));
  EXPECT_EQ(dropped.stop_index, 1);
  p.include_stop_string = true;
  const Result kept = RunAlone(*engine, prompt, p);
  EXPECT_EQ(kept.reason, FinishReason::kStopString);
  EXPECT_EQ(kept.text, before + upto.substr(before.size(), 1));
  EXPECT_EQ(kept.ids, dropped.ids);
  EXPECT_EQ(kept.stop_index, 1);
  const Result resumed = RunPreemptedAt(*engine, prompt, p, k);
  EXPECT_EQ(resumed.text, kept.text);
  EXPECT_EQ(resumed.stop_index, 1);
  EXPECT_EQ(engine->kv_stats().num_sequences, 0);
}

// min_tokens (vLLM): a stop string met in the first min_tokens tokens'
// text does not stop the sequence; one after it does, and only text after
// the min_tokens-th token is searched. The same when preempted inside the
// min_tokens and after them.
TEST(DecoderEngineTest, MinTokensDefersStopStrings) {
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const Result plain = RunAlone(*engine, prompt, Greedy(40));
  ASSERT_EQ(plain.ids.size(), 40u);
  // A stop string from the 3rd token's text (without its leading space).
  std::string stop = Stories()->tokenizer().TokenBytes(plain.ids[2], plain.ids[1]);
  if (!stop.empty() && stop[0] == ' ') stop = stop.substr(1);
  ASSERT_GE(stop.size(), 2u);
  GenerationParams p = Greedy(40);
  p.stop = {stop};
  const Result early = RunAlone(*engine, prompt, p);
  ASSERT_EQ(early.reason, FinishReason::kStopString);
  ASSERT_LE(early.ids.size(), 3u);
  for (int min_tokens : {3, 10, 25, 40}) {
    p.min_tokens = min_tokens;
    // What vLLM gives: the first min_tokens tokens' text whole, then the
    // rest up to a stop string found in it.
    const std::string head = TextOf(plain.ids, min_tokens, prompt.back());
    const std::string tail = TextOf(plain.ids, 40, prompt.back()).substr(head.size());
    const size_t at = tail.find(stop);
    const std::string want = head + (at == std::string::npos ? tail : tail.substr(0, at));
    const FinishReason want_reason = at == std::string::npos ? FinishReason::kLength : FinishReason::kStopString;
    const Result alone = RunAlone(*engine, prompt, p);
    EXPECT_EQ(alone.text, want) << "min_tokens " << min_tokens;
    EXPECT_EQ(alone.reason, want_reason) << "min_tokens " << min_tokens;
    EXPECT_GE(alone.ids.size(), static_cast<size_t>(min_tokens));
    EXPECT_TRUE(std::equal(alone.ids.begin(), alone.ids.end(), plain.ids.begin()));
    for (int k : {1, min_tokens - 1, min_tokens + 1}) {
      if (k < 1 || k >= static_cast<int>(alone.ids.size())) continue;
      const Result resumed = RunPreemptedAt(*engine, prompt, p, k);
      EXPECT_EQ(resumed.text, alone.text) << "min_tokens " << min_tokens << ", preempted after " << k;
      EXPECT_EQ(resumed.ids, alone.ids) << "min_tokens " << min_tokens << ", preempted after " << k;
    }
  }
  EXPECT_EQ(engine->kv_stats().num_sequences, 0);
}

// A chat template's end-of-turn ids end the answer as EOS does: finish
// reason kStop, ignored with ignore_eos, held back by min_tokens.
TEST(DecoderEngineTest, EndOfTurnIdsEndLikeEos) {
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const Result plain = RunAlone(*engine, prompt, Greedy(30));
  ASSERT_EQ(plain.ids.size(), 30u);
  GenerationParams p = Greedy(30);
  p.ignore_eos = false;
  p.end_of_turn_ids = {plain.ids[4]};
  const Result ended = RunAlone(*engine, prompt, p);
  EXPECT_EQ(ended.reason, FinishReason::kStop);
  ASSERT_LE(ended.ids.size(), 5u);
  EXPECT_EQ(ended.ids.back(), plain.ids[4]);
  p.ignore_eos = true;
  EXPECT_EQ(RunAlone(*engine, prompt, p).ids, plain.ids);
  p.ignore_eos = false;
  p.min_tokens = 12;
  const Result held = RunAlone(*engine, prompt, p);
  ASSERT_GE(held.ids.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_NE(held.ids[i], plain.ids[4]) << "token " << i;
}

// min_tokens suppresses the stop token ids (and EOS) until the output has
// that many tokens: the greedy choice moves to the next best token there.
TEST(DecoderEngineTest, MinTokensSuppressesStopTokenIds) {
  auto engine = MakeEngine(2048);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const Result plain = RunAlone(*engine, prompt, Greedy(30));
  GenerationParams p = Greedy(30);
  p.stop_token_ids = {plain.ids[4]};
  const Result early = RunAlone(*engine, prompt, p);
  ASSERT_EQ(early.reason, FinishReason::kStop);
  ASSERT_LE(early.ids.size(), 5u);
  p.min_tokens = 12;
  const Result held = RunAlone(*engine, prompt, p);
  ASSERT_GE(held.ids.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_NE(held.ids[i], plain.ids[4]) << "token " << i;
  // After the 12th, the stop id may come and stops the sequence.
  if (held.reason == FinishReason::kStop) {
    EXPECT_EQ(held.ids.back(), plain.ids[4]);
  }
  p.min_tokens = 31;
  auto refused = engine->AddSequence(prompt, p);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("min_tokens must be in [0, max_new_tokens = 30], got 31"));
}

TEST(DecoderEngineTest, ResumedTokensMustLeaveAPrompt) {
  auto engine = MakeEngine(256);
  GenerationParams p = Greedy(4);
  p.resumed_tokens = 3;
  EXPECT_THAT(engine->AddSequence({1, 403, 407}, p).status().message(), testing::HasSubstr("resumed_tokens"));
  p.resumed_tokens = -1;
  EXPECT_THAT(engine->AddSequence({1, 403, 407}, p).status().message(), testing::HasSubstr("resumed_tokens"));
  p.resumed_tokens = 2;
  EXPECT_TRUE(engine->AddSequence({1, 403, 407}, p).ok());
}

TEST(DecoderEngineTest, KvExhaustionIsAStatusThenWorksAfterRelease) {
  // 4 blocks of 16 tokens.
  auto engine = MakeEngine(64, 16, /*sharing=*/false);
  auto a = engine->AddSequence({1, 403, 407, 261, 378}, Greedy(200));
  ASSERT_TRUE(a.ok());
  // Run `a` until it holds all 4 blocks (positions 0..63), then one more step.
  absl::Status last;
  for (int i = 0; i < 200; ++i) {
    StepItem item{*a, 512};
    auto ev = engine->Step({&item, 1});
    if (!ev.ok()) {
      last = ev.status();
      break;
    }
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_EQ(engine->kv_stats().blocks_used, 4);
  EXPECT_EQ(engine->kv_sequence_stats(*a).num_tokens, 64);
  EXPECT_EQ(engine->PeakKvBytes(*a), 64 * Stories()->description().kv_bytes_per_token);
  // Another sequence cannot start either; nothing changes.
  auto b = engine->AddSequence({1, 291}, Greedy(4));
  ASSERT_TRUE(b.ok());
  StepItem item_b{*b, 512};
  EXPECT_EQ(engine->Step({&item_b, 1}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(engine->kv_stats().blocks_used, 4);
  // Release (preemption) frees everything; b then runs to completion.
  engine->Release(*a);
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
  Result rb;
  while (!engine->IsFinished(*b)) {
    auto ev = engine->Step({&item_b, 1});
    ASSERT_TRUE(ev.ok()) << ev.status();
    rb.ids.insert(rb.ids.end(), (*ev)[0].token_ids.begin(), (*ev)[0].token_ids.end());
  }
  EXPECT_EQ(rb.ids.size(), 4u);
  engine->Release(*b);
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
  EXPECT_EQ(engine->kv_stats().num_sequences, 0);
}

TEST(DecoderEngineTest, PrefixSharingUsesFewerBlocksAndSameTokens) {
  // 40-token common prefix (2 full blocks of 16), different tails.
  std::vector<int32_t> common = {1};
  std::vector<int32_t> story = RefIds(0);
  common.insert(common.end(), story.begin(), story.begin() + 39);
  std::vector<int32_t> p1 = common, p2 = common;
  p1.push_back(300);
  p2.push_back(301);
  p2.push_back(302);

  auto run_pair = [&](bool sharing, int64_t* blocks_after_prefill, int* cached) {
    auto engine = MakeEngine(1024, 16, sharing);
    auto a = *engine->AddSequence(p1, Greedy(10));
    StepItem ia{a, 512};
    EXPECT_TRUE(engine->Step({&ia, 1}).ok());  // a's prompt is in the cache
    auto b = *engine->AddSequence(p2, Greedy(10));
    *cached = engine->CachedPromptTokens(b);
    StepItem ib{b, 512};
    EXPECT_TRUE(engine->Step({&ib, 1}).ok());
    *blocks_after_prefill = engine->kv_stats().blocks_used;
    std::vector<Result> r(2);
    while (!engine->IsFinished(a) || !engine->IsFinished(b)) {
      std::vector<StepItem> items;
      if (!engine->IsFinished(a)) items.push_back(ia);
      if (!engine->IsFinished(b)) items.push_back(ib);
      auto ev = engine->Step(items);
      EXPECT_TRUE(ev.ok()) << ev.status();
      for (const auto& e : *ev) {
        auto& dst = r[e.seq == a ? 0 : 1].ids;
        dst.insert(dst.end(), e.token_ids.begin(), e.token_ids.end());
      }
    }
    engine->Release(a);
    engine->Release(b);
    EXPECT_EQ(engine->kv_stats().blocks_used, 0);
    return r;
  };
  int64_t shared_blocks = 0, unshared_blocks = 0;
  int cached_shared = 0, cached_unshared = 0;
  auto shared = run_pair(true, &shared_blocks, &cached_shared);
  auto unshared = run_pair(false, &unshared_blocks, &cached_unshared);
  EXPECT_EQ(cached_shared, 32);
  EXPECT_EQ(cached_unshared, 0);
  EXPECT_EQ(unshared_blocks, 6);  // 3 + 3
  EXPECT_EQ(shared_blocks, 4);    // 3 + 1
  EXPECT_EQ(shared[0].ids, unshared[0].ids);
  EXPECT_EQ(shared[1].ids, unshared[1].ids);
}

TEST(DecoderEngineTest, StopTokenStopStringAndLogprobs) {
  auto engine = MakeEngine(1024);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::vector<int32_t> want = RefIds(1);
  // Stop on the id of the 6th generated token: 6 tokens, reason kStop.
  GenerationParams p = Greedy(100);
  p.stop_token_ids = {want[5]};
  Result r = RunAlone(*engine, prompt, p);
  EXPECT_EQ(r.reason, FinishReason::kStop);
  EXPECT_EQ(r.ids, std::vector<int32_t>(want.begin(), want.begin() + 6));
  // Stop string: the text ends right before "Lily".
  GenerationParams q = Greedy(100);
  q.stop = {"Lily"};
  Result s = RunAlone(*engine, prompt, q);
  EXPECT_EQ(s.reason, FinishReason::kStopString);
  EXPECT_EQ(s.text, ", there was a little girl named ");
  // Logprobs: normalised, chosen = top-1 under greedy.
  GenerationParams l = Greedy(3);
  l.logprobs = true;
  l.top_logprobs = 5;
  auto id = *engine->AddSequence(prompt, l);
  StepItem item{id, 512};
  auto ev = engine->Step({&item, 1});
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ((*ev)[0].logprobs.size(), 1u);
  const SampledToken& t = (*ev)[0].logprobs[0];
  ASSERT_EQ(t.top.size(), 5u);
  EXPECT_EQ(t.top[0].id, t.id);
  EXPECT_LE(t.logprob, 0.0f);
  // Alternatives carry the text they would add there: under greedy the best
  // one is the chosen token, whose text is the step's text (" there", not
  // the vocabulary piece "▁there").
  bool saw_space = false;
  for (int step = 0; step < 2; ++step) {
    const StepEvent& e = (*ev)[0];
    ASSERT_EQ(e.logprobs.size(), 1u);
    EXPECT_EQ(e.logprobs[0].top[0].text, e.text) << "step " << step;
    for (const TokenLogprob& alt : e.logprobs[0].top) EXPECT_EQ(alt.text.find("\xE2\x96\x81"), std::string::npos);
    saw_space = saw_space || (!e.text.empty() && e.text[0] == ' ');
    ev = engine->Step({&item, 1});
    ASSERT_TRUE(ev.ok());
  }
  EXPECT_TRUE(saw_space);
  engine->Release(id);
}

TEST(DecoderEngineTest, BadRequestsAreInvalidArgument) {
  auto engine = MakeEngine(256);
  GenerationParams p = Greedy(0);
  EXPECT_THAT(engine->AddSequence({1}, p).status().message(), testing::HasSubstr("max_new_tokens"));
  EXPECT_EQ(engine->AddSequence({}, Greedy(4)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(engine->AddSequence({1, 9999}, Greedy(4)).status().message(),
              testing::HasSubstr("prompt[1]"));
  GenerationParams q = Greedy(4);
  q.stop_token_ids = {-3};
  EXPECT_THAT(engine->AddSequence({1}, q).status().message(), testing::HasSubstr("stop_token_ids"));
  GenerationParams t = Greedy(4);
  t.top_p = 2.0f;
  EXPECT_THAT(engine->AddSequence({1}, t).status().message(), testing::HasSubstr("top_p"));
  StepItem unknown{424242, 1};
  EXPECT_EQ(engine->Step({&unknown, 1}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine->kv_stats().num_sequences, 0);
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

TEST(DecoderEngineContextTest, FinishesWhenTheContextIsFull) {
  DecoderLoadOptions opt;
  opt.context_length = 16;
  auto model = DecoderModel::Load(kStories + "/stories260K.gguf", opt);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->description().max_positions, 16);
  KvCacheOptions kv;
  kv.kv_cache_bytes = (*model)->description().kv_bytes_per_token * 64;
  auto engine = *DecoderEngine::Create(*model, kv);
  // 10 prompt positions + 6 fed generated tokens fill 16; the 7th sampled
  // token would need position 16.
  Result r = RunAlone(*engine, {1, 403, 407, 261, 378, 432, 383, 286, 261, 376}, Greedy(14));
  EXPECT_EQ(r.reason, FinishReason::kContext);
  EXPECT_EQ(r.ids.size(), 7u);
  EXPECT_EQ(engine->kv_stats().blocks_used, 0);
  // Learned-position models cannot be stretched.
  DecoderLoadOptions big;
  big.context_length = 4096;
  EXPECT_EQ(DecoderModel::Load(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/gpt2_tiny", big)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace attnserve
