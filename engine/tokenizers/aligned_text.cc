#include "engine/tokenizers/aligned_text.h"

#include "engine/core/status_macros.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {

absl::StatusOr<AlignedText> AlignText(absl::string_view text, uint32_t base) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  RETURN_IF_ERROR(DecodeUtf8(text, &cps, &offsets));
  AlignedText out;
  out.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) out.push_back({cps[i], base + offsets[i], base + offsets[i + 1]});
  return out;
}

std::string ToUtf8(const AlignedText& text) {
  std::string out;
  out.reserve(text.size());
  for (const AlignedChar& a : text) AppendUtf8(a.c, &out);
  return out;
}

std::string ToUtf8(const AlignedText& text, std::vector<size_t>* char_at_byte) {
  std::string out;
  out.reserve(text.size());
  char_at_byte->assign(1, 0);
  for (size_t i = 0; i < text.size(); ++i) {
    (*char_at_byte)[out.size()] = i;
    AppendUtf8(text[i].c, &out);
    char_at_byte->resize(out.size() + 1, 0);
  }
  (*char_at_byte)[out.size()] = text.size();
  return out;
}

AlignedText ApplyEdits(const AlignedText& text, const std::vector<CharEdit>& edits, size_t initial_offset) {
  AlignedText out;
  out.reserve(edits.size());
  size_t next = initial_offset;  // the next original character to consume
  for (const CharEdit& e : edits) {
    AlignedChar a{e.c, 0, 0};
    if (e.change > 0) {
      // Inserted: the span of the character consumed before it ((0, 0) at
      // the very start, as tokenizers has it).
      if (next > 0 && next - 1 < text.size()) {
        a.begin = text[next - 1].begin;
        a.end = text[next - 1].end;
      }
    } else {
      if (next < text.size()) {
        a.begin = text[next].begin;
        a.end = text[next].end;
      }
      next += 1 + static_cast<size_t>(-e.change);
    }
    out.push_back(a);
  }
  return out;
}

void PrependAligned(const std::u32string& prefix, AlignedText* text) {
  if (text->empty() || prefix.empty()) return;
  const AlignedChar first = text->front();
  AlignedText added;
  for (char32_t c : prefix) added.push_back({c, first.begin, first.end});
  text->insert(text->begin(), added.begin(), added.end());
}

void ReplaceRange(size_t begin, size_t end, const std::u32string& content, AlignedText* text) {
  const AlignedChar last = (*text)[end - 1];
  AlignedText added;
  for (char32_t c : content) added.push_back({c, last.begin, last.end});
  text->erase(text->begin() + static_cast<std::ptrdiff_t>(begin), text->begin() + static_cast<std::ptrdiff_t>(end));
  text->insert(text->begin() + static_cast<std::ptrdiff_t>(begin), added.begin(), added.end());
}

}  // namespace attnserve
