#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/sampling/logits_math.h"

namespace attnserve {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

absl::Status ValidateSamplingParams(const SamplingParams& p, int vocab_size) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature must be finite and >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(absl::StrCat("top_k must be >= 0, got ", p.top_k));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("top_p must be in (0, 1], got ", p.top_p));
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("min_p must be in [0, 1], got ", p.min_p));
  }
  if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "repetition_penalty must be finite and > 0, got ", p.repetition_penalty));
  }
  for (const auto& [name, value] : {std::pair<const char*, float>{"frequency_penalty", p.frequency_penalty},
                                    {"presence_penalty", p.presence_penalty}}) {
    if (!(value >= -kMaxAbsPenalty && value <= kMaxAbsPenalty)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be in [", -kMaxAbsPenalty, ", ", kMaxAbsPenalty, "], got ", value));
    }
  }
  if (p.logit_bias.size() > static_cast<size_t>(kMaxLogitBiasEntries)) {
    return absl::InvalidArgumentError(absl::StrCat("logit_bias: at most ", kMaxLogitBiasEntries,
                                                   " entries, got ", p.logit_bias.size()));
  }
  std::vector<int32_t> ids;
  ids.reserve(p.logit_bias.size());
  for (const LogitBias& b : p.logit_bias) {
    if (b.id < 0 || b.id >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("logit_bias: token id ", b.id, " is not in [0, ", vocab_size, ")"));
    }
    if (!(b.bias >= -kMaxAbsLogitBias && b.bias <= kMaxAbsLogitBias)) {
      return absl::InvalidArgumentError(absl::StrCat("logit_bias[", b.id, "] must be in [", -kMaxAbsLogitBias,
                                                     ", ", kMaxAbsLogitBias, "], got ", b.bias));
    }
    ids.push_back(b.id);
  }
  std::sort(ids.begin(), ids.end());
  if (auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    return absl::InvalidArgumentError(absl::StrCat("logit_bias: token id ", *dup, " appears twice"));
  }
  if (p.min_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("min_tokens must be >= 0, got ", p.min_tokens));
  }
  if (p.top_logprobs < 0 || p.top_logprobs > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat("top_logprobs must be in [0, ", kMaxTopLogprobs,
                                                   "], got ", p.top_logprobs));
  }
  return absl::OkStatus();
}

SamplingRng::SamplingRng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = SplitMix64(x);
}

uint64_t SamplingRng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double SamplingRng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

namespace {

// The n best tokens of `logits` (ties: lower id first), with logprobs
// against the log-sum-exp `lse`.
void AddTopLogprobs(absl::Span<const float> logits, double lse, int top_logprobs, SampledToken* out) {
  const int vocab = static_cast<int>(logits.size());
  if (top_logprobs <= 0) return;
  const int n = std::min(top_logprobs, vocab);
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  out->top.reserve(n);
  for (int i = 0; i < n; ++i) out->top.push_back({ids[i], static_cast<float>(logits[ids[i]] - lse), {}});
}

}  // namespace

namespace {

// Logit bias, then the repetition, frequency and presence penalties, on `s`
// (a copy of the logits).
void ApplyBiasAndPenalties(const SamplingParams& params, absl::Span<const int32_t> history,
                           int output_tokens, SamplingScratch& scratch, std::vector<float>& s) {
  const int vocab = static_cast<int>(s.size());
  if (output_tokens < params.min_tokens) {
    for (int32_t id : params.min_tokens_suppressed) {
      if (id >= 0 && id < vocab) s[id] = -std::numeric_limits<float>::infinity();
    }
  }
  for (const LogitBias& b : params.logit_bias) {
    if (b.id >= 0 && b.id < vocab) s[b.id] += b.bias;
  }
  const bool count_output = params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
  if (params.repetition_penalty == 1.0f && !count_output) return;
  // counts[id] marks a seen id so each is penalised once, whatever its
  // multiplicity (HF gathers and scatters over unique ids the same way);
  // for output ids it also holds how often they occur. The marks are
  // cleared on the way out, so the buffer stays all-zero between calls.
  std::vector<int32_t>& counts = scratch.counts;
  if (static_cast<int>(counts.size()) != vocab) counts.assign(vocab, 0);
  const size_t n = history.size();
  const size_t out_begin = n - std::min(n, static_cast<size_t>(std::max(output_tokens, 0)));
  if (params.repetition_penalty != 1.0f) {
    for (int32_t id : history) {
      if (id < 0 || id >= vocab || counts[id] != 0) continue;
      counts[id] = 1;
      const float x = s[id];
      s[id] = x < 0 ? x * params.repetition_penalty : x / params.repetition_penalty;
    }
    for (int32_t id : history) {
      if (id >= 0 && id < vocab) counts[id] = 0;
    }
  }
  if (count_output) {
    for (size_t i = out_begin; i < n; ++i) {
      if (history[i] >= 0 && history[i] < vocab) ++counts[history[i]];
    }
    // vLLM: logits -= frequency * counts; logits -= presence * (counts > 0).
    for (size_t i = out_begin; i < n; ++i) {
      const int32_t id = history[i];
      if (id < 0 || id >= vocab || counts[id] == 0) continue;
      s[id] -= params.frequency_penalty * static_cast<float>(counts[id]);
      s[id] -= params.presence_penalty;
      counts[id] = 0;
    }
  }
}

}  // namespace

void SamplingProbabilities(absl::Span<const float> logits, const SamplingParams& params,
                           absl::Span<const int32_t> history, int output_tokens, SamplingScratch& scratch) {
  const int vocab = static_cast<int>(logits.size());
  std::vector<float>& s = scratch.logits;
  s.assign(logits.begin(), logits.end());
  ApplyBiasAndPenalties(params, history, output_tokens, scratch, s);
  const float inv_t = 1.0f / params.temperature;
  for (float& x : s) x *= inv_t;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (params.top_k > 0 && params.top_k < vocab) {
    // Keep every logit >= the k-th largest (HF keeps ties with the k-th too).
    std::vector<float> tmp(s);
    std::nth_element(tmp.begin(), tmp.begin() + (params.top_k - 1), tmp.end(), std::greater<float>());
    const float kth = tmp[params.top_k - 1];
    for (float& x : s) {
      if (x < kth) x = neg_inf;
    }
  }
  // Softmax over the survivors, in double.
  float mx = neg_inf;
  for (float x : s) mx = std::max(mx, x);
  std::vector<double>& prob = scratch.probs;
  prob.assign(vocab, 0.0);
  double sum = 0.0;
  for (int i = 0; i < vocab; ++i) {
    prob[i] = s[i] == neg_inf ? 0.0 : std::exp(static_cast<double>(s[i]) - mx);
    sum += prob[i];
  }
  for (double& p : prob) p /= sum;
  if (params.top_p < 1.0f) {
    // HF: sort ascending, drop tokens whose cumulative mass is <= 1 - top_p,
    // always keep the most probable one. Equal probabilities sort by id.
    std::vector<int32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return prob[a] < prob[b]; });
    double cum = 0.0;
    const double cut = 1.0 - static_cast<double>(params.top_p);
    double kept = 0.0;
    for (int i = 0; i < vocab; ++i) {
      cum += prob[order[i]];
      if (cum <= cut && i != vocab - 1) {
        prob[order[i]] = 0.0;
      } else {
        kept += prob[order[i]];
      }
    }
    for (double& p : prob) p /= kept;
  }
  if (params.min_p > 0.0f) {
    // HF's MinPLogitsWarper: drop tokens less probable than min_p times the
    // most probable one (which always stays).
    const double top = *std::max_element(prob.begin(), prob.end());
    const double floor = static_cast<double>(params.min_p) * top;
    double kept = 0.0;
    for (double& p : prob) {
      if (p < floor) p = 0.0;
      kept += p;
    }
    for (double& p : prob) p /= kept;
  }
}

SampledToken SampleToken(absl::Span<const float> logits, const SamplingParams& params,
                         absl::Span<const int32_t> history, int output_tokens, SamplingRng& rng,
                         SamplingScratch& scratch) {
  const int vocab = static_cast<int>(logits.size());
  SampledToken out;
  if (params.temperature == 0.0f) {
    std::vector<float>& s = scratch.logits;
    s.assign(logits.begin(), logits.end());
    ApplyBiasAndPenalties(params, history, output_tokens, scratch, s);
    out.id = ArgmaxLogit(s);
  } else {
    SamplingProbabilities(logits, params, history, output_tokens, scratch);
    const std::vector<double>& prob = scratch.probs;
    // Inverse CDF over ids in order.
    const double u = rng.Uniform();
    double cum = 0.0;
    out.id = -1;
    int32_t last_nonzero = 0;
    for (int i = 0; i < vocab; ++i) {
      if (prob[i] <= 0.0) continue;
      last_nonzero = i;
      cum += prob[i];
      if (u < cum) {
        out.id = i;
        break;
      }
    }
    if (out.id < 0) out.id = last_nonzero;  // rounding left u above the total
  }

  const double lse = LogSumExpLogits(logits);
  out.logprob = static_cast<float>(logits[out.id] - lse);
  AddTopLogprobs(logits, lse, params.top_logprobs, &out);
  return out;
}

SampledToken ScoreToken(absl::Span<const float> logits, int32_t id, int top_logprobs) {
  SampledToken out;
  out.id = id;
  const double lse = LogSumExpLogits(logits);
  out.logprob = static_cast<float>(logits[id] - lse);
  AddTopLogprobs(logits, lse, top_logprobs, &out);
  return out;
}

}  // namespace attnserve
