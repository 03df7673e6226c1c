// Text under normalization that remembers where each character came from,
// as Hugging Face tokenizers' NormalizedString does: every character carries
// the byte span of the original text it is aligned to, so a token's offsets
// are the span from its first character's begin to its last one's end.
//
// The edits follow tokenizers' alignment rules exactly (they decide the
// offsets a tokenize endpoint reports): a replacing character takes the span
// of the character it replaces, an inserted one the span of the character
// consumed before it.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_ALIGNED_TEXT_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_ALIGNED_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace attnserve {

struct AlignedChar {
  char32_t c;
  uint32_t begin;  // original byte span
  uint32_t end;
};
using AlignedText = std::vector<AlignedChar>;

// One character of an edit: `change` 0 replaces the next original character,
// 1 inserts, -n replaces the next one and deletes n more after it
// (tokenizers' `(char, isize)` transformations).
struct CharEdit {
  char32_t c;
  int change;
};

// The characters of `text` (valid UTF-8), each aligned to its own bytes
// shifted by `base`.
absl::StatusOr<AlignedText> AlignText(absl::string_view text, uint32_t base);
std::string ToUtf8(const AlignedText& text);
// The same, and in `char_at_byte` (size: bytes + 1) the index of the
// character each byte starts (the end maps to text.size(); continuation
// bytes are unused).
std::string ToUtf8(const AlignedText& text, std::vector<size_t>* char_at_byte);

// tokenizers' NormalizedString::transform of the whole text: the edits are
// applied in order after skipping `initial_offset` characters; characters no
// edit consumed at the end are dropped.
AlignedText ApplyEdits(const AlignedText& text, const std::vector<CharEdit>& edits, size_t initial_offset = 0);

// NormalizedString::prepend: `prefix` before the first character, aligned
// to it (nothing when the text is empty).
void PrependAligned(const std::u32string& prefix, AlignedText* text);

// NormalizedString::replace of the character range [begin, end) (not empty)
// by `content`: each new character aligned to the last replaced one.
void ReplaceRange(size_t begin, size_t end, const std::u32string& content, AlignedText* text);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_ALIGNED_TEXT_H_
