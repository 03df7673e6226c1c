#include "engine/tokenizers/bert_normalizer.h"

#include <string>

#include "engine/tokenizers/unicode_util.h"

namespace attnserve {

void BertNormalize(const BertNormalizerOptions& options, const std::vector<char32_t>& codepoints,
                   const std::vector<uint32_t>& byte_offsets, std::vector<NormalizedChar>* out) {
  const bool strip_accents = options.strip_accents.value_or(options.lowercase);
  std::u32string stage;   // one input character after each step
  std::u32string next;
  for (size_t i = 0; i < codepoints.size(); ++i) {
    char32_t c = codepoints[i];
    const uint32_t begin = byte_offsets[i];
    const uint32_t end = byte_offsets[i + 1];
    const bool tab_or_newline = c == U'\t' || c == U'\n' || c == U'\r';
    if (options.clean_text) {
      if (c == 0 || c == 0xfffd || (!tab_or_newline && IsOtherCategory(c))) continue;
      if (tab_or_newline || IsUnicodeWhitespace(c)) c = U' ';
    }
    stage.clear();
    if (options.handle_chinese_chars && IsCjkIdeograph(c)) {
      stage = {U' ', c, U' '};
    } else {
      stage.push_back(c);
    }
    if (strip_accents) {
      next.clear();
      for (char32_t s : stage) AppendNfd(s, &next);
      stage.clear();
      for (char32_t s : next) {
        if (!IsNonspacingMark(s)) stage.push_back(s);
      }
    }
    if (options.lowercase) {
      next.clear();
      for (char32_t s : stage) AppendLower(s, &next);
      stage.swap(next);
    }
    for (char32_t s : stage) out->push_back({s, begin, end});
  }
}

}  // namespace attnserve
