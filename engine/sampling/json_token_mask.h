// JsonTokenMask: which tokens of a vocabulary may come next in JSON mode,
// given the JsonAcceptor state of the output so far.
//
// A token is allowed when the acceptor takes all of its bytes. The bytes of
// every ordinary token are computed once per model and sorted, so tokens
// that share leading bytes share the acceptor's work on them, and a
// refused prefix refuses every token that starts with it at once (most of
// a 32,000-token vocabulary is refused after one or two bytes outside
// strings). Control tokens (BOS, EOS, chat markers) are never allowed by
// their bytes; the end ids the caller passes are allowed exactly when the
// output is already a whole document.
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
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/sampling/json_acceptor.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

inline constexpr int64_t kJsonMaskCacheBytes = int64_t{16} << 20;

class JsonTokenMask {
 public:
  // A token's bytes as they follow an ordinary token (SentencePiece's "▁"
  // is then a space). The first token after a lone BOS loses that space
  // (Tokenizer::TokenBytes); a leading space is optional before the object,
  // so the mask is then at most stricter than the exact bytes, never looser.
  explicit JsonTokenMask(const Tokenizer& tokenizer);

  // Fills allowed[id] (resized to the vocabulary) with 1 for each token that
  // may follow `state`, 0 otherwise; `end_ids` (EOS, end of turn) get 1 when
  // state.complete(). Returns how many tokens are allowed.
  int Fill(const JsonAcceptor& state, absl::Span<const int32_t> end_ids, std::vector<uint8_t>& allowed) const;

  int vocab_size() const { return vocab_size_; }
  // Bytes the cached masks take now (at most kJsonMaskCacheBytes).
  int64_t cache_bytes() const;
  // The token table's bytes plus cache_bytes(): what JSON mode holds.
  int64_t bytes() const { return table_bytes_ + cache_bytes(); }

 private:
  struct CachedMask {
    std::vector<uint8_t> allowed;
    int count = 0;
  };
  int Walk(const JsonAcceptor& state, std::vector<uint8_t>& allowed) const;

  int vocab_size_ = 0;
  // Ordinary tokens with non-empty bytes, sorted by those bytes; shared[i]
  // is how many leading bytes entry i has in common with entry i - 1.
  std::vector<int32_t> ids_;
  std::vector<std::string> bytes_;
  std::vector<uint16_t> shared_;
  size_t max_cached_ = 0;
  int64_t table_bytes_ = 0;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<JsonAcceptor::Key, CachedMask> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_
