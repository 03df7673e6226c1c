#include "engine/tokenizers/wordpiece.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

absl::Status Unsupported(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Rust's char::is_ascii_punctuation: !"#$%&'()*+,-./ :;<=>?@ [\]^_` {|}~
bool IsAsciiPunctuation(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

bool IsBertPunctuation(char32_t c) { return IsAsciiPunctuation(c) || IsPunctuationCategory(c); }

}  // namespace

absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  return FromJson(j, path);
}

absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::FromJson(const nlohmann::json& j,
                                                                                 const std::string& path) {
  if (!j.is_object()) return Unsupported(path, "not a JSON object");
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  const nlohmann::json& model = j.contains("model") ? j["model"] : nlohmann::json();
  ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(model, "type", path));
  if (type.value_or("") != "WordPiece") {
    return Unsupported(path, absl::StrCat("model.type is \"", type.value_or(""), "\"; only WordPiece is supported"));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> prefix, JsonOptionalString(model, "continuing_subword_prefix", path));
  if (prefix.has_value()) t->continuing_prefix_ = *prefix;
  ASSIGN_OR_RETURN(std::optional<int64_t> max_chars, JsonOptionalInt(model, "max_input_chars_per_word", path));
  if (max_chars.has_value()) t->max_input_chars_per_word_ = static_cast<int>(std::clamp<int64_t>(*max_chars, 1, 1 << 20));

  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object() || vocab->empty()) {
    return Unsupported(path, "model.vocab must be a non-empty object");
  }
  int64_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > (1 << 24)) {
      return Unsupported(path, absl::StrCat("model.vocab[\"", it.key(), "\"] is not a valid id"));
    }
    int32_t id = it.value().get<int32_t>();
    t->vocab_[it.key()] = id;
    max_id = std::max<int64_t>(max_id, id);
  }
  ASSIGN_OR_RETURN(t->added_, AddedVocabulary::FromJson(j.contains("added_tokens") ? j["added_tokens"] : nlohmann::json(),
                                                        path));
  max_id = std::max(max_id, t->added_.max_id());
  std::vector<std::string> entries(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : t->vocab_) entries[id] = token;
  t->SetEntries(max_id + 1, entries);

  ASSIGN_OR_RETURN(std::optional<std::string> unk, JsonOptionalString(model, "unk_token", path));
  auto unk_it = t->vocab_.find(unk.value_or("[UNK]"));
  if (unk_it == t->vocab_.end()) return Unsupported(path, "model.unk_token is not in the vocabulary");
  t->unk_id_ = unk_it->second;

  const nlohmann::json& norm = j.contains("normalizer") ? j["normalizer"] : nlohmann::json();
  if (norm.is_null()) {
    t->has_normalizer_ = false;
  } else {
    ASSIGN_OR_RETURN(std::optional<std::string> ntype, JsonOptionalString(norm, "type", path));
    if (ntype.value_or("") != "BertNormalizer") {
      return Unsupported(path, absl::StrCat("normalizer.type \"", ntype.value_or(""), "\" is not supported (BertNormalizer only)"));
    }
    ASSIGN_OR_RETURN(std::optional<bool> clean, JsonOptionalBool(norm, "clean_text", path));
    ASSIGN_OR_RETURN(std::optional<bool> chinese, JsonOptionalBool(norm, "handle_chinese_chars", path));
    ASSIGN_OR_RETURN(std::optional<bool> strip, JsonOptionalBool(norm, "strip_accents", path));
    ASSIGN_OR_RETURN(std::optional<bool> lower, JsonOptionalBool(norm, "lowercase", path));
    t->normalizer_.clean_text = clean.value_or(true);
    t->normalizer_.handle_chinese_chars = chinese.value_or(true);
    t->normalizer_.strip_accents = strip;
    t->normalizer_.lowercase = lower.value_or(true);
  }
  const nlohmann::json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
  ASSIGN_OR_RETURN(std::optional<std::string> ptype, JsonOptionalString(pre, "type", path));
  if (ptype.value_or("") != "BertPreTokenizer") {
    return Unsupported(path, absl::StrCat("pre_tokenizer.type \"", ptype.value_or(""), "\" is not supported (BertPreTokenizer only)"));
  }
  const nlohmann::json& pp = j.contains("post_processor") ? j["post_processor"] : nlohmann::json();
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(pp, max_id + 1, path));
  auto pad_it = t->vocab_.find("[PAD]");
  t->pad_id_ = pad_it == t->vocab_.end() ? 0 : pad_it->second;
  const nlohmann::json& dec = j.contains("decoder") ? j["decoder"] : nlohmann::json();
  ASSIGN_OR_RETURN(std::optional<bool> cleanup, JsonOptionalBool(dec, "cleanup", path));
  t->decoder_cleanup_ = cleanup.value_or(true);
  if (t->has_normalizer_) {
    const BertNormalizerOptions& options = t->normalizer_;
    t->added_.NormalizePatterns([&](absl::string_view content) {
      std::vector<char32_t> cps;
      std::vector<uint32_t> offsets;
      if (!DecodeUtf8(content, &cps, &offsets).ok()) return std::string();
      std::vector<NormalizedChar> chars;
      BertNormalize(options, cps, offsets, &chars);
      return ToUtf8(chars);
    });
  }
  return t;
}

absl::Status WordPieceTokenizer::EncodeSegment(absl::string_view segment, uint32_t base,
                                               TextEncoding* out) const {
  if (segment.empty()) return absl::OkStatus();
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  RETURN_IF_ERROR(DecodeUtf8(segment, &cps, &offsets));
  for (uint32_t& o : offsets) o += base;
  std::vector<NormalizedChar> chars;
  chars.reserve(cps.size());
  if (has_normalizer_) {
    BertNormalize(normalizer_, cps, offsets, &chars);
  } else {
    for (size_t i = 0; i < cps.size(); ++i) chars.push_back({cps[i], offsets[i], offsets[i + 1]});
  }
  if (!added_.has_normalized()) {
    EncodeWords(chars, out);
    return absl::OkStatus();
  }
  return added_.SplitNormalized(
      chars,
      [&](AlignedText part) {
        EncodeWords(part, out);
        return absl::OkStatus();
      },
      [&](int32_t id, uint32_t begin, uint32_t end) {
        out->ids.push_back(id);
        out->offsets.emplace_back(begin, end);
      });
}

void WordPieceTokenizer::EncodeWords(const std::vector<NormalizedChar>& chars, TextEncoding* out) const {
  // BertPreTokenizer: whitespace separates words and is dropped; each
  // punctuation character is a word of its own.
  size_t word_start = 0;
  for (size_t i = 0; i <= chars.size(); ++i) {
    const bool at_end = i == chars.size();
    const bool space = !at_end && IsUnicodeWhitespace(chars[i].c);
    const bool punct = !at_end && !space && IsBertPunctuation(chars[i].c);
    if (at_end || space || punct) {
      if (i > word_start) EncodeWord(chars, word_start, i, out);
      if (punct) EncodeWord(chars, i, i + 1, out);
      word_start = i + 1;
    }
  }
}

void WordPieceTokenizer::EncodeWord(const std::vector<NormalizedChar>& chars, size_t begin, size_t end,
                                    TextEncoding* out) const {
  const size_t n = end - begin;
  if (n > static_cast<size_t>(max_input_chars_per_word_)) {
    out->ids.push_back(unk_id_);
    out->offsets.emplace_back(chars[begin].begin, chars[end - 1].end);
    return;
  }
  // UTF-8 of the word and the byte position of each character in it.
  std::string word;
  std::vector<size_t> char_pos;
  char_pos.reserve(n + 1);
  for (size_t i = begin; i < end; ++i) {
    char_pos.push_back(word.size());
    AppendUtf8(chars[i].c, &word);
  }
  char_pos.push_back(word.size());
  const size_t ids_before = out->ids.size();
  std::string candidate;
  size_t start = 0;
  while (start < n) {
    size_t stop = n;
    int32_t found = -1;
    while (stop > start) {
      candidate.clear();
      if (start > 0) candidate = continuing_prefix_;
      candidate.append(word, char_pos[start], char_pos[stop] - char_pos[start]);
      auto it = vocab_.find(candidate);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
      --stop;
    }
    if (found < 0) {
      // One unsplittable piece makes the whole word unknown.
      out->ids.resize(ids_before);
      out->offsets.resize(ids_before);
      out->ids.push_back(unk_id_);
      out->offsets.emplace_back(chars[begin].begin, chars[end - 1].end);
      return;
    }
    out->ids.push_back(found);
    out->offsets.emplace_back(chars[begin + start].begin, chars[begin + stop - 1].end);
    start = stop;
  }
}

absl::StatusOr<std::string> WordPieceTokenizer::Decode(absl::Span<const int32_t> ids,
                                                       bool skip_special_tokens) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Entries(ids, skip_special_tokens));
  std::string text;
  bool first = true;
  for (std::string& token : tokens) {
    if (!first) {
      if (token.starts_with(continuing_prefix_)) {
        token.erase(0, continuing_prefix_.size());
      } else {
        token.insert(0, " ");
      }
    }
    first = false;
    if (decoder_cleanup_) {
      token = absl::StrReplaceAll(token, {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                          {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
                                          {" 've", "'ve"}, {" 're", "'re"}});
    }
    text += token;
  }
  return text;
}

}  // namespace attnserve
