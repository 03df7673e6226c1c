#include "engine/sampling/json_token_mask.h"

#include <algorithm>
#include <utility>

namespace attnserve {

JsonTokenMask::JsonTokenMask(std::shared_ptr<const SortedVocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)), vocab_size_(vocabulary_->vocab_size()) {
  max_cached_ = static_cast<size_t>(std::max<int64_t>(1, kJsonMaskCacheBytes / std::max(vocab_size_, 1)));
}

int64_t JsonTokenMask::cache_bytes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(cache_.size()) * vocab_size_;
}

int JsonTokenMask::Fill(const JsonAcceptor& state, absl::Span<const int32_t> end_ids,
                        std::vector<uint8_t>& allowed) const {
  int count = 0;
  if (state.complete()) {
    allowed.assign(vocab_size_, 0);
    for (int32_t id : end_ids) {
      if (id >= 0 && id < vocab_size_ && allowed[id] == 0) {
        allowed[id] = 1;
        ++count;
      }
    }
    return count;
  }
  const JsonAcceptor::Key key = state.StateKey();
  {
    absl::MutexLock lock(&mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      allowed = it->second.allowed;
      return it->second.count;
    }
  }
  allowed.assign(vocab_size_, 0);
  count = vocabulary_->Walk(state, allowed);
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= max_cached_) cache_.clear();
  cache_[key] = CachedMask{allowed, count};
  return count;
}

}  // namespace attnserve
