#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
  if (!(p.typical_p > 0.0f && p.typical_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("typical_p must be in (0, 1], got ", p.typical_p));
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

// Whether ApplyBiasAndPenalties would change any logit.
bool ChangesLogits(const SamplingParams& params, int output_tokens) {
  return !params.allowed.empty() || !params.banned.empty() ||
         (output_tokens < params.min_tokens && !params.min_tokens_suppressed.empty()) ||
         !params.logit_bias.empty() || params.repetition_penalty != 1.0f || params.frequency_penalty != 0.0f ||
         params.presence_penalty != 0.0f;
}

// The constraint's mask, the min_tokens suppression, the logit bias, then
// the repetition, frequency and presence penalties, on `s` (a copy of the
// logits). A masked logit stays -inf through all of them.
void ApplyBiasAndPenalties(const SamplingParams& params, absl::Span<const int32_t> history,
                           int output_tokens, SamplingScratch& scratch, std::vector<float>& s) {
  const int vocab = static_cast<int>(s.size());
  if (!params.allowed.empty()) {
    // Ids past the mask (a model row wider than its tokenizer) are not allowed.
    const int n = std::min(vocab, static_cast<int>(params.allowed.size()));
    for (int id = 0; id < n; ++id) {
      if (params.allowed[id] == 0) s[id] = -std::numeric_limits<float>::infinity();
    }
    for (int id = n; id < vocab; ++id) s[id] = -std::numeric_limits<float>::infinity();
  }
  if (output_tokens < params.min_tokens) {
    for (int32_t id : params.min_tokens_suppressed) {
      if (id >= 0 && id < vocab) s[id] = -std::numeric_limits<float>::infinity();
    }
  }
  for (int32_t id : params.banned) {
    if (id >= 0 && id < vocab) s[id] = -std::numeric_limits<float>::infinity();
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

// HF's TypicalLogitsWarper (typical decoding, Meister et al. 2022) on a
// distribution: rank the live tokens by how far their surprisal -log p is
// from the entropy, and keep the closest ones until their mass reaches
// `mass`, with every token as close as the last one kept (HF keeps ties).
void KeepTypical(float mass, SamplingScratch& scratch) {
  std::vector<double>& prob = scratch.probs;
  double entropy = 0.0;
  for (double p : prob) {
    if (p > 0.0) entropy -= p * std::log(p);
  }
  std::vector<std::pair<double, int32_t>>& ranked = scratch.boundary;
  ranked.clear();
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] > 0.0) ranked.emplace_back(std::abs(-std::log(prob[i]) - entropy), static_cast<int32_t>(i));
  }
  if (ranked.empty()) return;
  std::sort(ranked.begin(), ranked.end());
  // HF: last = the number of positions whose cumulative mass is < mass
  // (clamped), i.e. the first position where it reaches mass.
  size_t last = ranked.size() - 1;
  double cum = 0.0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    cum += prob[ranked[i].second];
    if (!(cum < mass)) {
      last = i;
      break;
    }
  }
  const double threshold = ranked[last].first;
  double kept = 0.0;
  for (const auto& [shift, id] : ranked) {
    if (shift > threshold) {
      prob[id] = 0.0;
    } else {
      kept += prob[id];
    }
  }
  for (double& p : prob) p /= kept;
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
    // The k best so far in a min-heap: one compare for most logits, where
    // nth_element on a copy of the row cost ~0.2 ms at 32,000 ids.
    std::vector<float>& heap = scratch.top_k;
    heap.assign(s.begin(), s.begin() + params.top_k);
    std::make_heap(heap.begin(), heap.end(), std::greater<float>());
    for (int i = params.top_k; i < vocab; ++i) {
      if (s[i] > heap.front()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
        heap.back() = s[i];
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      }
    }
    const float kth = heap.front();
    for (float& x : s) {
      if (x < kth) x = neg_inf;
    }
  }
  // Softmax over the survivors (f32 exps, normalised in double).
  float mx = neg_inf;
  for (float x : s) mx = std::max(mx, x);
  std::vector<double>& prob = scratch.probs;
  prob.resize(vocab);
  const double sum = ExpShiftedLogits(s, mx, absl::MakeSpan(prob));  // dropped (-inf) ids give 0
  const double inv_sum = 1.0 / sum;
  for (double& p : prob) p *= inv_sum;
  if (params.top_p < 1.0f) {
    // HF sorts ascending and drops the tokens whose cumulative mass is
    // <= 1 - top_p, always keeping the most probable. The same set, read
    // from the top: in descending order (equal probabilities: higher id
    // first, as HF's ascending order puts the lower id first) keep each
    // token while the mass before it is < top_p.
    //
    // Without sorting the vocabulary (a stable sort of 32,000 ids took
    // ~2.5 ms a token, selecting by index ~1 ms at 49,152; docs/
    // benchmarks.md, Sampling): tokens are grouped by the binary exponent
    // of their probability. Walking the groups from the top, the group in
    // which the mass reaches top_p is the only one whose tokens are cut
    // partly; the groups above it are kept whole, those below dropped, and
    // only that group is sorted.
    const auto group_of = [](double p) {
      uint64_t bits;
      std::memcpy(&bits, &p, sizeof bits);
      return 1023 - static_cast<int>((bits >> 52) & 0x7ff);  // p in (0, 1]: 0 for [1, 2), more for smaller
    };
    std::vector<double>& group_mass = scratch.group_mass;
    group_mass.assign(1024, 0.0);
    for (double p : prob) {
      if (p > 0.0) group_mass[std::min(group_of(p), 1023)] += p;
    }
    const double top_p = params.top_p;
    double above = 0.0;  // mass of the groups above `cut`
    int cut = 1023;
    for (int g = 0; g < 1024; ++g) {
      if (group_mass[g] > 0.0 && above + group_mass[g] >= top_p) {
        cut = g;
        break;
      }
      above += group_mass[g];
    }
    if (above >= top_p) {  // rounding left the walk short: keep everything
      cut = 1024;
    }
    std::vector<std::pair<double, int32_t>>& boundary = scratch.boundary;
    boundary.clear();
    for (int i = 0; i < vocab; ++i) {
      if (!(prob[i] > 0.0)) {  // dropped before, or NaN (a row of -inf only)
        prob[i] = 0.0;
        continue;
      }
      const int g = std::min(group_of(prob[i]), 1023);
      if (g == cut) {
        boundary.emplace_back(prob[i], i);
      } else if (g > cut) {
        prob[i] = 0.0;
      }
    }
    std::sort(boundary.begin(), boundary.end(), std::greater<std::pair<double, int32_t>>());
    double mass = above;
    double kept = above;
    size_t keep = 0;
    for (; keep < boundary.size(); ++keep) {
      if (mass >= top_p && !(keep == 0 && above == 0.0)) break;
      mass += boundary[keep].first;
    }
    for (size_t i = keep; i < boundary.size(); ++i) prob[boundary[i].second] = 0.0;
    for (size_t i = 0; i < keep; ++i) kept += boundary[i].first;
    const double inv_kept = 1.0 / kept;
    for (double& p : prob) p *= inv_kept;
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
  if (params.typical_p < 1.0f) KeepTypical(params.typical_p, scratch);
}

SampledToken SampleToken(absl::Span<const float> logits, const SamplingParams& params,
                         absl::Span<const int32_t> history, int output_tokens, SamplingRng& rng,
                         SamplingScratch& scratch) {
  const int vocab = static_cast<int>(logits.size());
  SampledToken out;
  if (params.temperature == 0.0f && !ChangesLogits(params, output_tokens)) {
    out.id = ArgmaxLogit(logits);  // plain greedy: no copy of the row
  } else if (params.temperature == 0.0f) {
    std::vector<float>& s = scratch.logits;
    s.assign(logits.begin(), logits.end());
    ApplyBiasAndPenalties(params, history, output_tokens, scratch, s);
    out.id = ArgmaxLogit(s);
    if (s[out.id] == -std::numeric_limits<float>::infinity()) out.id = -1;  // everything masked
  } else {
    SamplingProbabilities(logits, params, history, output_tokens, scratch);
    const std::vector<double>& prob = scratch.probs;
    // Inverse CDF over ids in order.
    const double u = rng.Uniform();
    double cum = 0.0;
    out.id = -1;
    int32_t last_nonzero = -1;  // stays -1 when everything was masked
    for (int i = 0; i < vocab; ++i) {
      if (!(prob[i] > 0.0)) continue;  // masked, or NaN (a row of -inf only)
      last_nonzero = i;
      cum += prob[i];
      if (u < cum) {
        out.id = i;
        break;
      }
    }
    if (out.id < 0) out.id = last_nonzero;  // rounding left u above the total (-1: nothing drawable)
  }

  if (out.id < 0 || (!params.logprob && params.top_logprobs <= 0)) return out;
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
