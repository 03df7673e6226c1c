// SampleToken's cost per token on one logits row, by what is switched on:
// greedy alone; greedy with the repetition, frequency and presence
// penalties over a history; sampling with temperature and top-p; and every
// step at once (min_tokens, logit bias, the penalties, temperature, top-k,
// top-p, min-p). The row is seeded normal noise at a real vocabulary size;
// the history is a 256-token prompt and an output of --output tokens.
// The cases that report no logprob skip it, as the engine does for a
// request without logprobs (transformers' processors compute none either).
// One JSON line per case (bench/sampling/run.sh compares them with
// hf_peer.py's, the same steps in transformers' processors).
//
// Usage: sampling_bench [--vocab N] [--output N] [--iters N] [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/sampling/sampler.h"

namespace attnserve {
namespace {

struct Case {
  const char* name;
  SamplingParams params;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logprob = false;  // as the engine samples when a request reports no logprobs
  cases.push_back({"greedy", greedy});
  SamplingParams penalties = greedy;
  penalties.repetition_penalty = 1.1f;
  penalties.frequency_penalty = 0.5f;
  penalties.presence_penalty = 0.5f;
  cases.push_back({"greedy_penalties", penalties});
  SamplingParams temperature;
  temperature.temperature = 0.8f;
  temperature.logprob = false;
  cases.push_back({"temperature", temperature});
  SamplingParams top_p;
  top_p.temperature = 0.8f;
  top_p.logprob = false;
  top_p.top_p = 0.9f;
  cases.push_back({"temperature_top_p", top_p});
  SamplingParams all = top_p;
  all.top_k = 50;
  all.min_p = 0.05f;
  all.repetition_penalty = 1.1f;
  all.frequency_penalty = 0.5f;
  all.presence_penalty = 0.5f;
  all.min_tokens = 1 << 30;
  all.min_tokens_suppressed = {2};
  for (int i = 0; i < 10; ++i) all.logit_bias.push_back({100 + 37 * i, i % 2 ? 2.0f : -2.0f});
  cases.push_back({"everything", all});
  return cases;
}

int Arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const int vocab = Arg(argc, argv, "--vocab", 32000);
  const int output = Arg(argc, argv, "--output", 256);
  const int iters = Arg(argc, argv, "--iters", 200);
  const int rounds = Arg(argc, argv, "--rounds", 5);
  std::mt19937_64 gen(20261205);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(vocab);
  for (float& x : logits) x = normal(gen);
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  std::vector<int32_t> history(256 + output);
  for (int32_t& t : history) t = id(gen);
  for (const Case& c : Cases()) {
    SamplingRng rng(1);
    SamplingScratch scratch;
    std::vector<double> per_token;
    int32_t sink = 0;
    for (int r = 0; r < rounds; ++r) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) sink += SampleToken(logits, c.params, history, output, rng, scratch).id;
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      per_token.push_back(took.count() / iters);
    }
    std::sort(per_token.begin(), per_token.end());
    std::printf(
        "{\"bench\":\"sampling\",\"impl\":\"attnserve\",\"case\":\"%s\",\"vocab\":%d,\"output\":%d,"
        "\"us_per_token\":%.2f,\"min_us\":%.2f,\"sink\":%d}\n",
        c.name, vocab, output, per_token[per_token.size() / 2], per_token.front(), sink % 7);
  }
  return 0;
}

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) { return attnserve::Main(argc, argv); }
