#include "engine/sampling/json_token_mask.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace attnserve {

JsonTokenMask::JsonTokenMask(const Tokenizer& tokenizer) : vocab_size_(tokenizer.vocab_size()) {
  // Any ordinary token serves as the one before (see the header).
  int32_t ordinary = -1;
  for (int32_t id = 0; id < vocab_size_ && ordinary < 0; ++id) {
    if (!tokenizer.IsControl(id)) ordinary = id;
  }
  std::vector<std::pair<std::string, int32_t>> entries;
  entries.reserve(vocab_size_);
  for (int32_t id = 0; id < vocab_size_; ++id) {
    if (tokenizer.IsControl(id)) continue;
    std::string b = tokenizer.TokenBytes(id, ordinary);
    if (b.empty()) continue;  // adds nothing: allowing it could loop forever
    entries.emplace_back(std::move(b), id);
  }
  std::sort(entries.begin(), entries.end());
  ids_.reserve(entries.size());
  bytes_.reserve(entries.size());
  shared_.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t common = 0;
    if (i > 0) {
      const std::string& a = entries[i - 1].first;
      const std::string& b = entries[i].first;
      const size_t n = std::min(a.size(), b.size());
      while (common < n && a[common] == b[common]) ++common;
    }
    shared_.push_back(static_cast<uint16_t>(std::min<size_t>(common, UINT16_MAX)));
    ids_.push_back(entries[i].second);
    bytes_.push_back(std::move(entries[i].first));
  }
  table_bytes_ = static_cast<int64_t>(ids_.capacity() * sizeof(int32_t) + shared_.capacity() * sizeof(uint16_t) +
                                      bytes_.capacity() * sizeof(std::string));
  for (const std::string& b : bytes_) {
    if (b.capacity() > 15) table_bytes_ += static_cast<int64_t>(b.capacity()) + 1;  // past the inline buffer
  }
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
  count = Walk(state, allowed);
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= max_cached_) cache_.clear();
  cache_[key] = CachedMask{allowed, count};
  return count;
}

int JsonTokenMask::Walk(const JsonAcceptor& state, std::vector<uint8_t>& allowed) const {
  int count = 0;
  // Depth-first over the sorted entries: after[k] is the state after the
  // first k bytes of the last entry fed. When that entry was refused at its
  // failed-th byte, every following entry that shares those failed bytes is
  // refused without feeding anything; any other shares fewer bytes with it
  // than were fed, so after[lcp] is valid for it.
  std::vector<JsonAcceptor> after(1, state);
  int failed = INT_MAX;
  int lcp = INT_MAX;  // common bytes of this entry and the last one fed
  for (size_t i = 0; i < ids_.size(); ++i) {
    lcp = std::min<int>(lcp, i == 0 ? 0 : shared_[i]);
    if (lcp >= failed) continue;
    const std::string& b = bytes_[i];
    if (after.size() < b.size() + 1) after.resize(b.size() + 1);
    int k = lcp;
    JsonAcceptor cur = after[k];
    failed = INT_MAX;
    for (; k < static_cast<int>(b.size()); ++k) {
      if (!cur.Feed(static_cast<uint8_t>(b[k]))) {
        failed = k + 1;
        break;
      }
      after[k + 1] = cur;
    }
    lcp = INT_MAX;
    if (failed == INT_MAX) {
      allowed[ids_[i]] = 1;
      ++count;
    }
  }
  return count;
}

}  // namespace attnserve
