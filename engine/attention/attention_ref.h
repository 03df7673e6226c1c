// A naive reference for ScaledDotProductAttention: double accumulation, the
// full score matrix, written for obviousness and independently of the fast
// kernels' mask handling. For tests and benchmarks' correctness checks only.
#ifndef ATTNSERVE_ENGINE_ATTENTION_ATTENTION_REF_H_
#define ATTNSERVE_ENGINE_ATTENTION_ATTENTION_REF_H_

#include "absl/status/status.h"
#include "engine/attention/sdpa.h"

namespace attnserve {

// Same contract as ScaledDotProductAttention (same argument validation is
// NOT repeated: call it on arguments the fast path accepted).
absl::Status ScaledDotProductAttentionRef(const SdpaArgs& args);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_ATTENTION_REF_H_
