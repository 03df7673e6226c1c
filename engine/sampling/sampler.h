// Token sampling from one row of logits: greedy, temperature, top-k, top-p,
// logit bias, repetition penalty (Hugging Face semantics), frequency and
// presence penalties (OpenAI's formula), a per-request seeded RNG, and
// log-probabilities of the chosen token and the top-n.
//
// Batch invariance: a request's choice depends only on its own logits row,
// its own token history and its own RNG, so the same seed gives the same
// tokens whatever else is in the batch.
//
// Order, as vLLM applies them (a constraint's mask first, then bias, then
// its penalties, then the warpers in transformers' order):
//   constraint mask -> min-tokens suppression -> logit bias -> repetition penalty
//   -> frequency penalty -> presence penalty
//   -> temperature -> top-k -> top-p -> min-p -> typical-p -> softmax -> draw.
// The repetition penalty looks at prompt + output (HF's input_ids); the
// frequency and presence penalties at the output only (vLLM; OpenAI's
// "tokens generated so far"): logit[j] -= c[j] * frequency + (c[j] > 0) * presence
// where c[j] counts id j in the output.
// temperature == 0 means greedy (argmax, lowest id on ties, like torch.argmax).
// Log-probabilities are those of the model: log_softmax of the raw logits,
// before penalty, temperature and truncation (as vLLM and OpenAI report them).
//
// Thread-compatible: a Sampler is per request; SampleToken is a pure function.
#ifndef ATTNSERVE_ENGINE_SAMPLING_SAMPLER_H_
#define ATTNSERVE_ENGINE_SAMPLING_SAMPLER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace attnserve {

// OpenAI's logit_bias entry: `bias` in [-100, 100] is added to the logit of
// token `id` (-100 in effect bans it, 100 in effect forces it).
struct LogitBias {
  int32_t id = 0;
  float bias = 0.0f;
};

inline constexpr float kMaxAbsPenalty = 2.0f;       // frequency / presence, as OpenAI
inline constexpr float kMaxAbsLogitBias = 100.0f;   // as OpenAI
inline constexpr int kMaxLogitBiasEntries = 1024;

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off; keep tokens >= min_p * the best's probability
  float typical_p = 1.0f;           // 1: off; HF's TypicalLogitsWarper (typical decoding's mass)
  float repetition_penalty = 1.0f;  // 1: off; HF: logit<0 ? logit*p : logit/p for seen ids
  float frequency_penalty = 0.0f;   // 0: off; in [-2, 2] as OpenAI
  float presence_penalty = 0.0f;    // 0: off; in [-2, 2] as OpenAI
  std::vector<LogitBias> logit_bias;  // added to the logits first; distinct ids
  // While the output has fewer than min_tokens tokens, these ids (the end
  // of sequence and stop token ids, filled by the engine) get logit -inf,
  // as transformers' MinNewTokensLengthLogitsProcessor and vLLM's min_tokens.
  int min_tokens = 0;
  std::vector<int32_t> min_tokens_suppressed;
  // Ids banned at this draw (vLLM's bad_words, filled by the engine before
  // each one): logit -inf.
  std::vector<int32_t> banned;
  // Tokens an output constraint allows next (JSON mode: JsonTokenMask),
  // filled by the engine before each draw: allowed[id] == 0 gets logit
  // -inf before anything else, as do ids past its end. Empty: every token.
  // Must allow at least one.
  absl::Span<const uint8_t> allowed;
  uint64_t seed = 0;
  // Compute the chosen token's log-probability (a log-sum-exp over the row);
  // the engine asks only when the request reports it.
  bool logprob = true;
  int top_logprobs = 0;             // how many top alternatives to report (0: none)
};

inline constexpr int kMaxTopLogprobs = 20;

// INVALID_ARGUMENT naming the field and its limit. Logit bias ids are
// checked against `vocab_size` (the model's), and must be distinct.
absl::Status ValidateSamplingParams(const SamplingParams& params, int vocab_size);

// A small counter-free PRNG (xoshiro256**, seeded by splitmix64): fixed
// across platforms and library versions, unlike std:: distributions.
class SamplingRng {
 public:
  explicit SamplingRng(uint64_t seed);
  uint64_t Next();
  double Uniform();  // [0, 1), 53 bits
 private:
  uint64_t s_[4];
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
  // The bytes this token would add to the output at its position
  // (Tokenizer::TokenBytes: "▁there" -> " there", "<0x0A>" -> "\n"; may be
  // an incomplete UTF-8 sequence). Filled by DecoderEngine for the
  // alternatives it reports; the sampler leaves it empty.
  std::string text;
};

struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;               // model log-probability of `id` (0 unless params.logprob)
  std::vector<TokenLogprob> top;      // top_logprobs best, by descending logprob
  int32_t rank = 0;                   // prompt scores: 1 + the tokens more likely; 0 elsewhere
};

// Buffers SampleToken reuses between calls (no allocation per token).
struct SamplingScratch {
  std::vector<float> logits;
  std::vector<double> probs;    // [vocab], SamplingProbabilities' answer
  std::vector<float> top_k;     // top-k: the k best logits (a min-heap)
  std::vector<double> group_mass;  // top-p: mass per binary exponent of probability
  std::vector<std::pair<double, int32_t>> boundary;  // top-p: the group cut partly
  std::vector<int32_t> counts;  // [vocab], all zero between calls

  // Bytes the buffers hold (their capacities).
  int64_t HeldBytes() const {
    return static_cast<int64_t>(logits.capacity() * sizeof(float) + probs.capacity() * sizeof(double) +
                                top_k.capacity() * sizeof(float) + group_mass.capacity() * sizeof(double) +
                                boundary.capacity() * sizeof(boundary[0]) + counts.capacity() * sizeof(int32_t));
  }
};

// Chooses the next token from `logits` ([vocab]). `history` holds the ids the
// repetition penalty looks at (prompt + generated, as HF's input_ids); its
// last `output_tokens` are the request's output, which the frequency and
// presence penalties count. The id is -1 when the masks (allowed, banned,
// min_tokens) leave no token at all: nothing may be drawn.
SampledToken SampleToken(absl::Span<const float> logits, const SamplingParams& params,
                         absl::Span<const int32_t> history, int output_tokens, SamplingRng& rng,
                         SamplingScratch& scratch);

// The distribution SampleToken draws from when temperature > 0 (it needs
// one): the probabilities after bias, penalties, temperature, top-k, top-p,
// min-p and typical-p, zero for dropped tokens, summing to 1, left in
// scratch.probs.
// For tests against reference implementations of the same steps.
void SamplingProbabilities(absl::Span<const float> logits, const SamplingParams& params,
                           absl::Span<const int32_t> history, int output_tokens, SamplingScratch& scratch);

// How many numbers SampleToken draws from its RNG for one token: one when it
// samples, none when greedy. A sequence resumed after a preemption skips
// this many per token it had made, so its seed gives the same tokens.
inline int RandomDrawsPerToken(const SamplingParams& params) { return params.temperature == 0.0f ? 0 : 1; }

// Scores a token that was given, not sampled (a prompt token): its
// log-probability under `logits` and the `top_logprobs` best alternatives,
// from the raw logits as SampleToken reports them.
SampledToken ScoreToken(absl::Span<const float> logits, int32_t id, int top_logprobs);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_SAMPLER_H_
