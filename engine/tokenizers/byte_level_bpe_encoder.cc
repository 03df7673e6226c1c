#include "engine/tokenizers/byte_level_bpe_encoder.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/tokenizers/aligned_text.h"
#include "engine/tokenizers/bpe_merge.h"
#include "engine/tokenizers/bpe_model_json.h"
#include "engine/tokenizers/byte_level_bpe.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/streaming_detokenizer.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string TypeOf(const nlohmann::json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : std::string();
}

bool BoolOr(const nlohmann::json& j, const char* name, bool fallback) {
  return j.is_object() && j.contains(name) && j[name].is_boolean() ? j[name].get<bool>() : fallback;
}

// "" or null: the field is unused.
bool Unset(const nlohmann::json& model, const char* name) {
  if (!model.contains(name) || model[name].is_null()) return true;
  return model[name].is_string() && model[name].get<std::string>().empty();
}

size_t CharCount(absl::string_view utf8) {
  return static_cast<size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ByteLevelBpeEncoder>> ByteLevelBpeEncoder::FromJson(const nlohmann::json& j,
                                                                                 const std::string& path) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return Bad(path, "no \"model\" object");
  const nlohmann::json& model = j["model"];
  if (TypeOf(model) != "BPE") return Bad(path, "model.type must be BPE");
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return Bad(path, "model.dropout is not supported (a served tokenizer must be deterministic)");
  }
  if (!Unset(model, "continuing_subword_prefix") || !Unset(model, "end_of_word_suffix")) {
    return Bad(path, "model.continuing_subword_prefix / end_of_word_suffix are not supported by the byte-level BPE");
  }
  if (BoolOr(model, "byte_fallback", false)) {
    return Bad(path, "model.byte_fallback is not supported by the byte-level BPE");
  }
  const nlohmann::json normalizer = j.value("normalizer", nlohmann::json());
  if (!normalizer.is_null()) {
    return Bad(path, absl::StrCat("normalizer \"", TypeOf(normalizer),
                                  "\" is not supported by the byte-level BPE encoder (none expected)"));
  }
  const nlohmann::json pre = j.value("pre_tokenizer", nlohmann::json());
  if (TypeOf(pre) != "ByteLevel") {
    return Bad(path, absl::StrCat("pre_tokenizer \"", TypeOf(pre),
                                  "\" is not supported by the byte-level BPE encoder (ByteLevel)"));
  }
  const nlohmann::json decoder = j.value("decoder", nlohmann::json());
  if (TypeOf(decoder) != "ByteLevel") {
    return Bad(path, absl::StrCat("decoder \"", TypeOf(decoder),
                                  "\" is not supported by the byte-level BPE encoder (ByteLevel)"));
  }

  std::unique_ptr<ByteLevelBpeEncoder> t(new ByteLevelBpeEncoder());
  t->path_ = path;
  // tokenizers' ByteLevel defaults, for files that leave a field out.
  t->add_prefix_space_ = BoolOr(pre, "add_prefix_space", true);
  t->use_regex_ = BoolOr(pre, "use_regex", true);
  t->fuse_unk_ = BoolOr(model, "fuse_unk", false);
  t->ignore_merges_ = BoolOr(model, "ignore_merges", false);

  ASSIGN_OR_RETURN(std::vector<std::string> vocab, ReadBpeVocab(model, path));
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (!vocab[id].empty()) t->piece_to_id_.emplace(vocab[id], static_cast<int32_t>(id));
  }
  ASSIGN_OR_RETURN(auto merges, ReadBpeMerges(model, path));
  for (size_t r = 0; r < merges.size(); ++r) {
    t->merge_rank_.emplace(absl::StrCat(merges[r].first, " ", merges[r].second), static_cast<int32_t>(r));
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = t->piece_to_id_.find(model["unk_token"].get<std::string>());
    if (it == t->piece_to_id_.end()) {
      return Bad(path, absl::StrCat("model.unk_token \"", model["unk_token"].get<std::string>(),
                                    "\" is not in model.vocab"));
    }
    t->unk_id_ = it->second;
  }

  ASSIGN_OR_RETURN(t->added_, AddedVocabulary::FromJson(j.value("added_tokens", nlohmann::json()), path));
  t->SetEntries(static_cast<int64_t>(vocab.size()), vocab);
  const nlohmann::json post = j.value("post_processor", nlohmann::json());
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(post, t->vocab_size(), path));
  if (TypeOf(post) == "RobertaProcessing") {
    t->trim_offsets_ = BoolOr(post, "trim_offsets", true);
    t->trim_keeps_prefix_space_ = BoolOr(post, "add_prefix_space", true);
  }
  return t;
}

absl::Status ByteLevelBpeEncoder::EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const {
  if (!added_.has_normalized()) return EncodeStretch(segment, base, out);
  // No normalizer: the normalized: true tokens are matched in the stretch as
  // it is, then each part between them is pre-tokenized on its own (with its
  // own prefix space), as tokenizers' second split does.
  ASSIGN_OR_RETURN(AlignedText text, AlignText(segment, base));
  return added_.SplitNormalized(
      text,
      [&](AlignedText part) {
        const uint32_t begin = part.front().begin;
        return EncodeStretch(segment.substr(begin - base, part.back().end - begin), begin, out);
      },
      [&](int32_t id, uint32_t begin, uint32_t end) {
        AppendAddedToken(segment.substr(begin - base, end - begin), id, begin, end, out);
      });
}

absl::Status ByteLevelBpeEncoder::EncodeStretch(absl::string_view segment, uint32_t base, TextEncoding* out) const {
  if (segment.empty()) return absl::OkStatus();
  // ByteLevel's add_prefix_space: a space before a stretch that lacks one,
  // spanning nothing of the text (an empty span at its start).
  const bool prefixed = add_prefix_space_ && segment.front() != ' ';
  const std::string work = prefixed ? absl::StrCat(" ", segment) : std::string();
  const absl::string_view text = prefixed ? absl::string_view(work) : segment;
  // The span (in the segment) of the character byte k of `text` is part of.
  auto char_span = [&](size_t k) -> std::pair<uint32_t, uint32_t> {
    if (prefixed && k == 0) return {0, 0};
    size_t s = prefixed ? k - 1 : k;
    while (s > 0 && (static_cast<unsigned char>(segment[s]) & 0xC0) == 0x80) --s;
    return {static_cast<uint32_t>(s), static_cast<uint32_t>(s + static_cast<size_t>(Utf8CharLen(segment, s)))};
  };
  auto rank = [&](absl::string_view a, absl::string_view b) -> std::optional<double> {
    auto it = merge_rank_.find(absl::StrCat(a, " ", b));
    if (it == merge_rank_.end()) return std::nullopt;
    return it->second;
  };

  const std::vector<absl::string_view> pieces =
      use_regex_ ? Pretokenize(text, PretokenizerKind::kGpt2) : std::vector<absl::string_view>{text};
  for (absl::string_view piece : pieces) {
    std::vector<std::string> symbols;
    symbols.reserve(piece.size());
    for (unsigned char b : piece) symbols.push_back(ByteToUnicode(b));
    std::string whole;
    if (ignore_merges_) {
      for (const std::string& s : symbols) whole += s;
    }
    std::vector<std::string> tokens =
        ignore_merges_ && piece_to_id_.count(whole) != 0 ? std::vector<std::string>{whole}
                                                          : BpeMerge(std::move(symbols), rank);
    size_t pos = static_cast<size_t>(piece.data() - text.data());
    bool previous_unknown = false;
    for (const std::string& token : tokens) {
      const size_t bytes = CharCount(token);  // one stand-in character per byte of the text
      uint32_t begin = char_span(pos).first;
      uint32_t end = char_span(pos + bytes - 1).second;
      begin += base;
      end += base;
      if (trim_offsets_) {
        // Of the stand-ins only Ġ (the space byte) is whitespace.
        size_t leading = 0;
        while (leading < bytes && text[pos + leading] == ' ') ++leading;
        size_t trailing = 0;
        while (trailing < bytes && text[pos + bytes - 1 - trailing] == ' ') ++trailing;
        TrimOffsets(leading, trailing, *out, &begin, &end);
      }
      pos += bytes;
      auto it = piece_to_id_.find(token);
      if (it == piece_to_id_.end() && unk_id_ < 0) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": byte-level symbol '", token,
                                                       "' is not in the vocabulary and there is no unk_token"));
      }
      const bool unknown = it == piece_to_id_.end();
      if (unknown && previous_unknown && fuse_unk_) {
        out->offsets.back().second = end;
        continue;
      }
      previous_unknown = unknown;
      out->ids.push_back(unknown ? unk_id_ : it->second);
      out->offsets.emplace_back(begin, end);
    }
  }
  return absl::OkStatus();
}

void ByteLevelBpeEncoder::TrimOffsets(size_t leading, size_t trailing, const TextEncoding& so_far, uint32_t* begin,
                                      uint32_t* end) const {
  // tokenizers' process_offsets.
  const bool first = so_far.ids.empty() || *begin == 0;
  if (leading > 0 && !(first && trim_keeps_prefix_space_ && leading == 1)) {
    *begin = std::min(*begin + static_cast<uint32_t>(leading), *end);
  }
  if (trailing > 0 && *end >= trailing) *end = std::max(*end - static_cast<uint32_t>(trailing), *begin);
}

void ByteLevelBpeEncoder::AppendAddedToken(absl::string_view matched, int32_t id, uint32_t begin, uint32_t end,
                                           TextEncoding* out) const {
  if (trim_offsets_) {
    // The token's text is what it matched; its whitespace characters (and a
    // literal Ġ) at either end leave the span. Counted in bytes, where
    // tokenizers adds their count of characters to the byte offsets and so
    // ends a span inside a multi-byte space (U+3000 before a lstrip token).
    std::vector<char32_t> chars;
    std::vector<uint32_t> starts;
    if (DecodeUtf8(matched, &chars, &starts).ok()) {
      auto blank = [&](size_t i) { return chars[i] == U'\u0120' || IsUnicodeWhitespace(chars[i]); };
      size_t first = 0;
      while (first < chars.size() && blank(first)) ++first;
      size_t last = chars.size();
      while (last > first && blank(last - 1)) --last;
      const size_t leading = first < chars.size() ? starts[first] : matched.size();
      const size_t trailing = last < chars.size() ? matched.size() - starts[last] : 0;
      TrimOffsets(leading, trailing, *out, &begin, &end);
    }
  }
  out->ids.push_back(id);
  out->offsets.emplace_back(begin, end);
}

absl::StatusOr<std::string> ByteLevelBpeEncoder::Decode(absl::Span<const int32_t> ids,
                                                        bool skip_special_tokens) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Entries(ids, skip_special_tokens));
  // ByteLevel's decoder: a token whose every character stands for a byte
  // becomes those bytes, any other (an added token in plain text) stays as
  // written; the bytes are then read as UTF-8, broken sequences as U+FFFD.
  std::string bytes;
  for (const std::string& token : tokens) {
    std::string token_bytes;
    bool all = true;
    for (const std::string& ch : SplitUtf8Chars(token)) {
      const std::optional<uint8_t> b = UnicodeToByte(ch);
      if (!b.has_value()) {
        all = false;
        break;
      }
      token_bytes += static_cast<char>(*b);
    }
    bytes += all ? token_bytes : token;
  }
  return TakeCompleteUtf8(bytes, /*final=*/true);
}

}  // namespace attnserve
