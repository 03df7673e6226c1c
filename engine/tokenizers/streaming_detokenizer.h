// StreamingDetokenizer: turns generated token ids, one at a time, into text
// that is always valid UTF-8. A token may end inside a character (byte
// fallback "<0xE2>", byte-level BPE pieces); those bytes are held until the
// character completes. Bytes that can never become valid UTF-8 are replaced
// by U+FFFD, so every string it returns is valid (gRPC string fields must
// be). One instance per request; not thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_STREAMING_DETOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_STREAMING_DETOKENIZER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

class StreamingDetokenizer {
 public:
  // `prev_token`: the token before the first one pushed (the last prompt
  // token, or -1 when there is none), for SentencePiece's leading-space rule.
  // `write_special`: control tokens are written as their vocabulary entry
  // ("<s>", "<|im_start|>"), as transformers' decode with
  // skip_special_tokens=False writes them; the piece after one keeps its
  // leading space (it does not begin the text). Else they add nothing.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, int32_t prev_token = -1, bool write_special = false)
      : tokenizer_(tokenizer), prev_(prev_token), write_special_(write_special) {}

  // Adds one token; returns the newly completed text (possibly "").
  std::string Push(int32_t token);
  // End of the stream: returns the held bytes, incomplete ones as U+FFFD.
  std::string Flush();
  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  int32_t prev_;
  bool write_special_;
  bool after_written_special_ = false;
  std::string pending_;
};

// Splits `bytes` into the longest valid-UTF-8 prefix that cannot change with
// more input (invalid sequences replaced by U+FFFD) and returns it; the
// incomplete tail (a possible start of a character) stays in `bytes`.
// With `final`, the tail is flushed too (as U+FFFD).
std::string TakeCompleteUtf8(std::string& bytes, bool final);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_STREAMING_DETOKENIZER_H_
