// Constrained output on the real stories260K. JSON mode
// (OutputFormat::kJsonObject): the output is a JSON object, each token is the
// model's best one the grammar allows, sampling keeps to the grammar,
// preemption resumes the same output, and the combinations that cannot work
// are refused by name. A choice (OutputFormat::kChoice): the output is one of
// the strings, greedy takes the model's best path among them.
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "engine/runtime/decoder_engine.h"
#include "engine/sampling/json_acceptor.h"
#include "engine/sampling/json_schema.h"
#include "engine/sampling/sorted_vocabulary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const DecoderModel> Stories() {
  static std::shared_ptr<const DecoderModel>* model = [] {
    DecoderLoadOptions opt;
    opt.context_length = 512;
    auto m = DecoderModel::Load(ATTNSERVE_SHARED_DIR "/models/stories260K/stories260K.gguf", opt);
    EXPECT_TRUE(m.ok()) << m.status();
    return new std::shared_ptr<const DecoderModel>(m.ok() ? *m : nullptr);
  }();
  return *model;
}

std::unique_ptr<DecoderEngine> MakeEngine(const std::shared_ptr<const DecoderModel>& model = Stories()) {
  KvCacheOptions kv;
  kv.kv_cache_bytes = model->description().kv_bytes_per_token * 4096;
  auto e = DecoderEngine::Create(model, kv);
  EXPECT_TRUE(e.ok()) << e.status();
  return *std::move(e);
}

// The tiny random Qwen2 (a byte-level BPE vocabulary with an added
// non-special token); null when it does not load.
std::shared_ptr<const DecoderModel> QwenTiny() {
  auto model = DecoderModel::Load(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_models/qwen2_tiny", DecoderLoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

struct JsonRun {
  std::vector<int32_t> ids;
  std::vector<SampledToken> logprobs;
  std::string text;
  FinishReason reason = FinishReason::kNone;
};

JsonRun Generate(DecoderEngine& engine, const std::vector<int32_t>& prompt, const GenerationParams& p) {
  JsonRun r;
  absl::Status st = GenerateOne(engine, prompt, p, [&](const StepEvent& ev) {
    r.ids.insert(r.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    r.logprobs.insert(r.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    r.text += ev.text;
    if (ev.finished) r.reason = ev.finish_reason;
    return true;
  });
  EXPECT_TRUE(st.ok()) << st;
  return r;
}

// The run's output after `cut` tokens, generated again by a sequence
// resumed there (a preemption: its first `cut` output tokens at the end of
// its prompt).
std::vector<int32_t> ResumedAt(DecoderEngine& engine, const std::vector<int32_t>& prompt, const JsonRun& run,
                               const GenerationParams& p, size_t cut) {
  std::vector<int32_t> resumed = prompt;
  resumed.insert(resumed.end(), run.ids.begin(), run.ids.begin() + cut);
  GenerationParams rp = p;
  rp.resumed_tokens = static_cast<int>(cut);
  rp.max_new_tokens = p.max_new_tokens - static_cast<int>(cut);
  return Generate(engine, resumed, rp).ids;
}

std::vector<int32_t> Prompt(const std::string& text) {
  auto ids = Stories()->tokenizer().Encode(text);
  EXPECT_TRUE(ids.ok());
  return *ids;
}

GenerationParams JsonParams(int n, float temperature) {
  GenerationParams p;
  p.max_new_tokens = n;
  p.temperature = temperature;
  p.output_format = OutputFormat::kJsonObject;
  return p;
}

// Whether the grammar takes `id` after the output `text` so far (the plain
// definition, not the engine's mask).
bool GrammarTakes(const std::string& text, int32_t id, int32_t prev) {
  const Tokenizer& tok = Stories()->tokenizer();
  JsonAcceptor a;
  if (!a.Feed(text)) return false;
  if (a.complete()) return id == tok.special().eos;
  if (tok.IsControl(id)) return false;
  const std::string bytes = tok.TokenBytes(id, prev);
  return !bytes.empty() && a.Feed(bytes);
}

TEST(JsonModeTest, GreedyTakesTheBestTokenTheGrammarAllowsAndEndsWithTheObject) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Once upon a time, there was a little girl");
  GenerationParams plain_params = JsonParams(48, 0.0f);
  plain_params.output_format = OutputFormat::kText;
  const JsonRun plain = Generate(*engine, prompt, plain_params);
  JsonAcceptor plain_json;
  EXPECT_FALSE(plain_json.Feed(plain.text)) << plain.text;  // the story alone is no JSON

  GenerationParams p = JsonParams(200, 0.0f);
  p.logprobs = true;
  p.top_logprobs = 20;
  const JsonRun run = Generate(*engine, prompt, p);
  ASSERT_EQ(run.logprobs.size(), run.ids.size());
  const Tokenizer& tok = Stories()->tokenizer();
  std::string text;
  int32_t prev = prompt.back();
  int alternatives_checked = 0;
  for (size_t i = 0; i < run.ids.size(); ++i) {
    const int32_t id = run.ids[i];
    ASSERT_TRUE(GrammarTakes(text, id, prev)) << "token " << i << " (" << id << ") after " << text;
    // No token the grammar takes here is more likely than the one chosen
    // (among the 20 best the engine reports).
    for (const TokenLogprob& alt : run.logprobs[i].top) {
      if (alt.id == id || !GrammarTakes(text, alt.id, prev)) continue;
      EXPECT_LE(alt.logprob, run.logprobs[i].logprob) << "token " << i << " after " << text;
      ++alternatives_checked;
    }
    if (!tok.IsControl(id)) {
      text += tok.TokenBytes(id, prev);
      prev = id;
    }
  }
  EXPECT_GT(alternatives_checked, 0);
  EXPECT_EQ(run.text, text);
  if (run.reason == FinishReason::kStop) {
    JsonAcceptor a;
    EXPECT_TRUE(a.Feed(run.text) && a.complete()) << run.text;
    EXPECT_EQ(run.ids.back(), tok.special().eos);
  } else {
    EXPECT_EQ(run.reason, FinishReason::kLength);
  }
}

TEST(JsonModeTest, SampledOutputsKeepToTheGrammarAndCloseWhenGivenRoom) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Lily said");
  // stories260K writes stories, not objects: a bias towards "}" (a byte
  // token) lets some of them close.
  const std::optional<int32_t> brace = Stories()->tokenizer().PieceToId("<0x7D>");
  ASSERT_TRUE(brace.has_value());
  int closed = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GenerationParams p = JsonParams(120, 1.0f);
    p.seed = seed;
    p.logit_bias = {{*brace, 6.0f}};
    const JsonRun run = Generate(*engine, prompt, p);
    JsonAcceptor a;
    ASSERT_TRUE(a.Feed(run.text)) << "seed " << seed << ": " << run.text;
    if (run.reason == FinishReason::kStop) {
      EXPECT_TRUE(a.complete()) << run.text;
      ++closed;
    } else {
      EXPECT_EQ(run.reason, FinishReason::kLength) << run.text;
      EXPECT_FALSE(a.complete()) << run.text;
    }
  }
  EXPECT_GT(closed, 0);
}

TEST(JsonModeTest, AResumedSequenceGoesOnWithTheSameOutput) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Tim had a ball");
  GenerationParams p = JsonParams(40, 0.8f);
  p.seed = 7;
  const JsonRun whole = Generate(*engine, prompt, p);
  ASSERT_GE(whole.ids.size(), 10u);
  const int k = 6;
  std::vector<int32_t> resumed_prompt = prompt;
  resumed_prompt.insert(resumed_prompt.end(), whole.ids.begin(), whole.ids.begin() + k);
  GenerationParams rp = p;
  rp.resumed_tokens = k;
  rp.max_new_tokens = p.max_new_tokens - k;
  const JsonRun rest = Generate(*engine, resumed_prompt, rp);
  EXPECT_EQ(rest.ids, std::vector<int32_t>(whole.ids.begin() + k, whole.ids.end()));
}

TEST(JsonModeTest, JsonAndTextSequencesInOneBatchEachGiveWhatTheyGiveAlone) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt_a = Prompt("Lily said"), prompt_b = Prompt("Tim had a ball");
  GenerationParams json_params = JsonParams(60, 0.9f);
  json_params.seed = 3;
  GenerationParams text_params = JsonParams(60, 0.9f);
  text_params.seed = 4;
  text_params.output_format = OutputFormat::kText;
  const JsonRun alone_a = Generate(*engine, prompt_a, json_params);
  const JsonRun alone_b = Generate(*engine, prompt_b, text_params);
  absl::StatusOr<SeqId> a = engine->AddSequence(prompt_a, json_params);
  absl::StatusOr<SeqId> b = engine->AddSequence(prompt_b, text_params);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<int32_t> ids_a, ids_b;
  while (!engine->IsFinished(*a) || !engine->IsFinished(*b)) {
    std::vector<StepItem> items;
    for (SeqId id : {*a, *b}) {
      if (!engine->IsFinished(id)) items.push_back({id, 512});
    }
    absl::StatusOr<std::vector<StepEvent>> events = engine->Step(items);
    ASSERT_TRUE(events.ok()) << events.status();
    for (const StepEvent& ev : *events) {
      std::vector<int32_t>& ids = ev.seq == *a ? ids_a : ids_b;
      ids.insert(ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    }
  }
  EXPECT_EQ(ids_a, alone_a.ids);
  EXPECT_EQ(ids_b, alone_b.ids);
  engine->Release(*a);
  engine->Release(*b);
}

TEST(JsonModeTest, RefusesWhatCannotEndWithTheObject) {
  auto engine = MakeEngine();
  GenerationParams p = JsonParams(8, 0.0f);
  p.ignore_eos = true;
  absl::StatusOr<SeqId> id = engine->AddSequence(Prompt("Hi"), p);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("ignore_eos"));
  p.ignore_eos = false;
  p.min_tokens = 2;
  id = engine->AddSequence(Prompt("Hi"), p);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("min_tokens"));
  // A resumed output that is no JSON.
  GenerationParams rp = JsonParams(8, 0.0f);
  std::vector<int32_t> prompt = Prompt("Hi there");
  rp.resumed_tokens = 1;
  id = engine->AddSequence(prompt, rp);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("does not continue the constrained output"));
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

GenerationParams ChoiceParams(std::vector<std::string> choices, float temperature) {
  GenerationParams p;
  p.max_new_tokens = 64;
  p.temperature = temperature;
  p.output_format = OutputFormat::kChoice;
  p.choices = std::move(choices);
  return p;
}

// Each choice's ids as stories260K's tokenizer writes it after a prompt
// token (its leading "▁" then a space).
TEST(ChoiceTest, GreedyAnswersWithTheChoiceTheModelScoresBestTokenByToken) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Once upon a time, there was a little girl named");
  const std::vector<std::string> choices = {" Lily", " Tom", " Sue and her dog", " Ben"};
  GenerationParams p = ChoiceParams(choices, 0.0f);
  p.logprobs = true;
  p.top_logprobs = 20;
  const JsonRun run = Generate(*engine, prompt, p);
  EXPECT_EQ(run.reason, FinishReason::kStop);
  EXPECT_THAT(choices, ::testing::Contains(run.text));
  // Every token chosen continues some choice, and no alternative among the
  // 20 best that also continues one (or ends a whole one) was more likely.
  const Tokenizer& tok = Stories()->tokenizer();
  std::string text;
  int32_t prev = prompt.back();
  for (size_t i = 0; i < run.ids.size(); ++i) {
    auto continues = [&](int32_t id) {
      if (id == tok.special().eos) return std::find(choices.begin(), choices.end(), text) != choices.end();
      if (tok.IsControl(id)) return false;
      const std::string next = text + tok.TokenBytes(id, prev);
      return std::any_of(choices.begin(), choices.end(), [&](const std::string& c) { return c.rfind(next, 0) == 0; });
    };
    ASSERT_TRUE(continues(run.ids[i])) << i;
    for (const TokenLogprob& alt : run.logprobs[i].top) {
      if (alt.id != run.ids[i] && continues(alt.id)) {
        EXPECT_LE(alt.logprob, run.logprobs[i].logprob) << i;
      }
    }
    if (!tok.IsControl(run.ids[i])) {
      text += tok.TokenBytes(run.ids[i], prev);
      prev = run.ids[i];
    }
  }
}

TEST(ChoiceTest, SampledAnswersAreAlwaysOneOfTheChoicesAndAPrefixChoiceCanEnd) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Tim said");
  // " yes" is a prefix of " yes please": both must be reachable.
  const std::vector<std::string> choices = {" yes", " yes please", " no", "\u00e9t\u00e9 \"quoted\""};
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    GenerationParams p = ChoiceParams(choices, 1.5f);
    p.seed = seed;
    // A story rarely ends after " yes": a bias on EOS (allowed only there)
    // lets some answers stop at the shorter choice.
    p.logit_bias = {{Stories()->tokenizer().special().eos, 20.0f}};
    const JsonRun run = Generate(*engine, prompt, p);
    ASSERT_EQ(run.reason, FinishReason::kStop) << run.text;
    ASSERT_THAT(choices, ::testing::Contains(run.text));
    seen.insert(run.text);
  }
  EXPECT_TRUE(seen.count(" yes") && seen.count(" yes please")) << ::testing::PrintToString(seen);
  EXPECT_GE(seen.size(), 3u) << ::testing::PrintToString(seen);
}

// Against an independent reference: transformers' Llama from the same GGUF,
// constrained by xgrammar's matcher with the same grammar in its EBNF, or
// with xgrammar's own grammar for a JSON schema
// (tools/golden/constrained_decoding.py). Greedy, so the ids must be equal.
TEST(ConstrainedGoldenTest, GreedyOutputsEqualTransformersWithXgrammar) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_sampling/constrained.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_GE(doc["cases"].size(), 21u);
  auto engine = MakeEngine();
  int closed = 0, cut = 0;
  for (const nlohmann::json& c : doc["cases"]) {
    GenerationParams p;
    p.temperature = 0.0f;
    p.max_new_tokens = c["max_new_tokens"];
    for (const auto& [id, bias] : c["logit_bias"].items()) p.logit_bias.push_back({std::stoi(id), bias.get<float>()});
    std::sort(p.logit_bias.begin(), p.logit_bias.end(),
              [](const LogitBias& a, const LogitBias& b) { return a.id < b.id; });
    if (c["format"] == "json_object") {
      p.output_format = OutputFormat::kJsonObject;
    } else if (c["format"] == "json_schema") {
      p.output_format = OutputFormat::kJsonSchema;
      p.json_schema = c["json_schema"];
    } else if (c["format"] == "regex") {
      p.output_format = OutputFormat::kRegex;
      p.regex = c["regex"];
    } else {
      p.output_format = OutputFormat::kChoice;
      p.choices = c["choices"].get<std::vector<std::string>>();
    }
    const JsonRun run = Generate(*engine, c["prompt_ids"].get<std::vector<int32_t>>(), p);
    EXPECT_EQ(run.ids, c["generated_ids"].get<std::vector<int32_t>>()) << c["name"];
    const bool ended = !run.ids.empty() && run.ids.back() == Stories()->tokenizer().special().eos;
    EXPECT_EQ(run.reason, ended ? FinishReason::kStop : FinishReason::kLength) << c["name"];
    (ended ? closed : cut) += 1;
  }
  EXPECT_GE(closed, 5);
  EXPECT_GE(cut, 2);
}

TEST(JsonSchemaModeTest, ASchemasMasksServeItsNextRequestAndAreCounted) {
  auto engine = MakeEngine();
  EXPECT_EQ(engine->json_mask_bytes(), 0);
  GenerationParams p;
  p.temperature = 0.0f;
  p.max_new_tokens = 60;
  p.output_format = OutputFormat::kJsonSchema;
  p.json_schema = R"({"type": "object", "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"}},
                      "required": ["name", "ok"]})";
  p.logit_bias = {{37, 6.0f}};  // byte token '"': the story model's string ends in time
  const JsonRun first = Generate(*engine, Prompt("Tim had a ball"), p);
  const int64_t after_first = engine->json_mask_bytes();
  EXPECT_GT(after_first, 0);
  const JsonRun again = Generate(*engine, Prompt("Tim had a ball"), p);
  EXPECT_EQ(again.ids, first.ids);
  EXPECT_EQ(engine->json_mask_bytes(), after_first);  // every state's mask was cached
  EXPECT_EQ(first.reason, FinishReason::kStop) << first.text;
  EXPECT_EQ(first.text.rfind("{\"name\": \"", 0), 0u) << first.text;
  p.json_schema = R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})";
  Generate(*engine, Prompt("Tim had a ball"), p);
  const int64_t after_second = engine->json_mask_bytes();
  EXPECT_GT(after_second, after_first);  // another schema, more masks
  // A schema with a pattern: its automaton is counted too, beyond its masks.
  p.json_schema = R"({"type": "object", "properties": {"c": {"type": "string", "pattern": "[a-z]{1,40}"}},
                      "required": ["c"]})";
  const std::shared_ptr<const CompiledJsonSchema> compiled = *CompileJsonSchema(p.json_schema);
  ASSERT_GT(compiled->pattern_bytes, 40 * 4);
  const JsonRun patterned = Generate(*engine, Prompt("Tim had a ball"), p);
  // The rest is whole masks, a byte per token of stories260K's 512.
  constexpr int64_t kVocab = 512;
  ASSERT_NE(compiled->pattern_bytes % kVocab, 0);
  const int64_t masks = engine->json_mask_bytes() - after_second - compiled->pattern_bytes;
  EXPECT_GT(masks, 0) << patterned.text;
  EXPECT_EQ(masks % kVocab, 0) << patterned.text;
}

// The mask cache's key merges a string's lengths that no token can take
// to its maxLength (JsonSchemaAcceptor::StateKey): over stories260K's real
// vocabulary, every length that shares a key has the same mask, walked
// afresh for each, and the merging happens.
TEST(JsonSchemaModeTest, LengthsThatShareAMaskKeyHaveTheSameMask) {
  const SortedVocabulary vocabulary(Stories()->tokenizer());
  ASSERT_GT(vocabulary.longest_token_bytes(), 1);
  for (const char* item : {R"({"type": "string", "maxLength": 60})",
                           R"({"type": "string", "pattern": "[a-z]+\\.[a-z]{2,3}", "maxLength": 40})",
                           R"({"type": "string", "format": "hostname", "minLength": 5, "maxLength": 50})"}) {
    auto schema = CompileJsonSchema(std::string(R"({"type": "array", "items": )") + item + "}");
    ASSERT_TRUE(schema.ok()) << schema.status();
    std::map<JsonSchemaAcceptor::Key, std::vector<uint8_t>> masks;
    JsonSchemaAcceptor state(schema->get());
    ASSERT_TRUE(state.Feed('[') && state.Feed('"'));
    int lengths = 0;
    for (;; ++lengths) {
      std::vector<uint8_t> allowed(vocabulary.vocab_size(), 0);
      vocabulary.Walk(state, allowed);
      const auto [it, fresh] = masks.emplace(state.StateKey(vocabulary.longest_token_bytes()), allowed);
      if (!fresh) {
        EXPECT_TRUE(it->second == allowed) << item << " after " << lengths << " characters";
      }
      if (!state.Feed('e')) break;
    }
    EXPECT_GE(lengths, 30) << item;
    EXPECT_LT(masks.size() + 10, static_cast<size_t>(lengths)) << item;
  }
}

// Bounded numbers: where the bounds refuse nothing more (fractional digits
// inside the range, integer digits with no bound above), values share a
// key; every value that does has the same freshly walked mask.
TEST(JsonSchemaModeTest, NumbersThatShareAMaskKeyHaveTheSameMask) {
  const SortedVocabulary vocabulary(Stories()->tokenizer());
  std::mt19937 rng(7);
  for (const char* item : {R"({"type": "number", "minimum": 0, "maximum": 1})",
                           R"({"type": "number", "minimum": -90, "maximum": 90})",
                           R"({"type": "number", "exclusiveMinimum": 0})",
                           R"({"type": "number", "maximum": -0.25})",
                           R"({"type": "integer", "minimum": 0})"}) {
    auto schema = CompileJsonSchema(std::string(R"({"type": "array", "items": )") + item + "}");
    ASSERT_TRUE(schema.ok()) << schema.status();
    std::map<JsonSchemaAcceptor::Key, std::vector<uint8_t>> masks;
    int states = 0;
    for (int text = 0; text < 60; ++text) {
      JsonSchemaAcceptor state(schema->get());
      ASSERT_TRUE(state.Feed('['));
      // A random number the bounds allow, a byte at a time.
      for (int bytes = 0; bytes < 12; ++bytes) {
        std::vector<uint8_t> allowed(vocabulary.vocab_size(), 0);
        vocabulary.Walk(state, allowed);
        if (bytes > 0) {
          ++states;
          const auto [it, fresh] = masks.emplace(state.StateKey(vocabulary.longest_token_bytes()), allowed);
          if (!fresh) {
            EXPECT_TRUE(it->second == allowed) << item << " text " << text << " byte " << bytes;
          }
        }
        std::string next;
        for (char c : std::string("-0123456789.")) {
          JsonSchemaAcceptor probe = state;
          if (probe.Feed(static_cast<uint8_t>(c))) next += c;
        }
        if (next.empty()) break;
        ASSERT_TRUE(state.Feed(static_cast<uint8_t>(next[rng() % next.size()])));
      }
    }
    EXPECT_GE(states, 300) << item;
    EXPECT_LT(masks.size() * 2, static_cast<size_t>(states)) << item;
  }
}

TEST(ChoiceTest, RefusedWhereItCannotWork) {
  auto engine = MakeEngine();
  struct Case {
    GenerationParams params;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({ChoiceParams({}, 0.0f), "choice: 1 to 256 strings, got 0"});
  cases.push_back({ChoiceParams({"a", ""}, 0.0f), "choice[1] must be 1..1024 bytes, got 0"});
  cases.push_back({ChoiceParams({"a", "b", "a"}, 0.0f), "\"a\" is listed twice"});
  cases.push_back({ChoiceParams(std::vector<std::string>(257, "x"), 0.0f), "got 257"});
  GenerationParams ignore = ChoiceParams({"a"}, 0.0f);
  ignore.ignore_eos = true;
  cases.push_back({ignore, "ignore_eos cannot be combined with choice"});
  GenerationParams text = ChoiceParams({"a"}, 0.0f);
  text.output_format = OutputFormat::kText;
  cases.push_back({text, "choice: only with the choice format"});
  GenerationParams schema;
  schema.output_format = OutputFormat::kJsonSchema;
  schema.json_schema = R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}})";
  cases.push_back({schema, "json_schema: properties.n: 'multipleOf' is not supported"});
  schema.json_schema = R"({"type": "object"})";
  schema.ignore_eos = true;
  cases.push_back({schema, "ignore_eos cannot be combined with a JSON schema"});
  GenerationParams stray;
  stray.json_schema = R"({"type": "object"})";
  cases.push_back({stray, "json_schema: only with the JSON schema format"});
  for (const Case& c : cases) {
    absl::StatusOr<SeqId> id = engine->AddSequence(Prompt("Hi"), c.params);
    ASSERT_FALSE(id.ok()) << c.message;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(id.status().message()), HasSubstr(c.message));
  }
}

TEST(ChoiceTest, AResumedChoiceGoesOnWithTheSameOutput) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("The dog");
  GenerationParams p = ChoiceParams({" ran to the park and played", " sat down"}, 0.7f);
  p.seed = 5;
  const JsonRun whole = Generate(*engine, prompt, p);
  ASSERT_GE(whole.ids.size(), 3u);
  std::vector<int32_t> resumed_prompt = prompt;
  resumed_prompt.insert(resumed_prompt.end(), whole.ids.begin(), whole.ids.begin() + 2);
  GenerationParams rp = p;
  rp.resumed_tokens = 2;
  rp.max_new_tokens = p.max_new_tokens - 2;
  const JsonRun rest = Generate(*engine, resumed_prompt, rp);
  EXPECT_EQ(rest.ids, std::vector<int32_t>(whole.ids.begin() + 2, whole.ids.end()));
}

// kLazyJsonSchema (tool_choice "auto"'s calls): free text unless the
// first bytes begin the schema's value, then exactly kJsonSchema's output.
// stories260K writes "{" only as its byte token, so the first token begins
// an object exactly when it is that token.
constexpr int32_t kOpenBraceToken = 3 + '{';   // <0x7B>
constexpr int32_t kOpenBracketToken = 3 + '[';  // <0x5B>
constexpr const char* kCallSchema = R"({"anyOf": [
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_weather"]},
     "parameters": {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]},
                                                     "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                    "required": ["unit", "days"]}}, "required": ["name", "parameters"]},
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_time"]},
     "parameters": {"type": "object", "properties": {}}}, "required": ["name", "parameters"]}]})";

GenerationParams LazyParams(int n, float temperature) {
  GenerationParams p;
  p.max_new_tokens = n;
  p.temperature = temperature;
  p.output_format = OutputFormat::kLazyJsonSchema;
  p.json_schema = kCallSchema;
  return p;
}

// The text is a whole value of kCallSchema, or (whole == false) its beginning.
bool SchemaTakes(const std::string& text, bool whole) {
  auto schema = CompileJsonSchema(kCallSchema);
  EXPECT_TRUE(schema.ok()) << schema.status();
  JsonSchemaAcceptor a(schema->get());
  for (char c : text) {
    if (!a.Feed(static_cast<uint8_t>(c))) return false;
  }
  return !whole || a.complete();
}

TEST(LazyJsonSchemaTest, FreeTextUnlessTheFirstBytesBeginTheValueThenTheSchemasOutput) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Once upon a time");
  GenerationParams text = LazyParams(80, 0.0f);
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  GenerationParams strict = LazyParams(80, 0.0f);
  strict.output_format = OutputFormat::kJsonSchema;
  const GenerationParams lazy = LazyParams(80, 0.0f);
  // Left alone the model writes prose: the lazy schema leaves it free.
  const JsonRun plain = Generate(*engine, prompt, text);
  ASSERT_NE(plain.text.substr(0, 1), "{");
  EXPECT_EQ(Generate(*engine, prompt, lazy).ids, plain.ids);
  // Begun with "[", which no value of the schema begins with: free too.
  text.logit_bias = {{kOpenBracketToken, 100.0f}};
  GenerationParams lazy_bracket = lazy;
  lazy_bracket.logit_bias = text.logit_bias;
  const JsonRun bracket = Generate(*engine, prompt, lazy_bracket);
  EXPECT_EQ(bracket.text.substr(0, 1), "[");
  EXPECT_EQ(bracket.ids, Generate(*engine, prompt, text).ids);
  // Begun with "{": from there on JSON schema mode's output, token for
  // token (on a fresh engine, to count what the lazy request adds).
  engine = MakeEngine();
  strict.logit_bias = {{kOpenBraceToken, 100.0f}};
  GenerationParams lazy_brace = lazy;
  lazy_brace.logit_bias = strict.logit_bias;
  const int64_t strict_start = engine->json_mask_bytes();
  const JsonRun expected = Generate(*engine, prompt, strict);
  const int64_t strict_masks = engine->json_mask_bytes();
  const JsonRun call = Generate(*engine, prompt, lazy_brace);
  EXPECT_EQ(call.ids, expected.ids);
  EXPECT_EQ(call.reason, FinishReason::kStop) << call.text;
  EXPECT_TRUE(SchemaTakes(call.text, /*whole=*/true)) << call.text;
  EXPECT_EQ(call.text.rfind("{\"name\": \"get_", 0), 0u) << call.text;
  EXPECT_EQ(call.ids.back(), Stories()->tokenizer().special().eos);
  // Its states' masks were cached by the strict run; the lazy request adds
  // only its table of free first tokens, a byte per token.
  EXPECT_GT(strict_masks, strict_start);
  EXPECT_EQ(engine->json_mask_bytes() - strict_masks, 512);
}

// kLazyJsonSchema with a trigger (hermes calls after "<tool_call>\n"): the
// text is free until it writes the trigger, then held to the schema until
// the value is whole, then free again. The trigger here is two words of
// the model's own greedy story, so it is written where the unheld output
// writes it.
// The first two tokens of `output` whose bytes (5 or more, as the engine
// reads them) are written nowhere before: a text a trigger or
// constrain_after can wait for (the first at or after output token `from`).
// `end` counts the output tokens up to and including them, `before` is
// their text; `text` empty when there is none.
struct FreshText {
  size_t end = 0;
  std::string before;
  std::string text;
};
FreshText FirstFreshTwoTokenText(const Tokenizer& tok, const std::vector<int32_t>& prompt,
                                 const std::vector<int32_t>& output, size_t from = 1) {
  std::vector<std::string> bytes;
  for (size_t j = 0; j < output.size(); ++j) {
    bytes.push_back(tok.TokenBytes(output[j], j == 0 ? prompt.back() : output[j - 1]));
  }
  for (size_t k = std::max<size_t>(2, from + 1); k + 1 < output.size(); ++k) {
    std::string upto;
    for (size_t j = 0; j <= k; ++j) upto += bytes[j];
    const std::string candidate = bytes[k - 1] + bytes[k];
    if (candidate.size() >= 5 && upto.find(candidate) == upto.size() - candidate.size()) {
      return {k + 1, upto, candidate};
    }
  }
  return {};
}

TEST(LazyJsonSchemaTest, ATriggerHoldsTheValueAfterItThenFreesTheText) {
  auto engine = MakeEngine();
  const Tokenizer& tok = Stories()->tokenizer();
  const std::vector<int32_t> prompt = Prompt("Once upon a time");
  GenerationParams text = LazyParams(60, 0.0f);
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  const JsonRun plain = Generate(*engine, prompt, text);
  const FreshText fresh = FirstFreshTwoTokenText(tok, prompt, plain.ids);
  ASSERT_FALSE(fresh.text.empty()) << plain.text;
  const size_t end = fresh.end;
  const std::string& before = fresh.before;
  const std::string& trigger = fresh.text;

  GenerationParams held = LazyParams(200, 0.0f);
  held.lazy_trigger = trigger;
  const JsonRun run = Generate(*engine, prompt, held);
  // Free, token for token, up to the trigger...
  ASSERT_GT(run.ids.size(), end);
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin(), run.ids.begin() + end),
            std::vector<int32_t>(plain.ids.begin(), plain.ids.begin() + end));
  ASSERT_EQ(run.text.substr(0, before.size()), before);
  // ...then JSON schema mode's value for the text so far, token for token...
  std::vector<int32_t> so_far = prompt;
  so_far.insert(so_far.end(), plain.ids.begin(), plain.ids.begin() + end);
  GenerationParams strict = LazyParams(200, 0.0f);
  strict.output_format = OutputFormat::kJsonSchema;
  const JsonRun value = Generate(*engine, so_far, strict);
  ASSERT_EQ(value.reason, FinishReason::kStop) << value.text;
  ASSERT_EQ(value.ids.back(), tok.special().eos);
  const std::vector<int32_t> value_ids(value.ids.begin(), value.ids.end() - 1);
  ASSERT_GE(run.ids.size(), end + value_ids.size());
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin() + end, run.ids.begin() + end + value_ids.size()), value_ids);
  const std::string call = run.text.substr(before.size(), value.text.size());
  EXPECT_EQ(call, value.text);
  EXPECT_TRUE(SchemaTakes(call, /*whole=*/true)) << call;
  EXPECT_EQ(call.rfind("{\"name\": \"get_", 0), 0u) << call;
  // ...then free again: the text after the value is not held (JSON schema
  // mode would allow only the end there), here the story going on.
  EXPECT_GT(run.text.size(), before.size() + call.size()) << run.text;
  EXPECT_NE(run.ids[end + value_ids.size()], tok.special().eos) << run.text;

  // Resumed after a preemption inside the value (its output so far at the
  // end of the prompt), the rest is the same.
  const size_t cut = end + 3;
  EXPECT_EQ(ResumedAt(*engine, prompt, run, held, cut), std::vector<int32_t>(run.ids.begin() + cut, run.ids.end()));

  // A trigger only with the lazy format, and short.
  GenerationParams bad = text;
  bad.lazy_trigger = "x";
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              ::testing::HasSubstr("lazy_trigger: only with the lazy JSON schema format"));
  bad = held;
  bad.lazy_trigger = std::string(65, 'x');
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              ::testing::HasSubstr("lazy_trigger: 65 bytes, at most 64"));
}

TEST(LazyJsonSchemaTest, SampledOutputsAreFreeOrKeepToTheSchema) {
  auto engine = MakeEngine();
  GenerationParams p = LazyParams(60, 1.0f);
  // The story model's "{" is about 28 below its best token: so biased, a
  // call about a third of the time (9 of these 24 seeds).
  p.logit_bias = {{kOpenBraceToken, 28.0f}};
  int calls = 0, free = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    p.seed = seed;
    const JsonRun run = Generate(*engine, Prompt("Tim had a ball"), p);
    if (run.text.rfind("{", 0) != 0) {
      ++free;
      continue;
    }
    ++calls;
    EXPECT_TRUE(SchemaTakes(run.text, /*whole=*/run.reason == FinishReason::kStop)) << seed << ": " << run.text;
    EXPECT_TRUE(run.reason == FinishReason::kStop || run.reason == FinishReason::kLength) << seed;
  }
  EXPECT_GT(calls, 0) << free;
  EXPECT_GT(free, 0) << calls;
}

TEST(LazyJsonSchemaTest, AResumedSequenceGoesOnWithTheSameOutput) {
  auto engine = MakeEngine();
  const std::vector<int32_t> prompt = Prompt("Tim had a ball");
  for (int32_t first : {kOpenBraceToken, kOpenBracketToken}) {
    GenerationParams p = LazyParams(40, 0.8f);
    p.seed = 11;
    p.logit_bias = {{first, 100.0f}};
    const JsonRun whole = Generate(*engine, prompt, p);
    ASSERT_GE(whole.ids.size(), 8u) << whole.text;
    const int k = 5;
    std::vector<int32_t> resumed_prompt = prompt;
    resumed_prompt.insert(resumed_prompt.end(), whole.ids.begin(), whole.ids.begin() + k);
    GenerationParams rp = p;
    rp.resumed_tokens = k;
    rp.max_new_tokens = p.max_new_tokens - k;
    EXPECT_EQ(Generate(*engine, resumed_prompt, rp).ids, std::vector<int32_t>(whole.ids.begin() + k, whole.ids.end()))
        << whole.text;
  }
}

// A byte-level BPE vocabulary (Qwen2's, as Llama 3's and GPT-2's), random
// weights: "{" is an ordinary token there, and the same holds.
TEST(LazyJsonSchemaTest, AByteLevelVocabularyToo) {
  const std::shared_ptr<const DecoderModel> model = QwenTiny();
  ASSERT_NE(model, nullptr);
  std::unique_ptr<DecoderEngine> engine = MakeEngine(model);
  const Tokenizer& tok = model->tokenizer();
  const std::optional<int32_t> brace = tok.PieceToId("{"), bracket = tok.PieceToId("[");
  ASSERT_TRUE(brace.has_value() && bracket.has_value());
  auto prompt = tok.Encode("Call a tool:");
  ASSERT_TRUE(prompt.ok());
  auto run = [&](const GenerationParams& p) { return Generate(*engine, *prompt, p); };
  GenerationParams lazy = LazyParams(80, 0.0f);
  lazy.logit_bias = {{*brace, 100.0f}};
  GenerationParams strict = lazy;
  strict.output_format = OutputFormat::kJsonSchema;
  const JsonRun call = run(lazy);
  EXPECT_EQ(call.ids, run(strict).ids);
  EXPECT_EQ(call.text.rfind("{\"name\": \"get_", 0), 0u) << call.text;
  EXPECT_TRUE(SchemaTakes(call.text, /*whole=*/call.reason == FinishReason::kStop)) << call.text;
  lazy.logit_bias = {{*bracket, 100.0f}};
  GenerationParams text = lazy;
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  const JsonRun free = run(lazy);
  EXPECT_EQ(free.text.substr(0, 1), "[");
  EXPECT_EQ(free.ids, run(text).ids);
}

// The output is trigger, value, trigger, value, ...: it begins with the
// trigger, and each value after one is a call the schema takes (whole but
// for the last, which the length may cut).
void ExpectAValueHeldAfterEachTrigger(const JsonRun& run, const std::string& trigger) {
  const std::vector<std::string> parts = absl::StrSplit(run.text, trigger);
  ASSERT_GE(parts.size(), 3u) << run.text;
  EXPECT_EQ(parts[0], "") << run.text;  // the first token: the trigger
  for (size_t i = 1; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    EXPECT_TRUE(SchemaTakes(parts[i], /*whole=*/!last)) << i << ": " << parts[i];
    EXPECT_EQ(parts[i].rfind("{\"name\": \"get_", 0), 0u) << i << ": " << parts[i];
  }
}

// constrain_after (a reasoning model's "</think>" with a response format):
// the output is free, token for token the unconstrained one, until it writes
// those bytes; the format then holds the rest, to its end (unlike a lazy
// trigger, nothing is free after the value); a preemption inside either
// part resumes the same output.
TEST(ConstrainAfterTest, TheTextIsFreeUntilItThenTheFormatHoldsTheRest) {
  auto engine = MakeEngine();
  const Tokenizer& tok = Stories()->tokenizer();
  const std::vector<int32_t> prompt = Prompt("Once upon a time");
  GenerationParams text = LazyParams(60, 0.0f);
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  const JsonRun plain = Generate(*engine, prompt, text);
  const FreshText fresh = FirstFreshTwoTokenText(tok, prompt, plain.ids);
  ASSERT_FALSE(fresh.text.empty()) << plain.text;
  const size_t end = fresh.end;
  const std::string& before = fresh.before;
  const std::string& marker = fresh.text;

  GenerationParams held = LazyParams(200, 0.0f);
  held.output_format = OutputFormat::kJsonSchema;
  held.constrain_after = marker;
  const JsonRun run = Generate(*engine, prompt, held);
  ASSERT_GT(run.ids.size(), end);
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin(), run.ids.begin() + end),
            std::vector<int32_t>(plain.ids.begin(), plain.ids.begin() + end));
  ASSERT_EQ(run.text.substr(0, before.size()), before);
  // The rest is JSON schema mode's output for the text so far, to its end.
  std::vector<int32_t> so_far = prompt;
  so_far.insert(so_far.end(), plain.ids.begin(), plain.ids.begin() + end);
  GenerationParams strict = held;
  strict.constrain_after.clear();
  const JsonRun value = Generate(*engine, so_far, strict);
  ASSERT_EQ(value.reason, FinishReason::kStop) << value.text;
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin() + end, run.ids.end()), value.ids);
  EXPECT_EQ(run.text.substr(before.size()), value.text);
  EXPECT_TRUE(SchemaTakes(value.text, /*whole=*/true)) << value.text;
  EXPECT_EQ(run.reason, FinishReason::kStop);

  // Resumed after a preemption before the marker and inside the value.
  for (const size_t cut : {end - 1, end + 3}) {
    EXPECT_EQ(ResumedAt(*engine, prompt, run, held, cut), std::vector<int32_t>(run.ids.begin() + cut, run.ids.end()))
        << cut;
  }

  // Only with a format, and short.
  GenerationParams bad = text;
  bad.constrain_after = "x";
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              ::testing::HasSubstr("constrain_after: only with a format (JSON object, JSON schema, lazy JSON schema, "
                                   "choice or regex)"));
  bad = held;
  bad.constrain_after = std::string(65, 'x');
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              ::testing::HasSubstr("constrain_after: 65 bytes, at most 64"));
}

// constrain_after with the lazy format (a reasoning model's "</think>" with
// hermes tool calls): the trigger, or a value at the first bytes, is looked
// for only after the text; a trigger written before it (in the thinking)
// holds nothing. The output is the free one up to the text, then what the
// lazy format writes after that prefix; a preemption in the thinking after
// the trigger resumes the same output.
TEST(ConstrainAfterTest, ALazyFormatLooksForItsValueOnlyAfterTheText) {
  auto engine = MakeEngine();
  const Tokenizer& tok = Stories()->tokenizer();
  const std::vector<int32_t> prompt = Prompt("Once upon a time");
  GenerationParams text = LazyParams(60, 0.0f);
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  const JsonRun plain = Generate(*engine, prompt, text);
  const FreshText trigger = FirstFreshTwoTokenText(tok, prompt, plain.ids);
  ASSERT_FALSE(trigger.text.empty()) << plain.text;
  const FreshText marker = FirstFreshTwoTokenText(tok, prompt, plain.ids, trigger.end);
  ASSERT_FALSE(marker.text.empty()) << plain.text;
  ASSERT_GT(marker.end, trigger.end + 1);
  std::vector<int32_t> thought = prompt;
  thought.insert(thought.end(), plain.ids.begin(), plain.ids.begin() + marker.end);

  for (const std::string& lazy_trigger : {trigger.text, std::string()}) {
    SCOPED_TRACE(lazy_trigger);
    GenerationParams lazy = LazyParams(200, 0.0f);
    lazy.lazy_trigger = lazy_trigger;
    GenerationParams held = lazy;
    held.constrain_after = marker.text;
    const JsonRun run = Generate(*engine, prompt, held);
    ASSERT_GT(run.ids.size(), marker.end) << run.text;
    EXPECT_EQ(std::vector<int32_t>(run.ids.begin(), run.ids.begin() + marker.end),
              std::vector<int32_t>(plain.ids.begin(), plain.ids.begin() + marker.end));
    GenerationParams after = lazy;
    after.max_new_tokens = lazy.max_new_tokens - static_cast<int>(marker.end);
    const JsonRun rest = Generate(*engine, thought, after);
    EXPECT_EQ(std::vector<int32_t>(run.ids.begin() + marker.end, run.ids.end()), rest.ids);
    if (!lazy_trigger.empty()) {
      // Unwaited, the trigger in the thinking holds a call there.
      const JsonRun unwaited = Generate(*engine, prompt, lazy);
      ASSERT_GT(unwaited.ids.size(), trigger.end);
      EXPECT_EQ(unwaited.text.substr(trigger.before.size(), 14), "{\"name\": \"get_") << unwaited.text;
      EXPECT_NE(std::vector<int32_t>(unwaited.ids.begin(), unwaited.ids.begin() + marker.end),
                std::vector<int32_t>(run.ids.begin(), run.ids.begin() + marker.end));
    }
    const size_t cut = trigger.end + 1;
    EXPECT_EQ(ResumedAt(*engine, prompt, run, held, cut), std::vector<int32_t>(run.ids.begin() + cut, run.ids.end()));
  }
}

// A trigger that is one added token, as Qwen2.5's <tool_call> is: here
// qwen2_tiny's non-special "<|custom|>", drawn at every free step by a
// bias. Each time it is written the next value is held, and the text is
// free after it, so the output is trigger, value, trigger, value, ...
TEST(LazyJsonSchemaTest, AnAddedTokenTriggerHoldsEachValueAfterIt) {
  const std::shared_ptr<const DecoderModel> model = QwenTiny();
  ASSERT_NE(model, nullptr);
  std::unique_ptr<DecoderEngine> engine = MakeEngine(model);
  const Tokenizer& tok = model->tokenizer();
  const std::optional<int32_t> custom = tok.PieceToId("<|custom|>");
  ASSERT_TRUE(custom.has_value());
  ASSERT_FALSE(tok.IsControl(*custom));
  auto prompt = tok.Encode("Call a tool:");
  ASSERT_TRUE(prompt.ok());
  GenerationParams p = LazyParams(240, 0.0f);  // the model's whole context, less the prompt
  p.lazy_trigger = "<|custom|>";
  p.logit_bias = {{*custom, 100.0f}};
  const JsonRun run = Generate(*engine, *prompt, p);
  ExpectAValueHeldAfterEachTrigger(run, "<|custom|>");
  EXPECT_EQ(run.reason, FinishReason::kLength);
  // Without the trigger the bias writes the added token throughout.
  GenerationParams text = p;
  text.output_format = OutputFormat::kText;
  text.json_schema.clear();
  text.lazy_trigger.clear();
  text.max_new_tokens = 5;
  EXPECT_EQ(Generate(*engine, *prompt, text).text, "<|custom|><|custom|><|custom|><|custom|><|custom|>");
}

// A trigger that is a special token, as some models' <tool_call> is: here
// qwen2_tiny's "<|im_start|>". Written into the answer (skip_special_tokens
// false) it holds each value after it as an ordinary trigger does; skipped
// (the default) the text never holds it, so nothing is held.
TEST(LazyJsonSchemaTest, ASpecialTokenTriggerHoldsWhereSpecialTokensAreWritten) {
  const std::shared_ptr<const DecoderModel> model = QwenTiny();
  ASSERT_NE(model, nullptr);
  std::unique_ptr<DecoderEngine> engine = MakeEngine(model);
  const Tokenizer& tok = model->tokenizer();
  const std::optional<int32_t> start = tok.PieceToId("<|im_start|>");
  ASSERT_TRUE(start.has_value());
  ASSERT_TRUE(tok.IsControl(*start));
  auto prompt = tok.Encode("Call a tool:");
  ASSERT_TRUE(prompt.ok());
  GenerationParams p = LazyParams(240, 0.0f);
  p.lazy_trigger = "<|im_start|>";
  p.logit_bias = {{*start, 100.0f}};
  p.skip_special_tokens = false;
  ExpectAValueHeldAfterEachTrigger(Generate(*engine, *prompt, p), "<|im_start|>");
  // Skipped, the special token is no text: the bias draws it throughout and
  // nothing is held.
  p.skip_special_tokens = true;
  p.max_new_tokens = 6;
  const JsonRun skipped = Generate(*engine, *prompt, p);
  EXPECT_EQ(skipped.ids, std::vector<int32_t>(6, *start));
  EXPECT_EQ(skipped.text, "");
}

TEST(LazyJsonSchemaTest, RefusedWhereItCannotWork) {
  auto engine = MakeEngine();
  GenerationParams p = LazyParams(8, 0.0f);
  p.ignore_eos = true;
  absl::StatusOr<SeqId> id = engine->AddSequence(Prompt("Hi"), p);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("ignore_eos cannot be combined with a JSON schema"));
  p = LazyParams(8, 0.0f);
  p.json_schema = R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}})";
  id = engine->AddSequence(Prompt("Hi"), p);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("json_schema: properties.n: 'multipleOf'"));
}

// thinking_token_budget: a sequence that has made `budget` tokens without writing
// thinking_end writes its tokens next, then goes on free: its output is
// the free output's first `budget` tokens, thinking_end's tokens, then the
// greedy continuation of that text. A preemption before, inside or after
// the forced tokens resumes the same output. A format waiting for the end
// (constrain_after) holds what follows it. Written before the budget is
// spent, the end forces nothing.
TEST(ThinkingBudgetTest, ASpentBudgetWritesTheEndThenTheOutputGoesOnFree) {
  auto engine = MakeEngine();
  const Tokenizer& tok = Stories()->tokenizer();
  const std::vector<int32_t> prompt = Prompt("Once upon a time");
  GenerationParams text;
  text.max_new_tokens = 60;
  text.temperature = 0.0f;
  const JsonRun plain = Generate(*engine, prompt, text);
  ASSERT_EQ(plain.ids.size(), 60u);
  TokenizeOptions plain_options;
  plain_options.add_bos = false;
  auto end_ids = tok.Encode("</think>", plain_options);
  ASSERT_TRUE(end_ids.ok());
  const size_t budget = 12, forced = end_ids->size();
  ASSERT_GT(forced, 1u);  // several tokens in this vocabulary: forced one a step

  GenerationParams p = text;
  p.thinking_token_budget = static_cast<int>(budget);
  p.thinking_end = "</think>";
  const JsonRun run = Generate(*engine, prompt, p);
  ASSERT_EQ(run.ids.size(), 60u);
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin(), run.ids.begin() + budget),
            std::vector<int32_t>(plain.ids.begin(), plain.ids.begin() + budget));
  EXPECT_EQ(std::vector<int32_t>(run.ids.begin() + budget, run.ids.begin() + budget + forced), *end_ids);
  GenerationParams first = text;
  first.max_new_tokens = static_cast<int>(budget);
  const std::string thought = Generate(*engine, prompt, first).text;
  // The free text, then the end as the tokenizer spells it (SentencePiece
  // puts a space before it).
  ASSERT_EQ(run.text.substr(0, thought.size()), thought);
  const std::string spelled = run.text.substr(thought.size(), run.text.find("</think>") + 8 - thought.size());
  EXPECT_TRUE(spelled == "</think>" || spelled == " </think>") << run.text;
  std::vector<int32_t> so_far = prompt;
  so_far.insert(so_far.end(), run.ids.begin(), run.ids.begin() + budget + forced);
  GenerationParams rest = text;
  rest.max_new_tokens = 60 - static_cast<int>(budget + forced);
  EXPECT_EQ(Generate(*engine, so_far, rest).ids, std::vector<int32_t>(run.ids.begin() + budget + forced, run.ids.end()));
  for (const size_t cut : {budget - 1, budget + 1, budget + forced + 2}) {
    EXPECT_EQ(ResumedAt(*engine, prompt, run, p, cut), std::vector<int32_t>(run.ids.begin() + cut, run.ids.end()))
        << cut;
  }
  // Sampled: the draws go on as without a budget up to it (the forced
  // tokens are drawn from a one-token mask).
  GenerationParams sampled = text;
  sampled.temperature = 1.0f;
  sampled.seed = 5;
  GenerationParams sampled_budget = sampled;
  sampled_budget.thinking_token_budget = static_cast<int>(budget);
  sampled_budget.thinking_end = "</think>";
  const JsonRun free_draws = Generate(*engine, prompt, sampled);
  const JsonRun budget_draws = Generate(*engine, prompt, sampled_budget);
  EXPECT_EQ(std::vector<int32_t>(budget_draws.ids.begin(), budget_draws.ids.begin() + budget),
            std::vector<int32_t>(free_draws.ids.begin(), free_draws.ids.begin() + budget));
  EXPECT_EQ(std::vector<int32_t>(budget_draws.ids.begin() + budget, budget_draws.ids.begin() + budget + forced),
            *end_ids);

  // A format waiting for the end holds the answer after the forced end.
  GenerationParams choice = p;
  choice.output_format = OutputFormat::kChoice;
  choice.choices = {"yes", "no"};
  choice.constrain_after = "</think>";
  const JsonRun chosen = Generate(*engine, prompt, choice);
  ASSERT_EQ(chosen.reason, FinishReason::kStop) << chosen.text;
  const size_t close = chosen.text.find("</think>");
  ASSERT_EQ(chosen.text.substr(0, close + 8), thought + spelled) << chosen.text;
  const std::string answer = chosen.text.substr(close + 8);
  EXPECT_TRUE(answer == "yes" || answer == "no") << answer;

  // The end written before the budget is spent: nothing is forced.
  const FreshText fresh = FirstFreshTwoTokenText(tok, prompt, plain.ids);
  ASSERT_FALSE(fresh.text.empty());
  ASSERT_LT(fresh.end + 3, plain.ids.size());
  GenerationParams natural = text;
  natural.thinking_token_budget = static_cast<int>(fresh.end + 2);
  natural.thinking_end = fresh.text;
  const JsonRun natural_run = Generate(*engine, prompt, natural);
  EXPECT_EQ(natural_run.ids, plain.ids);
  // Resumed after the end and before the budget: the end is found again in
  // the resumed output, so nothing is forced at the budget.
  EXPECT_EQ(ResumedAt(*engine, prompt, natural_run, natural, fresh.end + 1),
            std::vector<int32_t>(plain.ids.begin() + fresh.end + 1, plain.ids.end()));

  // Refused: a negative budget, a budget without its end, an end alone.
  GenerationParams bad = text;
  bad.thinking_token_budget = -2;
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              HasSubstr("thinking_token_budget: -2, must be >= 0"));
  bad.thinking_token_budget = 5;
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              HasSubstr("thinking_end: 0 bytes, must be 1..64 with a thinking_token_budget"));
  bad.thinking_token_budget = -1;
  bad.thinking_end = "</think>";
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              HasSubstr("thinking_end: only with a thinking_token_budget"));
}

}  // namespace
}  // namespace attnserve
