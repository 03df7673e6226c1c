#include "engine/tokenizers/metaspace.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

absl::Status Bad(const std::string& path, absl::string_view component, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", component, ": ", what));
}

struct MetaspaceSettings {
  std::string replacement = "\u2581";
  PrependScheme prepend = PrependScheme::kAlways;
  bool split = true;
};

// Metaspace's fields; files from older tokenizers say add_prefix_space
// instead of prepend_scheme.
absl::StatusOr<MetaspaceSettings> ReadMetaspace(const nlohmann::json& j, const std::string& path,
                                                absl::string_view component) {
  MetaspaceSettings s;
  ASSIGN_OR_RETURN(std::optional<std::string> replacement, JsonOptionalString(j, "replacement", path));
  ASSIGN_OR_RETURN(std::optional<bool> split, JsonOptionalBool(j, "split", path));
  if (replacement.has_value()) s.replacement = *replacement;
  absl::StatusOr<AlignedText> chars = AlignText(s.replacement, 0);
  if (!chars.ok() || chars->size() != 1) return Bad(path, component, "Metaspace replacement must be one character");
  ASSIGN_OR_RETURN(s.prepend, ReadPrependScheme(j, path));
  s.split = split.value_or(true);
  return s;
}

}  // namespace

absl::StatusOr<PrependScheme> ReadPrependScheme(const nlohmann::json& metaspace, const std::string& path) {
  if (metaspace.contains("prepend_scheme") && metaspace["prepend_scheme"].is_string()) {
    const std::string scheme = metaspace["prepend_scheme"].get<std::string>();
    if (scheme == "always") return PrependScheme::kAlways;
    if (scheme == "first") return PrependScheme::kFirst;
    if (scheme == "never") return PrependScheme::kNever;
    return absl::InvalidArgumentError(absl::StrCat(path, ": Metaspace prepend_scheme '", scheme, "' is unknown"));
  }
  return metaspace.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

absl::StatusOr<MetaspacePreTokenizer> MetaspacePreTokenizer::FromJson(const nlohmann::json& j,
                                                                      const std::string& path) {
  MetaspacePreTokenizer p;
  if (j.is_null()) return p;  // none (the Llama-2 layout's normalizer does its work)
  std::vector<const nlohmann::json*> items;
  ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(j, "type", path));
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return Bad(path, "pre_tokenizer", "Sequence without pretokenizers");
    }
    for (const nlohmann::json& inner : j["pretokenizers"]) items.push_back(&inner);
  } else {
    items.push_back(&j);
  }
  for (const nlohmann::json* item : items) {
    ASSIGN_OR_RETURN(std::optional<std::string> t, JsonOptionalString(*item, "type", path));
    Step step;
    if (t == "WhitespaceSplit") {
      step.whitespace_split = true;
    } else if (t == "Metaspace") {
      ASSIGN_OR_RETURN(MetaspaceSettings s, ReadMetaspace(*item, path, "pre_tokenizer"));
      step.replacement = AlignText(s.replacement, 0)->front().c;
      step.prepend = s.prepend;
      step.split = s.split;
    } else {
      return Bad(path, "pre_tokenizer",
                 absl::StrCat("type \"", t.value_or(""), "\" is not supported (Metaspace, WhitespaceSplit, Sequence)"));
    }
    p.steps_.push_back(step);
  }
  return p;
}

std::vector<AlignedText> MetaspacePreTokenizer::Split(AlignedText text) const {
  std::vector<AlignedText> pieces;
  if (!text.empty()) pieces.push_back(std::move(text));
  for (const Step& step : steps_) {
    std::vector<AlignedText> next;
    for (AlignedText& piece : pieces) {
      if (step.whitespace_split) {
        AlignedText word;
        for (const AlignedChar& a : piece) {
          if (IsUnicodeWhitespace(a.c)) {
            if (!word.empty()) next.push_back(std::move(word));
            word.clear();
          } else {
            word.push_back(a);
          }
        }
        if (!word.empty()) next.push_back(std::move(word));
        continue;
      }
      for (AlignedChar& a : piece) {
        if (a.c == U' ') a.c = step.replacement;
      }
      const bool prepend = !piece.empty() && piece.front().c != step.replacement &&
                           (step.prepend == PrependScheme::kAlways ||
                            (step.prepend == PrependScheme::kFirst && piece.front().begin == 0));
      if (prepend) PrependAligned(std::u32string(1, step.replacement), &piece);
      if (!step.split) {
        if (!piece.empty()) next.push_back(std::move(piece));
        continue;
      }
      // Split before each replacement character (merged with what follows).
      AlignedText word;
      for (const AlignedChar& a : piece) {
        if (a.c == step.replacement && !word.empty()) {
          next.push_back(std::move(word));
          word.clear();
        }
        word.push_back(a);
      }
      if (!word.empty()) next.push_back(std::move(word));
    }
    pieces = std::move(next);
  }
  return pieces;
}

absl::StatusOr<MetaspaceDecoder> MetaspaceDecoder::FromJson(const nlohmann::json& j, const std::string& path) {
  MetaspaceDecoder d;
  if (j.is_null()) return d;
  ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(j, "type", path));
  if (type != "Metaspace") {
    return Bad(path, "decoder", absl::StrCat("type \"", type.value_or(""), "\" is not supported (Metaspace)"));
  }
  ASSIGN_OR_RETURN(MetaspaceSettings s, ReadMetaspace(j, path, "decoder"));
  d.enabled_ = true;
  d.replacement_ = s.replacement;
  d.strip_first_ = s.prepend != PrependScheme::kNever;
  return d;
}

std::string MetaspaceDecoder::Decode(const std::vector<std::string>& tokens) const {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!enabled_) {
      out += tokens[i];
      continue;
    }
    std::string token = tokens[i];
    for (size_t pos = token.find(replacement_); pos != std::string::npos; pos = token.find(replacement_, pos + 1)) {
      token.replace(pos, replacement_.size(), " ");
    }
    if (i == 0 && strip_first_ && !token.empty() && token[0] == ' ') token.erase(0, 1);
    out += token;
  }
  return out;
}

bool MetaspacePreTokenizer::IsSplitOnSpace(const nlohmann::json& pre) {
  return pre.is_object() && pre.value("type", "") == "Split" && pre.contains("pattern") && pre["pattern"].is_object() &&
         pre["pattern"].value("String", "") == " " && !pre.value("invert", false);
}

}  // namespace attnserve
