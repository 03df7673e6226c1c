#include "engine/sampling/sorted_vocabulary.h"

#include <utility>

namespace attnserve {

SortedVocabulary::SortedVocabulary(const Tokenizer& tokenizer) : vocab_size_(tokenizer.vocab_size()) {
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
  token_bytes_.reserve(entries.size());
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
    token_bytes_.push_back(std::move(entries[i].first));
  }
  bytes_held_ = static_cast<int64_t>(ids_.capacity() * sizeof(int32_t) + shared_.capacity() * sizeof(uint16_t) +
                                     token_bytes_.capacity() * sizeof(std::string));
  for (const std::string& b : token_bytes_) {
    longest_token_bytes_ = std::max(longest_token_bytes_, static_cast<int>(b.size()));
    if (b.capacity() > 15) bytes_held_ += static_cast<int64_t>(b.capacity()) + 1;  // past the inline buffer
  }
}

}  // namespace attnserve
