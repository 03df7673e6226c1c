// SortedVocabulary: a decoder vocabulary's ordinary tokens sorted by their
// bytes, for constrained decoding (JSON mode, a choice among strings): which
// tokens may come next is which tokens' bytes a byte-at-a-time acceptor
// takes from its current state.
//
// Walk visits the tokens in byte order, so tokens that share leading bytes
// share the acceptor's work on them, and a refused prefix refuses every
// token that starts with it at once (most of a 32,000-token vocabulary is
// refused after one or two bytes wherever the next byte is constrained).
//
// A token's bytes are taken as they follow an ordinary token (SentencePiece's
// "▁" is then a space). The first token after a lone BOS loses that space
// (Tokenizer::TokenBytes), so for it the mask may differ from its exact
// bytes; the engine feeds the exact bytes of the token drawn, and the
// acceptors allow optional leading whitespace where that matters (JSON).
//
// Immutable after construction: one instance serves every sequence.
#ifndef ATTNSERVE_ENGINE_SAMPLING_SORTED_VOCABULARY_H_
#define ATTNSERVE_ENGINE_SAMPLING_SORTED_VOCABULARY_H_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

class SortedVocabulary {
 public:
  explicit SortedVocabulary(const Tokenizer& tokenizer);

  int vocab_size() const { return vocab_size_; }
  // Bytes this table holds.
  int64_t bytes() const { return bytes_held_; }
  // The most bytes one token has (JsonSchemaAcceptor::StateKey's horizon).
  int longest_token_bytes() const { return longest_token_bytes_; }

  // Sets allowed[id] = 1 for every ordinary token whose bytes `state` (any
  // type with `bool Feed(uint8_t)` and value semantics) takes, leaving the
  // other entries as they are; returns how many it set. Tokens that add no
  // bytes are never allowed: they could loop forever.
  template <typename Acceptor>
  int Walk(const Acceptor& state, std::vector<uint8_t>& allowed) const {
    int count = 0;
    // after[k] is the state after the first k bytes of the last entry fed.
    // When that entry was refused at its failed-th byte, every following
    // entry that shares those failed bytes is refused without feeding
    // anything; any other shares fewer bytes with it than were fed, so
    // after[lcp] is valid for it.
    std::vector<Acceptor> after(1, state);
    int failed = INT_MAX;
    int lcp = INT_MAX;  // common bytes of this entry and the last one fed
    for (size_t i = 0; i < ids_.size(); ++i) {
      lcp = std::min<int>(lcp, i == 0 ? 0 : shared_[i]);
      if (lcp >= failed) continue;
      const std::string& b = token_bytes_[i];
      while (after.size() < b.size() + 1) after.push_back(state);  // overwritten before use
      int k = lcp;
      Acceptor cur = after[k];
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

 private:
  int vocab_size_ = 0;
  int64_t bytes_held_ = 0;
  int longest_token_bytes_ = 0;
  // Ordinary tokens with non-empty bytes, sorted by those bytes; shared_[i]
  // is how many leading bytes entry i has in common with entry i - 1.
  std::vector<int32_t> ids_;
  std::vector<std::string> token_bytes_;
  std::vector<uint16_t> shared_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_SORTED_VOCABULARY_H_
