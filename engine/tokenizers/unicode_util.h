// Unicode helpers shared by the tokenizers: validating UTF-8 decoding with
// byte offsets, encoding, and the character classes tokenizers use (backed by
// ICU so that categories follow a current Unicode version). Stateless and
// thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_UNICODE_UTIL_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_UNICODE_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace attnserve {

// Decodes UTF-8. On success `codepoints[i]` starts at byte `byte_offsets[i]`
// and byte_offsets has one extra entry (the total length). Invalid UTF-8
// (bad lead/continuation bytes, overlongs, surrogates, > U+10FFFF, a
// truncated sequence) is INVALID_ARGUMENT naming the byte offset.
absl::Status DecodeUtf8(absl::string_view text, std::vector<char32_t>* codepoints,
                        std::vector<uint32_t>* byte_offsets);
// True if `text` is valid UTF-8.
bool IsValidUtf8(absl::string_view text);
// Appends the UTF-8 encoding of `c` (which must be a valid scalar value).
void AppendUtf8(char32_t c, std::string* out);
std::string ToUtf8(const std::u32string& s);

// Unicode White_Space property (what Rust's char::is_whitespace tests).
bool IsUnicodeWhitespace(char32_t c);
// General category C*: Cc, Cf, Cn (unassigned), Co, Cs.
bool IsOtherCategory(char32_t c);
// General category P*: Pc, Pd, Pe, Pf, Pi, Po, Ps.
bool IsPunctuationCategory(char32_t c);
// General category Mn (non-spacing mark).
bool IsNonspacingMark(char32_t c);
// CJK Unified Ideographs and their extensions / compatibility blocks, the
// ranges BERT isolates as single-character words (the Hugging Face ranges,
// which start the Extension E block at U+2B920).
bool IsCjkIdeograph(char32_t c);
// Extended grapheme clusters (Unicode UAX #29, ICU's rules): the index in
// `text` where each cluster starts, then text.size().
std::vector<size_t> GraphemeStarts(const std::u32string& text);
// Appends the canonical (NFD) decomposition of `c` (c itself if none).
void AppendNfd(char32_t c, std::u32string* out);
// The NFC form of `text` as tokenizers' NFC normalizer aligns it: for each
// stretch that NFC rewrites (between ICU's normalization boundaries) whose n
// characters become k <= n, the first new character stands for the first old
// one and takes the next n - k with it, the others follow one for one
// ("e\u0301x" -> "\u00e9x": \u00e9 spans the e, x its own byte); when NFC
// lengthens a stretch the extra characters are inserted after the last.
// Returned as (new character, change) pairs in tokenizers' convention
// (aligned_text.h's CharEdit: 0 replaces one, -n also deletes n, 1
// inserts); empty when `text` is already NFC.
std::vector<std::pair<char32_t, int>> NfcEdits(const std::u32string& text);
// Decoded text built piece by piece with Hugging Face's ByteFallback rule:
// a run of byte tokens (<0xNN>) is appended as its bytes when they are valid
// UTF-8, else as one U+FFFD per token, once a text piece or the end closes
// the run.
class ByteFallbackText {
 public:
  void AddByte(uint8_t byte) {
    bytes_.push_back(static_cast<char>(byte));
    ++byte_tokens_;
  }
  // The text so far, the pending run closed: append a text piece to it.
  std::string& Text() {
    Flush();
    return text_;
  }
  std::string Finish() && {
    Flush();
    return std::move(text_);
  }

 private:
  void Flush();

  std::string text_, bytes_;
  int byte_tokens_ = 0;
};
// `text` (valid UTF-8) in NFC, when that differs from it: true and *out set;
// false (out untouched) when it is already NFC or is not valid UTF-8.
bool ToNfc(absl::string_view text, std::string* out);
// Appends the full, context-free lowercase mapping of `c` (may be several
// code points, e.g. U+0130 -> "i\u0307").
void AppendLower(char32_t c, std::u32string* out);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_UNICODE_UTIL_H_
