#include "engine/tokenizers/unicode_util.h"

#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"

namespace attnserve {

absl::Status DecodeUtf8(absl::string_view text, std::vector<char32_t>* codepoints,
                        std::vector<uint32_t>* byte_offsets) {
  codepoints->clear();
  byte_offsets->clear();
  codepoints->reserve(text.size());
  byte_offsets->reserve(text.size() + 1);
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    uint8_t b = s[i];
    char32_t c;
    int len;
    if (b < 0x80) {
      c = b;
      len = 1;
    } else if ((b & 0xe0) == 0xc0) {
      c = b & 0x1f;
      len = 2;
    } else if ((b & 0xf0) == 0xe0) {
      c = b & 0x0f;
      len = 3;
    } else if ((b & 0xf8) == 0xf0) {
      c = b & 0x07;
      len = 4;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 lead byte at byte ", i));
    }
    if (i + len > n) return absl::InvalidArgumentError(absl::StrCat("truncated UTF-8 sequence at byte ", i));
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) {
        return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 continuation byte at byte ", i + k));
      }
      c = (c << 6) | (s[i + k] & 0x3f);
    }
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < kMin[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 code point at byte ", i));
    }
    codepoints->push_back(c);
    byte_offsets->push_back(static_cast<uint32_t>(i));
    i += len;
  }
  byte_offsets->push_back(static_cast<uint32_t>(n));
  return absl::OkStatus();
}

bool IsValidUtf8(absl::string_view text) {
  std::vector<char32_t> cps;
  std::vector<uint32_t> offs;
  return DecodeUtf8(text, &cps, &offs).ok();
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

std::string ToUtf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) AppendUtf8(c, &out);
  return out;
}

bool IsUnicodeWhitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool IsOtherCategory(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

bool IsPunctuationCategory(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool IsNonspacingMark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

bool IsCjkIdeograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

namespace {
void AppendUnicodeString(const icu::UnicodeString& s, std::u32string* out) {
  for (int32_t i = 0; i < s.length();) {
    UChar32 c = s.char32At(i);
    out->push_back(static_cast<char32_t>(c));
    i += U16_LENGTH(c);
  }
}
}  // namespace

void AppendNfd(char32_t c, std::u32string* out) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  icu::UnicodeString decomposition;
  if (U_SUCCESS(status) && nfd->getDecomposition(static_cast<UChar32>(c), decomposition)) {
    AppendUnicodeString(decomposition, out);
  } else {
    out->push_back(c);
  }
}

std::vector<std::pair<char32_t, int>> NfcEdits(const std::u32string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return {};
  // Most text is inert under NFC: nothing to do.
  bool inert = true;
  for (char32_t c : text) inert = inert && nfc->isInert(static_cast<UChar32>(c));
  if (inert) return {};
  std::vector<std::pair<char32_t, int>> edits;
  edits.reserve(text.size());
  bool changed = false;
  size_t begin = 0;
  while (begin < text.size()) {
    // One stretch NFC normalizes on its own: up to the next boundary.
    size_t end = begin + 1;
    while (end < text.size() && !nfc->hasBoundaryBefore(static_cast<UChar32>(text[end]))) ++end;
    icu::UnicodeString source;
    for (size_t i = begin; i < end; ++i) source.append(static_cast<UChar32>(text[i]));
    status = U_ZERO_ERROR;
    const icu::UnicodeString normalized = nfc->normalize(source, status);
    std::u32string out;
    if (U_SUCCESS(status)) AppendUnicodeString(normalized, &out);
    const size_t n = end - begin;
    if (U_FAILURE(status) || out == text.substr(begin, n)) {
      for (size_t i = begin; i < end; ++i) edits.emplace_back(text[i], 0);
    } else {
      changed = true;
      for (size_t j = 0; j < out.size(); ++j) {
        int change = 0;
        if (j >= n) {
          change = 1;
        } else if (j == 0 && out.size() < n) {
          change = -static_cast<int>(n - out.size());
        }
        edits.emplace_back(out[j], change);
      }
    }
    begin = end;
  }
  if (!changed) return {};
  return edits;
}

void ByteFallbackText::Flush() {
  if (IsValidUtf8(bytes_)) {
    text_ += bytes_;
  } else {
    for (int i = 0; i < byte_tokens_; ++i) text_ += "\xEF\xBF\xBD";  // U+FFFD
  }
  bytes_.clear();
  byte_tokens_ = 0;
}

bool ToNfc(absl::string_view text, std::string* out) {
  std::vector<char32_t> codepoints;
  std::vector<uint32_t> starts;
  if (!DecodeUtf8(text, &codepoints, &starts).ok()) return false;
  const std::vector<std::pair<char32_t, int>> edits =
      NfcEdits(std::u32string(codepoints.begin(), codepoints.end()));
  if (edits.empty()) return false;
  out->clear();
  for (const auto& [c, change] : edits) AppendUtf8(c, out);
  return true;
}

void AppendLower(char32_t c, std::u32string* out) {
  UChar src[2];
  int32_t src_len = 0;
  U16_APPEND_UNSAFE(src, src_len, static_cast<UChar32>(c));
  UChar dst[8];
  UErrorCode status = U_ZERO_ERROR;
  int32_t n = u_strToLower(dst, 8, src, src_len, "", &status);
  if (U_FAILURE(status)) {
    out->push_back(c);
    return;
  }
  AppendUnicodeString(icu::UnicodeString(dst, n), out);
}

std::vector<size_t> GraphemeStarts(const std::u32string& text) {
  std::vector<size_t> starts;
  starts.reserve(text.size() + 1);
  // Below U+0300 (Latin, no combining marks, joiners, jamo or emoji) every
  // code point is a cluster of its own except CR LF: no break iterator needed.
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x300; })) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (i > 0 && text[i] == U'\n' && text[i - 1] == U'\r') continue;
      starts.push_back(i);
    }
    starts.push_back(text.size());
    return starts;
  }
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::BreakIterator> it(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
  if (U_FAILURE(status) || it == nullptr) {
    // No break data: every code point its own cluster.
    for (size_t i = 0; i <= text.size(); ++i) starts.push_back(i);
    return starts;
  }
  const icu::UnicodeString u16 =
      icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()), static_cast<int32_t>(text.size()));
  it->setText(u16);
  // Boundaries come in UTF-16 units; walk the code points alongside.
  size_t cp = 0;
  int32_t unit = 0;
  for (int32_t b = it->first(); b != icu::BreakIterator::DONE; b = it->next()) {
    while (unit < b && cp < text.size()) {
      unit += text[cp] > 0xFFFF ? 2 : 1;
      ++cp;
    }
    starts.push_back(cp);
  }
  if (starts.empty() || starts.back() != text.size()) starts.push_back(text.size());
  return starts;
}

}  // namespace attnserve
