// JsonTokenMask: which tokens of a vocabulary may come next in JSON mode,
// given the JsonAcceptor state of the output so far: the tokens whose
// bytes the acceptor takes (SortedVocabulary::Walk). Control tokens (BOS,
// EOS, chat markers) are never allowed by their bytes; the end ids the
// caller passes are allowed exactly when the output is already a whole
// document.
//
// Masks are cached by the acceptor's StateKey: inside a string, a number or
// between the same brackets the state repeats from token to token, so most
// steps copy a cached mask instead of walking the vocabulary (0.5 ms at
// 32,000 tokens; docs/benchmarks.md "JSON mode"). The cache holds up to
// kJsonMaskCacheBytes of masks and is emptied when full.
//
// Thread-safe: one instance serves every sequence of a model.
#ifndef ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_
#define ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/sampling/json_acceptor.h"
#include "engine/sampling/sorted_vocabulary.h"

namespace attnserve {

inline constexpr int64_t kJsonMaskCacheBytes = int64_t{16} << 20;

class JsonTokenMask {
 public:
  // The first token after a lone BOS loses a leading space from the bytes
  // SortedVocabulary has for it; a space is optional before the object, so
  // the mask is then at most stricter than the exact bytes, never looser.
  explicit JsonTokenMask(std::shared_ptr<const SortedVocabulary> vocabulary);

  // Fills allowed[id] (resized to the vocabulary) with 1 for each token that
  // may follow `state`, 0 otherwise; `end_ids` (EOS, end of turn) get 1 when
  // state.complete(). Returns how many tokens are allowed.
  int Fill(const JsonAcceptor& state, absl::Span<const int32_t> end_ids, std::vector<uint8_t>& allowed) const;

  int vocab_size() const { return vocab_size_; }
  // Bytes the cached masks take now (at most kJsonMaskCacheBytes).
  int64_t cache_bytes() const;

 private:
  struct CachedMask {
    std::vector<uint8_t> allowed;
    int count = 0;
  };

  std::shared_ptr<const SortedVocabulary> vocabulary_;
  int vocab_size_ = 0;
  size_t max_cached_ = 0;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<JsonAcceptor::Key, CachedMask> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_
