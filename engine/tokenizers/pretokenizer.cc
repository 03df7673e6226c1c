#include "engine/tokenizers/pretokenizer.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "engine/tokenizers/bpe_merge.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

enum class Cls { kLetter, kNumber, kSpace, kOther };

struct Char {
  size_t begin;
  size_t end;
  char32_t cp;  // 0xFFFFFFFF for an invalid byte
  Cls cls;
  int8_t category;  // ICU's u_charType (UCharCategory), -1 for an invalid byte
};

Cls Classify(char32_t cp) {
  if (cp == 0xFFFFFFFFu) return Cls::kOther;
  UChar32 c = static_cast<UChar32>(cp);
  if (u_isUWhiteSpace(c)) return Cls::kSpace;
  switch (u_charType(c)) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER: case U_OTHER_LETTER:
      return Cls::kLetter;
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
      return Cls::kNumber;
    default:
      return Cls::kOther;
  }
}

std::vector<Char> Decode(absl::string_view s) {
  std::vector<Char> out;
  for (size_t i = 0; i < s.size();) {
    int n = Utf8CharLen(s, i);
    const unsigned char c0 = static_cast<unsigned char>(s[i]);
    char32_t cp;
    if (n == 1) {
      cp = c0 < 0x80 ? c0 : 0xFFFFFFFFu;
    } else {
      cp = c0 & (0xFF >> (n + 1));
      for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    const int8_t category = cp == 0xFFFFFFFFu ? int8_t{-1} : static_cast<int8_t>(u_charType(static_cast<UChar32>(cp)));
    out.push_back({i, i + n, cp, Classify(cp), category});
    i += n;
  }
  return out;
}

bool IsNewline(char32_t c) { return c == '\r' || c == '\n'; }

// Length in chars of a contraction match at i ('s 't 're 've 'm 'll 'd), 0 if none.
int Contraction(const std::vector<Char>& c, size_t i, bool ignore_case) {
  if (c[i].cp != '\'' || i + 1 >= c.size()) return 0;
  auto lower = [&](size_t k) -> char32_t {
    if (k >= c.size()) return 0;
    char32_t x = c[k].cp;
    if (ignore_case && x >= 'A' && x <= 'Z') x += 32;
    return x;
  };
  char32_t a = lower(i + 1), b = lower(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

size_t RunOf(const std::vector<Char>& c, size_t i, Cls cls) {
  size_t j = i;
  while (j < c.size() && c[j].cls == cls) ++j;
  return j;
}

// \s+(?!\S) then \s+ at i (c[i] is whitespace): returns the end.
size_t Whitespace(const std::vector<Char>& c, size_t i) {
  size_t j = RunOf(c, i, Cls::kSpace);
  if (j == c.size()) return j;       // run reaches the end: (?!\S) holds
  if (j - i >= 2) return j - 1;      // leave the last space to the next word
  return j;                          // \s+
}

// Match length (end index) at i for the GPT-2 regex.
size_t MatchGpt2(const std::vector<Char>& c, size_t i) {
  if (int n = Contraction(c, i, false)) return i + n;
  const bool sp = c[i].cp == ' ' && i + 1 < c.size();
  const size_t k = sp ? i + 1 : i;
  for (Cls cls : {Cls::kLetter, Cls::kNumber}) {
    if (c[i].cls == cls) return RunOf(c, i, cls);
    if (sp && c[k].cls == cls) return RunOf(c, k, cls);
  }
  if (c[i].cls == Cls::kOther) return RunOf(c, i, Cls::kOther);
  if (sp && c[k].cls == Cls::kOther) return RunOf(c, k, Cls::kOther);
  return Whitespace(c, i);
}

// Llama-3 / Qwen2 (max_digits 3 or 1).
size_t MatchLlama3(const std::vector<Char>& c, size_t i, size_t max_digits) {
  if (int n = Contraction(c, i, true)) return i + n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c[i].cls == Cls::kLetter) return RunOf(c, i, Cls::kLetter);
  if (!IsNewline(c[i].cp) && c[i].cls != Cls::kNumber && i + 1 < c.size() && c[i + 1].cls == Cls::kLetter) {
    return RunOf(c, i + 1, Cls::kLetter);
  }
  // \p{N}{1,max}
  if (c[i].cls == Cls::kNumber) {
    size_t j = i;
    while (j < c.size() && j - i < max_digits && c[j].cls == Cls::kNumber) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  size_t k = (c[i].cp == ' ' && i + 1 < c.size()) ? i + 1 : i;
  if (c[k].cls == Cls::kOther) {
    size_t j = RunOf(c, k, Cls::kOther);
    while (j < c.size() && IsNewline(c[j].cp)) ++j;
    return j;
  }
  if (c[i].cls == Cls::kOther) return RunOf(c, i, Cls::kOther);
  // \s*[\r\n]+ : up to and including the last newline of the whitespace run.
  size_t run_end = RunOf(c, i, Cls::kSpace);
  for (size_t j = run_end; j > i; --j) {
    if (IsNewline(c[j - 1].cp)) return j;
  }
  return Whitespace(c, i);
}

// GPT-4o's letter classes: "upper" [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// "lower" [\p{Ll}\p{Lm}\p{Lo}\p{M}] (modifier and other letters and marks
// are both).
bool IsMark(int8_t k) { return k == U_NON_SPACING_MARK || k == U_ENCLOSING_MARK || k == U_COMBINING_SPACING_MARK; }
bool UpperClass(const Char& ch) {
  const int8_t k = ch.category;
  return k == U_UPPERCASE_LETTER || k == U_TITLECASE_LETTER || k == U_MODIFIER_LETTER || k == U_OTHER_LETTER ||
         IsMark(k);
}
bool LowerClass(const Char& ch) {
  const int8_t k = ch.category;
  return k == U_LOWERCASE_LETTER || k == U_MODIFIER_LETTER || k == U_OTHER_LETTER || IsMark(k);
}

template <typename Pred>
size_t RunWhile(const std::vector<Char>& c, size_t i, Pred pred) {
  while (i < c.size() && pred(c[i])) ++i;
  return i;
}

// GPT-4o's first two alternatives at `start` (after the optional prefix):
// U*L+ (upper = true: U+L*), then an optional contraction; 0 when they do
// not match. U* gives back characters one at a time, as a backtracking
// engine does, until L+ can start.
size_t O200kWord(const std::vector<Char>& c, size_t start, bool upper_first) {
  if (start >= c.size()) return 0;
  const size_t u_end = RunWhile(c, start, UpperClass);
  size_t l_end = 0;
  if (upper_first) {
    if (u_end == start) return 0;
    l_end = RunWhile(c, u_end, LowerClass);
  } else {
    for (size_t p = u_end + 1; p-- > start;) {
      if (p < c.size() && LowerClass(c[p])) {
        l_end = RunWhile(c, p, LowerClass);
        break;
      }
    }
    if (l_end == 0) return 0;
  }
  return l_end + (l_end < c.size() ? Contraction(c, l_end, true) : 0);
}

// Match end at i for GPT-4o's regex (o200k_base):
//   [^\r\n\p{L}\p{N}]?U*L+C? | [^\r\n\p{L}\p{N}]?U+L*C? | \p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// alternatives in order, each first with its optional prefix.
size_t MatchO200k(const std::vector<Char>& c, size_t i) {
  const bool prefix = !IsNewline(c[i].cp) && c[i].cls != Cls::kLetter && c[i].cls != Cls::kNumber;
  for (bool upper_first : {false, true}) {
    if (prefix) {
      if (size_t end = O200kWord(c, i + 1, upper_first)) return end;
    }
    if (size_t end = O200kWord(c, i, upper_first)) return end;
  }
  if (c[i].cls == Cls::kNumber) {
    size_t j = i;
    while (j < c.size() && j - i < 3 && c[j].cls == Cls::kNumber) ++j;
    return j;
  }
  const size_t k = (c[i].cp == ' ' && i + 1 < c.size()) ? i + 1 : i;
  if (c[k].cls == Cls::kOther) {
    size_t j = RunOf(c, k, Cls::kOther);
    while (j < c.size() && (IsNewline(c[j].cp) || c[j].cp == '/')) ++j;
    return j;
  }
  const size_t run_end = RunOf(c, i, Cls::kSpace);
  for (size_t j = run_end; j > i; --j) {
    if (IsNewline(c[j - 1].cp)) return j;
  }
  return Whitespace(c, i);
}

}  // namespace

const char* PretokenizerKindName(PretokenizerKind kind) {
  switch (kind) {
    case PretokenizerKind::kGpt2: return "gpt2";
    case PretokenizerKind::kLlama3: return "llama3";
    case PretokenizerKind::kQwen2: return "qwen2";
    case PretokenizerKind::kSmolLM: return "smollm";
    case PretokenizerKind::kO200k: return "o200k";
  }
  return "unknown";
}

const std::string& PretokenizerRegex(PretokenizerKind kind) {
  static const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  static const std::string kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const std::string kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const std::string kO200k =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
      R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
      R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  switch (kind) {
    case PretokenizerKind::kO200k: return kO200k;
    case PretokenizerKind::kGpt2: return kGpt2;
    case PretokenizerKind::kLlama3: return kLlama3;
    case PretokenizerKind::kQwen2: return kQwen2;
    case PretokenizerKind::kSmolLM: return kGpt2;  // after the Digits split
  }
  return kGpt2;
}

std::optional<PretokenizerKind> PretokenizerFromRegex(absl::string_view regex) {
  for (PretokenizerKind k : {PretokenizerKind::kGpt2, PretokenizerKind::kLlama3, PretokenizerKind::kQwen2,
                             PretokenizerKind::kO200k}) {
    if (regex == PretokenizerRegex(k)) return k;
  }
  return std::nullopt;
}

std::optional<PretokenizerKind> PretokenizerFromGgufPre(absl::string_view pre) {
  // roberta-bpe: llama.cpp's name for RoBERTa's byte-level BPE (its GPT-2 regex).
  if (pre == "gpt-2" || pre == "gpt2" || pre == "default" || pre == "roberta-bpe") return PretokenizerKind::kGpt2;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "smaug-bpe") {
    return PretokenizerKind::kLlama3;
  }
  if (pre == "qwen2") return PretokenizerKind::kQwen2;
  if (pre == "smollm") return PretokenizerKind::kSmolLM;
  // llama.cpp's name for GPT-4o's regex (Phi-4-mini's files); llama.cpp
  // approximates its Unicode case classes with ASCII ones, we run the regex
  // as tokenizer.json states it.
  if (pre == "gpt-4o") return PretokenizerKind::kO200k;
  return std::nullopt;
}

std::vector<absl::string_view> Pretokenize(absl::string_view text, PretokenizerKind kind) {
  std::vector<Char> c = Decode(text);
  std::vector<absl::string_view> out;
  if (kind == PretokenizerKind::kSmolLM) {
    // Digits(individual_digits=true): every number character alone, then the
    // GPT-2 regex inside each run between them.
    size_t start = 0;
    auto flush = [&](size_t end) {
      if (end > start) {
        absl::string_view run = text.substr(c[start].begin, c[end - 1].end - c[start].begin);
        for (absl::string_view p : Pretokenize(run, PretokenizerKind::kGpt2)) out.push_back(p);
      }
    };
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i].cls != Cls::kNumber) continue;
      flush(i);
      out.push_back(text.substr(c[i].begin, c[i].end - c[i].begin));
      start = i + 1;
    }
    flush(c.size());
    return out;
  }
  for (size_t i = 0; i < c.size();) {
    size_t j = kind == PretokenizerKind::kGpt2    ? MatchGpt2(c, i)
               : kind == PretokenizerKind::kO200k ? MatchO200k(c, i)
                                                  : MatchLlama3(c, i, kind == PretokenizerKind::kLlama3 ? 3 : 1);
    if (j <= i) j = i + 1;  // cannot happen (alternatives cover all); guards progress
    out.push_back(text.substr(c[i].begin, c[j - 1].end - c[i].begin));
    i = j;
  }
  return out;
}

namespace {

// Byte length of the whitespace character starting at s[i] (0 if none).
size_t WhitespaceAt(absl::string_view s, size_t i, bool ascii) {
  if (ascii) {
    const char c = s[i];
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' ? 1 : 0;
  }
  size_t k = i + 1;
  while (k < s.size() && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) ++k;
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  if (!DecodeUtf8(s.substr(i, k - i), &cps, &offsets).ok() || cps.size() != 1) return 0;
  return IsUnicodeWhitespace(cps[0]) ? k - i : 0;
}

// Start of the whitespace run that ends `s` (s.size() when there is none).
size_t TrailingWhitespaceStart(absl::string_view s, bool ascii) {
  size_t end = s.size();
  while (end > 0) {
    size_t k = end - 1;
    while (k > 0 && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
    if (WhitespaceAt(s, k, ascii) != end - k) break;
    end = k;
  }
  return end;
}

}  // namespace

void StripBesideAddedTokens(std::vector<TextSegment>& segments, const std::vector<uint8_t>& flags,
                            bool ascii_whitespace) {
  auto flag = [&](int id) -> uint8_t { return id >= 0 && id < static_cast<int>(flags.size()) ? flags[id] : 0; };
  for (size_t i = 0; i < segments.size(); ++i) {
    TextSegment& token = segments[i];
    if (token.id < 0) continue;
    if ((flag(token.id) & kAddedTokenLstrip) && i > 0 && segments[i - 1].id < 0) {
      absl::string_view& before = segments[i - 1].text;
      const size_t keep = TrailingWhitespaceStart(before, ascii_whitespace);
      token.text = absl::string_view(before.data() + keep, token.text.size() + (before.size() - keep));
      before = before.substr(0, keep);
    }
    if ((flag(token.id) & kAddedTokenRstrip) && i + 1 < segments.size() && segments[i + 1].id < 0) {
      absl::string_view& after = segments[i + 1].text;
      size_t skip = 0;
      for (size_t n; skip < after.size() && (n = WhitespaceAt(after, skip, ascii_whitespace)) > 0;) skip += n;
      token.text = absl::string_view(token.text.data(), token.text.size() + skip);
      after = after.substr(skip);
    }
  }
  segments.erase(std::remove_if(segments.begin(), segments.end(),
                                [](const TextSegment& s) { return s.id < 0 && s.text.empty(); }),
                 segments.end());
}

std::vector<TextSegment> SplitOnAddedTokens(absl::string_view text, const std::vector<AddedToken>& tokens) {
  std::vector<TextSegment> out;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const AddedToken* best = nullptr;
    for (const AddedToken& t : tokens) {
      if (!t.content.empty() && text.substr(i, t.content.size()) == t.content &&
          (best == nullptr || t.content.size() > best->content.size())) {
        best = &t;
      }
    }
    if (best == nullptr) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({text.substr(i, best->content.size()), best->id});
    i += best->content.size();
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
  return out;
}

}  // namespace attnserve
