#include "engine/tokenizers/spm_normalizer.h"

#include <re2/re2.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": normalizer: ", what));
}

absl::StatusOr<std::u32string> Utf32(absl::string_view s, const std::string& path, absl::string_view field) {
  absl::StatusOr<AlignedText> chars = AlignText(s, 0);
  if (!chars.ok()) return Bad(path, absl::StrCat(field, " is not valid UTF-8"));
  std::u32string out;
  for (const AlignedChar& a : *chars) out.push_back(a.c);
  return out;
}

// tokenizers' Precompiled `replace`: the new characters replace the old
// ones one for one; extra new ones are inserts, missing ones deletions
// charged to the last edit so far.
void PushReplacement(size_t old_count, const std::u32string& replacement, std::vector<CharEdit>* edits) {
  for (char32_t c : replacement) edits->push_back({c, 0});
  const long diff = static_cast<long>(replacement.size()) - static_cast<long>(old_count);
  if (diff > 0) {
    for (long k = 0; k < diff; ++k) (*edits)[edits->size() - 1 - static_cast<size_t>(k)].change = 1;
  } else if (diff < 0 && !edits->empty()) {
    edits->back().change += static_cast<int>(diff);
  }
}

// The replacement's characters, or nullopt when it is not whole UTF-8 (a
// damaged pool: treated as no rule).
std::optional<std::u32string> Chars(absl::string_view utf8) {
  absl::StatusOr<AlignedText> chars = AlignText(utf8, 0);
  if (!chars.ok()) return std::nullopt;
  std::u32string out;
  for (const AlignedChar& a : *chars) out.push_back(a.c);
  return out;
}

}  // namespace

absl::StatusOr<SpmNormalizer> SpmNormalizer::FromJson(const nlohmann::json& normalizer, const std::string& path) {
  SpmNormalizer n;
  if (!normalizer.is_null()) RETURN_IF_ERROR(AddSteps(normalizer, path, &n.steps_));
  return n;
}

absl::Status SpmNormalizer::AddSteps(const nlohmann::json& j, const std::string& path, std::vector<Step>* steps) {
  ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(j, "type", path));
  const std::string t = type.value_or("");
  if (t == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array()) return Bad(path, "Sequence without normalizers");
    for (const nlohmann::json& inner : j["normalizers"]) RETURN_IF_ERROR(AddSteps(inner, path, steps));
    return absl::OkStatus();
  }
  Step step;
  if (t == "Precompiled") {
    step.kind = Step::Kind::kPrecompiled;
    ASSIGN_OR_RETURN(std::optional<std::string> blob, JsonOptionalString(j, "precompiled_charsmap", path));
    if (!blob.has_value() || blob->empty()) return absl::OkStatus();  // no rules: nothing to do
    ASSIGN_OR_RETURN(PrecompiledCharsmap charsmap, PrecompiledCharsmap::FromBase64(*blob, path));
    step.charsmap = std::make_shared<const PrecompiledCharsmap>(std::move(charsmap));
  } else if (t == "Replace") {
    step.kind = Step::Kind::kReplace;
    const nlohmann::json& pattern = j.contains("pattern") ? j["pattern"] : nlohmann::json();
    ASSIGN_OR_RETURN(std::optional<std::string> literal, JsonOptionalString(pattern, "String", path));
    ASSIGN_OR_RETURN(std::optional<std::string> regex, JsonOptionalString(pattern, "Regex", path));
    ASSIGN_OR_RETURN(std::optional<std::string> content, JsonOptionalString(j, "content", path));
    if (!content.has_value()) return Bad(path, "Replace without content");
    ASSIGN_OR_RETURN(step.content, Utf32(*content, path, "Replace content"));
    if (literal.has_value() && !literal->empty()) {
      step.literal = *literal;
    } else if (regex.has_value()) {
      // Oniguruma in tokenizers; RE2 reads the simple patterns these files
      // use (" {2,}") the same way and refuses what it cannot.
      auto re = std::make_shared<const re2::RE2>(*regex, re2::RE2::Quiet);
      if (!re->ok()) return Bad(path, absl::StrCat("Replace pattern /", *regex, "/ is not supported: ", re->error()));
      step.regex = std::move(re);
    } else {
      return Bad(path, "Replace needs a non-empty String or a Regex pattern");
    }
  } else if (t == "Strip") {
    step.kind = Step::Kind::kStrip;
    ASSIGN_OR_RETURN(std::optional<bool> left, JsonOptionalBool(j, "strip_left", path));
    ASSIGN_OR_RETURN(std::optional<bool> right, JsonOptionalBool(j, "strip_right", path));
    step.strip_left = left.value_or(false);
    step.strip_right = right.value_or(false);
  } else if (t == "NFC") {
    step.kind = Step::Kind::kNfc;
  } else if (t == "Prepend") {
    step.kind = Step::Kind::kPrepend;
    ASSIGN_OR_RETURN(std::optional<std::string> prepend, JsonOptionalString(j, "prepend", path));
    ASSIGN_OR_RETURN(step.content, Utf32(prepend.value_or(""), path, "Prepend"));
  } else {
    return Bad(path, absl::StrCat("type \"", t,
                                  "\" is not supported (Precompiled, Replace, Strip, Prepend, NFC, Sequence)"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

std::string SpmNormalizer::NormalizeString(absl::string_view content) const {
  absl::StatusOr<AlignedText> text = AlignText(content, 0);
  if (!text.ok()) return std::string();
  Apply(&*text);
  return ToUtf8(*text);
}

void SpmNormalizer::Apply(AlignedText* text) const {
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kPrecompiled:
        Precompiled(*step.charsmap, text);
        break;
      case Step::Kind::kReplace:
        Replace(step, text);
        break;
      case Step::Kind::kStrip: {
        size_t begin = 0, end = text->size();
        if (step.strip_left) {
          while (begin < end && IsUnicodeWhitespace((*text)[begin].c)) ++begin;
        }
        if (step.strip_right) {
          while (end > begin && IsUnicodeWhitespace((*text)[end - 1].c)) --end;
        }
        *text = AlignedText(text->begin() + static_cast<std::ptrdiff_t>(begin),
                            text->begin() + static_cast<std::ptrdiff_t>(end));
        break;
      }
      case Step::Kind::kPrepend:
        PrependAligned(step.content, text);
        break;
      case Step::Kind::kNfc:
        Nfc(text);
        break;
    }
  }
}

void SpmNormalizer::Precompiled(const PrecompiledCharsmap& charsmap, AlignedText* text) {
  std::u32string cps;
  cps.reserve(text->size());
  for (const AlignedChar& a : *text) cps.push_back(a.c);
  const std::vector<size_t> starts = GraphemeStarts(cps);
  std::vector<CharEdit> edits;
  edits.reserve(cps.size());
  bool modified = false;
  std::string utf8;
  for (size_t g = 0; g + 1 < starts.size(); ++g) {
    const size_t begin = starts[g], end = starts[g + 1];
    utf8.clear();
    for (size_t i = begin; i < end; ++i) AppendUtf8(cps[i], &utf8);
    if (utf8.size() < 6) {
      if (std::optional<absl::string_view> rule = charsmap.Transform(utf8)) {
        if (std::optional<std::u32string> replacement = Chars(*rule)) {
          modified = true;
          PushReplacement(end - begin, *replacement, &edits);
          continue;
        }
      }
    }
    for (size_t i = begin; i < end; ++i) {
      utf8.clear();
      AppendUtf8(cps[i], &utf8);
      std::optional<std::u32string> replacement;
      if (std::optional<absl::string_view> rule = charsmap.Transform(utf8)) replacement = Chars(*rule);
      if (replacement.has_value()) {
        modified = true;
        PushReplacement(1, *replacement, &edits);
      } else {
        edits.push_back({cps[i], 0});
      }
    }
  }
  if (modified) *text = ApplyEdits(*text, edits);
}

// Each character of the NFC form aligned to the originals it came from
// (unicode_util.h NfcEdits, tokenizers' convention).
void SpmNormalizer::Nfc(AlignedText* text) {
  std::u32string chars;
  chars.reserve(text->size());
  for (const AlignedChar& a : *text) chars.push_back(a.c);
  const std::vector<std::pair<char32_t, int>> nfc = NfcEdits(chars);
  if (nfc.empty()) return;
  std::vector<CharEdit> edits;
  edits.reserve(nfc.size());
  for (const auto& [c, change] : nfc) edits.push_back(CharEdit{c, change});
  *text = ApplyEdits(*text, edits);
}

void SpmNormalizer::Replace(const Step& step, AlignedText* text) {
  std::vector<size_t> char_at;
  const std::string utf8 = ToUtf8(*text, &char_at);
  // Non-overlapping matches, left to right, as byte ranges.
  std::vector<std::pair<size_t, size_t>> matches;
  if (step.regex != nullptr) {
    absl::string_view input(utf8);
    absl::string_view match;
    size_t pos = 0;
    while (pos <= utf8.size() &&
           step.regex->Match(input, pos, utf8.size(), re2::RE2::UNANCHORED, &match, 1)) {
      const size_t start = static_cast<size_t>(match.data() - utf8.data());
      if (match.empty()) {  // an empty match replaces nothing; step past a character
        pos = start + 1;
        while (pos < utf8.size() && (static_cast<uint8_t>(utf8[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      matches.emplace_back(start, start + match.size());
      pos = start + match.size();
    }
  } else {
    for (size_t pos = utf8.find(step.literal); pos != std::string::npos;
         pos = utf8.find(step.literal, pos + step.literal.size())) {
      matches.emplace_back(pos, pos + step.literal.size());
    }
  }
  // Right to left, so earlier character indices stay valid.
  for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
    ReplaceRange(char_at[it->first], char_at[it->second], step.content, text);
  }
}

}  // namespace attnserve
