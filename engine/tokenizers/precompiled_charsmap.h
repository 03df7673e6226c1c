// SentencePiece's normalization rules as a tokenizer.json "Precompiled"
// normalizer carries them (precompiled_charsmap, base64): a Darts-clone
// double-array trie of the byte strings to rewrite, whose values index a pool
// of NUL-terminated replacements. XLM-RoBERTa's charsmap is sentencepiece's
// nmt_nfkc rule: NFKC plus whitespace and control-character clean-up.
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_PRECOMPILED_CHARSMAP_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_PRECOMPILED_CHARSMAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace attnserve {

class PrecompiledCharsmap {
 public:
  // The blob: u32 little-endian trie size in bytes, the trie's u32 units, the
  // replacement pool. INVALID_ARGUMENT naming `where` for bad base64, a trie
  // size that is not whole units or runs past the blob, or a pool that is not
  // UTF-8.
  static absl::StatusOr<PrecompiledCharsmap> FromBase64(absl::string_view base64, const std::string& where);

  // The replacement of the SHORTEST rule that is a prefix of `chunk` (what
  // Hugging Face's spm_precompiled does with a grapheme), or nullopt when no
  // rule matches. A replacement may be empty (the chunk is deleted).
  std::optional<absl::string_view> Transform(absl::string_view chunk) const;

 private:
  std::vector<uint32_t> units_;
  std::string pool_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_PRECOMPILED_CHARSMAP_H_
