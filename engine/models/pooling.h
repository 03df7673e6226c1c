// Sentence-embedding pooling over the valid tokens of one sequence, and L2
// normalisation (sentence-transformers' Pooling and Normalize modules).
#ifndef ATTNSERVE_ENGINE_MODELS_POOLING_H_
#define ATTNSERVE_ENGINE_MODELS_POOLING_H_

#include <string>

#include "absl/status/statusor.h"

namespace attnserve {

// kModelDefault: what the model directory says (sentence-transformers
// Pooling module; mean when there is none). kNone: no pooling, every token's
// vector is returned. kSplade: a sparse vocabulary-sized vector from the
// masked-language-model head (engine/models/mlm_head.h), for a model whose
// directory has a SpladePooling module.
enum class PoolingMode { kModelDefault, kMean, kCls, kLast, kMax, kNone, kSplade };

// "mean", "cls", "lasttoken", "max" (the sentence-transformers names) and
// "splade" to a mode; other names are INVALID_ARGUMENT.
absl::StatusOr<PoolingMode> PoolingModeFromName(const std::string& name);
const char* PoolingModeName(PoolingMode mode);

// out[d] = pooling of hidden[n, d] (n >= 1 valid tokens, padding excluded by
// the caller passing only valid rows). mode must be kMean, kCls, kLast or kMax.
void PoolTokens(PoolingMode mode, const float* hidden, int n, int d, float* out);

// x /= max(||x||_2, 1e-12), as torch.nn.functional.normalize.
void L2Normalize(float* x, int d);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_POOLING_H_
