// Reductions over one row of logits that every sampled token needs, whatever
// its sampling settings: the arg max (greedy) and the log-sum-exp (the chosen
// token's logprob is always reported).
//
// Why vectorised: over a 49,152-entry vocabulary the double std::exp of the
// log-sum-exp took ~0.3 ms a token, serial after the forward pass, so at 16
// sequences a step spent milliseconds here with the other thread idle.
#ifndef ATTNSERVE_ENGINE_SAMPLING_LOGITS_MATH_H_
#define ATTNSERVE_ENGINE_SAMPLING_LOGITS_MATH_H_

#include <cstdint>

#include "absl/types/span.h"

namespace attnserve {

// The first index of the largest value; NaN entries are never the largest,
// except that a NaN at index 0 gives 0 (the plain `v[i] > v[best]` loop's
// answer). 0 for an empty row.
int32_t ArgmaxLogit(absl::Span<const float> v);

// log(sum_i exp(v[i])), as max + log(sum exp(v[i] - max)) with the terms
// summed in f32 lanes in blocks and the blocks in double: relative error of
// the sum ~1e-6, so logprobs within ~1e-6 of a double computation. A row
// whose max is +-inf (or empty) gives that max (-inf when empty); NaN
// entries are ignored.
double LogSumExpLogits(absl::Span<const float> v);

// out[i] = exp(v[i] - mx) for a row whose largest value is mx (so every
// argument is <= 0); -inf and NaN entries give 0. Returns the sum, in
// double. The exps are f32 (relative error <= 3e-7, avx2::ExpNonPositive8,
// plus v[i] - mx rounded to f32: ~6e-8 * |v[i] - mx|) widened to double.
// Why: this is the softmax of every sampled token over the whole
// vocabulary, which took ~0.2 ms a token in scalar double at 32,000 ids.
double ExpShiftedLogits(absl::Span<const float> v, float mx, absl::Span<double> out);

// The same, one value at a time in double (the CPU has no AVX2, and tests).
int32_t ArgmaxLogitScalar(absl::Span<const float> v);
double LogSumExpLogitsScalar(absl::Span<const float> v);
double ExpShiftedLogitsScalar(absl::Span<const float> v, float mx, absl::Span<double> out);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_LOGITS_MATH_H_
