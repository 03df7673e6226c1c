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
// Immutable after construction, so one instance serves every sequence.
#ifndef ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_
#define ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "engine/sampling/json_acceptor.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

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

 private:
  int vocab_size_ = 0;
  // Ordinary tokens with non-empty bytes, sorted by those bytes; shared[i]
  // is how many leading bytes entry i has in common with entry i - 1.
  std::vector<int32_t> ids_;
  std::vector<std::string> bytes_;
  std::vector<uint16_t> shared_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_TOKEN_MASK_H_
