// Drives the HTTP request bodies' fuzz body (tests/fuzz/http_request_fuzz_target.h)
// with a fixed-seed mutation loop: byte flips, numbers replaced by values at
// and past the limits, insertions of JSON fragments
// (brackets, quotes, escapes, huge and negative numbers, NaN, lone
// surrogates, invalid UTF-8), deletions, truncations and splices between
// endpoints' bodies. Bounded, so it runs in CI without libFuzzer; a crash, an
// exception out of a parser, a refusal that is not a readable 400 or an
// accepted value out of range aborts the test binary.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/http_request_fuzz_target.h"
#include "tests/fuzz/selector_edits.h"

namespace attnserve::fuzz {
namespace {

const HttpFuzzContext& Context() {
  static const HttpFuzzContext* ctx = [] {
    absl::StatusOr<HttpFuzzContext> c = LoadHttpFuzzContext(ATTNSERVE_SHARED_DIR);
    if (!c.ok()) {
      ADD_FAILURE() << c.status();
      return new HttpFuzzContext();
    }
    return new HttpFuzzContext(std::move(*c));
  }();
  return *ctx;
}

// Valid bodies of every endpoint (selector byte first), each using most of
// its fields, so mutations start from requests the server accepts.
std::vector<std::string> SeedCorpus() {
  const std::vector<std::pair<char, std::string>> bodies = {
      {0, R"({"inputs":[{"text":"hello world"},{"token_ids":{"ids":[101,7592,102]}}],"pooling":"POOLING_MEAN",)"
          R"("normalize":true,"truncation":"TRUNCATION_END","return_hidden_states":false,"attention_layers":[0,5],)"
          R"("attention_weights":"ATTENTION_WEIGHTS_AVERAGED"})"},
      {0, R"({"inputs":[{"text":"caf\u00e9 \ud83d\ude00"}]})"},
      {1, R"({"text":"Once upon a time","sampling":{"max_new_tokens":16,"temperature":0.7,"top_k":40,"top_p":0.9,)"
          R"("repetition_penalty":1.1,"seed":"42","stop":["\n","The end"],"stop_token_ids":[2],"ignore_eos":false,)"
          R"("logprobs":true,"top_logprobs":3,"prompt_logprobs":true}})"},
      {1, R"({"tokenIds":{"ids":[1,403,407]},"sampling":{"maxNewTokens":4,"topK":1}})"},
      {1, R"({"text":"The cat","sampling":{"frequency_penalty":0.5,"presencePenalty":-1.5,"min_p":0.05,)"
          R"("logit_bias":{"2":-100,"403":2.5}}})"},
      {2, R"({"model":"MODEL_KIND_DECODER","text":"Lily went home.","add_special_tokens":true})"},
      {2, R"({"text":"  two spaces\n\ttab \u00e9\u65e5\ud83d\ude00"})"},
      {3, R"({"model":"MODEL_KIND_ENCODER","token_ids":[101,7592,102],"skip_special_tokens":true})"},
      {3, R"({"tokenIds":[1,403,407,2]})"},
      {4, R"({"input":["a sentence","another one"],"model":"all-MiniLM-L6-v2","encoding_format":"base64","user":"u"})"},
      {4, R"({"input":[[101,2023,102],[101,102]],"encoding_format":"float"})"},
      {4, R"({"input":"a sentence","dimensions":8})"},
      {5, R"({"prompt":"Once upon","model":"stories260K","max_tokens":8,"temperature":0,"top_p":1,"stop":"\n",)"
          R"("seed":3,"logprobs":2,"stream":true,"n":2,"echo":true,"top_k":5,"repetition_penalty":1.0,)"
          R"("ignore_eos":true,"stop_token_ids":[2]})"},
      {5, R"({"prompt":[[1,403],[1,407,500]],"max_tokens":0,"echo":true,"logprobs":0})"},
      {5, R"({"prompt":["one","two"],"n":1,"stream":false,"suffix":"","presence_penalty":0})"},
      {5, R"({"prompt":"The cat","min_p":0.1,"min_tokens":3,"frequency_penalty":-2,"presence_penalty":2,"logit_bias":{"13":100,"0":-1.5}})"},
      {1, R"({"chat":{"messages":[{"role":"user","content":"Hi"}],"addGenerationPrompt":true},"sampling":{"max_new_tokens":4}})"},
      {6, R"({"model":"stories260K","messages":[{"role":"system","content":"Be kind."},{"role":"user","content":"Hi"},)"
          R"({"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"A story"}]}],)"
          R"("max_completion_tokens":8,"temperature":0.5,"logprobs":true,"top_logprobs":2,"n":2,"seed":1,)"
          R"("stream":true,"stream_options":{"include_usage":true},"stop":["\n"]})"},
      {6, R"({"messages":[{"role":"developer","content":"x"},{"role":"user","content":"y"},)"
          R"({"role":"assistant","content":"The"}],"continue_final_message":true,"max_tokens":4,"tools":[]})"},
      {6, R"({"messages":[{"role":"user","content":"JSON please"}],"response_format":{"type":"json_object"},)"
          R"("max_tokens":16,"logit_bias":{"128":5}})"},
      {5, R"({"prompt":"{","response_format":{"type":"json_object"},"temperature":0.7,"seed":2})"},
      {5, R"({"prompt":"Is it?","guided_choice":["yes","no","\u00e9t\u00e9"],"max_tokens":4})"},
      {6, R"({"messages":[{"role":"user","content":"Pick"}],"structured_outputs":{"choice":["a","b"]}})"},
      {6, R"({"messages":[{"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":{"name":"w",)"
          R"("parameters":{"type":"object","properties":{"unit":{"enum":["c","f"]},"days":{"type":"integer",)"
          R"("minimum":1}},"required":["unit"]}}}],"tool_choice":"auto","max_tokens":8})"},
      {6, R"({"messages":[{"role":"user","content":"Who?"}],"response_format":{"type":"json_schema","json_schema":)"
          R"({"name":"p","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},)"
          R"("age":{"type":["integer","null"]},"tags":{"type":"array","items":{"enum":["a",1,null]}}},)"
          R"("required":["name"],"additionalProperties":false}}}})"},
      {5, R"({"prompt":"x","guided_json":"{\"type\":\"object\",\"properties\":{\"k\":{\"const\":true}}}"})"},
      {5, R"({"prompt":[1,403,407],"prompt_logprobs":3,"allowed_token_ids":[403,407,2],"cache_salt":"t",)"
          R"("use_beam_search":false,"echo":true,"logprobs":1,"return_token_ids":true,)"
          R"("return_tokens_as_token_ids":true})"},
      {6, R"({"messages":[{"role":"user","content":"Hi"}],"prompt_logprobs":0,"allowed_token_ids":[5],)"
          R"("cache_salt":"tenant-a","return_token_ids":true,"logprobs":true,"return_tokens_as_token_ids":true})"},
      {1, R"({"text":"x","return_prompt_token_ids":true,"sampling":{"max_new_tokens":2,"skip_special_tokens":false}})"},
      {1, R"({"text":"x","sampling":{"response_format":"RESPONSE_FORMAT_LAZY_JSON_SCHEMA",)"
          R"("json_schema":"{\"type\":\"object\"}","lazy_trigger":"<tool_call>\n","prompt_logprobs":true,)"
          R"("prompt_top_logprobs":2,"allowed_token_ids":[1,2],"cache_salt":"s"}})"},
      {1, R"({"text":"x","sampling":{"response_format":"RESPONSE_FORMAT_JSON_OBJECT","max_new_tokens":3}})"},
      {7, R"({"model":"m","instructions":"Be kind.","input":[{"role":"user","content":"Hi"},)"
          R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]},)"
          R"({"role":"user","content":[{"type":"input_text","text":"A story"}]}],"max_output_tokens":8,)"
          R"("temperature":0.5,"top_p":0.9,"stream":true,"include":["message.output_text.logprobs"],"top_logprobs":2,)"
          R"("metadata":{"k":"v"},"store":false})"},
      {7, R"({"input":"Who?","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object",)"
          R"("properties":{"name":{"type":"string"}},"required":["name"]}}},"tools":[{"type":"function","name":"f",)"
          R"("parameters":{"type":"object","properties":{}}}],"tool_choice":"none"})"},
      {8, R"({"model":"m","system":[{"type":"text","text":"Be kind."}],"messages":[{"role":"user","content":"Hi"},)"
          R"({"role":"assistant","content":[{"type":"text","text":"Hello"}]},{"role":"user","content":"More"}],)"
          R"("max_tokens":8,"temperature":0.5,"top_k":3,"stop_sequences":["\n"],"stream":true,"metadata":{"user_id":"u"}})"},
      {8, R"({"messages":[{"role":"user","content":"Who?"}],"max_tokens":16,"tools":[{"name":"f","input_schema":)"
          R"({"type":"object","properties":{"a":{"type":"integer"}}}}],"tool_choice":{"type":"tool","name":"f"},)"
          R"("output_config":{}})"},
      {9, R"({"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]})"},
      {10, R"({"model":"m","text_1":"a query","text_2":["one","two"],"truncate_prompt_tokens":-1})"},
      {10, R"({"text_1":["a","b"],"text_2":["c","d"]})"},
      {11, R"({"query":"q","documents":["one",{"text":"two"}],"top_n":1,"return_documents":false})"},
      {12, R"({"inputs":{"source_sentence":"s","sentences":["a","b"]},"parameters":{"truncate":true}})"},
      {13, R"({"inputs":["hello",[101,7592,102]],"truncate":false,"truncation_direction":"right"})"},
      {13, R"({"inputs":"hello","truncate":true,"truncation_direction":"left","prompt_name":"query"})"},
      {14, R"({"model":"m","prompt":"Once upon a time","add_special_tokens":false,"return_token_strs":true})"},
      {14, R"({"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,"tools":[{"type":"function",)"
           R"("function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}]})"},
      {15, R"({"model":"m","tokens":[1,403,407,2]})"},
  };
  std::vector<std::string> corpus;
  for (const auto& [selector, body] : bodies) corpus.push_back(std::string(1, selector) + body);
  return corpus;
}

std::string Mutate(const std::string& in, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  static const char* kFragments[] = {
      "{", "}", "[", "]", ",", ":", "\"", "\\", "null", "true", "false", "0", "-1", "1.5", "-0",
      "1e309", "-1e309", "2147483648", "-2147483649", "18446744073709551616", "1e-50", "\"NaN\"", "\"Infinity\"",
      "\"-Infinity\"", "\"\\ud800\"", "\\u0000", "\xff", "\xc3", "\xf0\x9f\x98", "\"text\":", "\"ids\":[",
      "\"sampling\":{", "\"dimensions\":", "\"prompt_name\":", "\"left\"", "\"max_new_tokens\":",
      "\"temperature\":", "\"top_p\":", "\"top_k\":", "\"stop\":[",
      "\"n\":", "\"prompt\":", "\"input\":", "\"logprobs\":", "\"inputs\":[{", "\"attention_layers\":[",
      "\"token_ids\":", "\"seed\":", "\"max_tokens\":", "\"best_of\":", "\"unknown_field\":", "1000000",
      "\"frequency_penalty\":", "\"presence_penalty\":", "\"logit_bias\":{", "\"-1\":", "\"512\":",
      "\"messages\":[{", "\"role\":", "\"content\":", "\"user\"", "\"assistant\"", "\"system\"",
      "\"continue_final_message\":", "\"add_generation_prompt\":", "\"chat\":{", "\"instructions\":",
      "\"max_output_tokens\":", "\"type\":", "\"function_call\"", "\"tool_use\"", "\"tool_result\"",
      "\"system\":", "\"stop_sequences\":[", "\"text_1\":", "\"text_2\":[", "\"documents\":[", "\"query\":",
      "\"top_n\":", "\"source_sentence\":", "\"sentences\":[", "\"include\":[", "\"tool_choice\":{",
      "\"prompt_logprobs\":", "\"allowed_token_ids\":[", "\"cache_salt\":", "\"lazy_trigger\":",
      "\"use_beam_search\":", "\"return_token_ids\":", "\"return_tokens_as_token_ids\":",
      "\"return_prompt_token_ids\":", "\"skip_special_tokens\":"};
  // Numbers at and past every limit the checks enforce, written as JSON
  // allows (and as it does not).
  static const char* kNumbers[] = {"-1", "0", "-0", "0.0", "1", "2", "20", "21", "100", "100.5", "10.01",
                                   "1024", "1025", "511", "512", "513", "32", "33", "6", "5", "256", "257",
                                   "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296",
                                   "18446744073709551615", "18446744073709551616", "1e309", "-1e309",
                                   "1e-50", "3.4e38", "3.5e38", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"",
                                   "\"7\"", "\"-7\"", "1.0", "1e2", "0x10", "01", "+1", ".5", "1."};
  static const SelectorEditOptions kEdits{kFragments, sizeof(kFragments) / sizeof(kFragments[0]), /*selectors=*/kHttpFuzzEndpoints,
                                          /*truncate_one_in=*/4};
  std::string s = in;
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < steps; ++k) {
    const size_t pos = SelectorEditPosition(s, rng);
    const int op = static_cast<int>(rng() % 10);
    if (op < 8) {
      SelectorEdit(s, op, pos, corpus, rng, kEdits);
      continue;
    }
    // Replace the number at or after pos (a run of digits, with its sign) by a limit.
    const size_t at = s.find_first_of("0123456789", pos);
    if (at == std::string::npos) continue;
    size_t begin = at, end = at;
    while (begin > 1 && (s[begin - 1] == '-' || s[begin - 1] == '.' || std::isdigit(static_cast<unsigned char>(s[begin - 1])))) --begin;
    while (end < s.size() && (s[end] == '.' || s[end] == 'e' || std::isdigit(static_cast<unsigned char>(s[end])))) ++end;
    s.replace(begin, end - begin, kNumbers[rng() % (sizeof(kNumbers) / sizeof(kNumbers[0]))]);
  }
  return s;
}

TEST(HttpRequestFuzzTest, EverySeedIsAccepted) {
  ASSERT_NE(Context().tokenizer, nullptr);
  for (const std::string& seed : SeedCorpus()) {
    EXPECT_TRUE(HttpRequestFuzzOne(Context(), reinterpret_cast<const uint8_t*>(seed.data()), seed.size()))
        << "endpoint " << static_cast<int>(seed[0]) << ": " << seed.substr(1);
  }
}

TEST(HttpRequestFuzzTest, FixedSeedMutationLoop) {
  const HttpFuzzContext& ctx = Context();
  ASSERT_NE(ctx.tokenizer, nullptr);
  std::vector<std::string> corpus = SeedCorpus();
  // Each endpoint in turn gets a mutant of one of its own bodies, so the
  // endpoints that accept more mutants do not crowd out the others.
  std::vector<std::vector<std::string>> by_endpoint(kHttpFuzzEndpoints);
  for (const std::string& seed : corpus) by_endpoint[seed[0] % kHttpFuzzEndpoints].push_back(seed);
  std::mt19937_64 rng(20261204);
  int accepted[kHttpFuzzEndpoints] = {}, refused[kHttpFuzzEndpoints] = {};
  constexpr int kIterations = 200000;
  for (int i = 0; i < kIterations; ++i) {
    const std::vector<std::string>& own = by_endpoint[i % kHttpFuzzEndpoints];
    const std::string input = Mutate(own[rng() % own.size()], corpus, rng);
    const bool ok = HttpRequestFuzzOne(ctx, reinterpret_cast<const uint8_t*>(input.data()), input.size());
    if (input.empty()) continue;
    const int endpoint = static_cast<unsigned char>(input[0]) % kHttpFuzzEndpoints;
    (ok ? accepted : refused)[endpoint] += 1;
    // Accepted mutants join the corpus, so later mutations start from
    // bodies already past the parser.
    if (ok && by_endpoint[endpoint].size() < 128 && rng() % 4 == 0) {
      by_endpoint[endpoint].push_back(input);
      corpus.push_back(input);
    }
  }
  // Every endpoint must be reached on both sides, or the loop proves little.
  for (int e = 0; e < kHttpFuzzEndpoints; ++e) {
    std::printf("endpoint %d: %d accepted, %d refused\n", e, accepted[e], refused[e]);
    EXPECT_GT(accepted[e], 100) << "endpoint " << e;
    EXPECT_GT(refused[e], 100) << "endpoint " << e;
  }
}

}  // namespace
}  // namespace attnserve::fuzz
