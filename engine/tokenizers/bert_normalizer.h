// The BERT normalizer of Hugging Face `tokenizers` (BertNormalizer), applied
// character by character so that every output character keeps the byte span
// of the input character it came from (for token offsets):
//   clean_text:            drop NUL, U+FFFD and C* characters (except \t \n \r);
//                          map White_Space characters to ' '
//   handle_chinese_chars:  put spaces around CJK ideographs
//   strip_accents:         NFD, then drop Mn marks (defaults to `lowercase`)
//   lowercase:             full Unicode lowercase mapping
// Stateless and thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BERT_NORMALIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BERT_NORMALIZER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/tokenizers/aligned_text.h"

namespace attnserve {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  // unset: same as lowercase
  bool lowercase = true;
};

// A normalized character and the byte span [begin, end) of the original text
// it came from (the Unigram normalizer's AlignedChar).
using NormalizedChar = AlignedChar;

// Appends the normalization of `codepoints` to `out`; codepoints[i] spans
// bytes [byte_offsets[i], byte_offsets[i + 1]) of the original text
// (byte_offsets has codepoints.size() + 1 entries, as DecodeUtf8 gives).
void BertNormalize(const BertNormalizerOptions& options, const std::vector<char32_t>& codepoints,
                   const std::vector<uint32_t>& byte_offsets, std::vector<NormalizedChar>* out);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BERT_NORMALIZER_H_
