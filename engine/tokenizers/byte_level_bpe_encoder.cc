#include "engine/tokenizers/byte_level_bpe_encoder.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
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

// The pre_tokenizer: ByteLevel alone (its own GPT-2 regex split unless
// use_regex is false), or Qwen2's and Llama-3's Sequence of an Isolated
// Split by one of pretokenizer.h's regexes and a ByteLevel without its own.
struct PreTokenizerSteps {
  std::optional<PretokenizerKind> split;  // nullopt: no split at all
  nlohmann::json byte_level;
};

absl::StatusOr<PreTokenizerSteps> ReadPreTokenizer(const nlohmann::json& pre, const std::string& path) {
  PreTokenizerSteps steps;
  if (TypeOf(pre) == "ByteLevel") {
    steps.byte_level = pre;
    if (BoolOr(pre, "use_regex", true)) steps.split = PretokenizerKind::kGpt2;
    return steps;
  }
  const bool sequence = TypeOf(pre) == "Sequence" && pre.contains("pretokenizers") &&
                        pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2;
  if (!sequence || TypeOf(pre["pretokenizers"][0]) != "Split" || TypeOf(pre["pretokenizers"][1]) != "ByteLevel") {
    return Bad(path, absl::StrCat("pre_tokenizer \"", TypeOf(pre),
                                  "\" is not supported by the byte-level BPE encoder (ByteLevel, or a Sequence of "
                                  "a regex Split and a ByteLevel)"));
  }
  const nlohmann::json& split = pre["pretokenizers"][0];
  const nlohmann::json pattern = split.value("pattern", nlohmann::json());
  const std::string regex = pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()
                                ? pattern["Regex"].get<std::string>()
                                : std::string();
  steps.split = PretokenizerFromRegex(regex);
  if (!steps.split.has_value()) {
    return Bad(path, absl::StrCat("pre_tokenizer Split regex is not one of the supported (GPT-2, Llama-3, Qwen2): ",
                                  regex));
  }
  if (split.value("behavior", "") != "Isolated" || BoolOr(split, "invert", false)) {
    return Bad(path, "pre_tokenizer Split must be Isolated and not inverted");
  }
  steps.byte_level = pre["pretokenizers"][1];
  if (BoolOr(steps.byte_level, "use_regex", true)) {
    return Bad(path, "pre_tokenizer: a ByteLevel after a Split must have use_regex false");
  }
  return steps;
}

// The post_processor: the special tokens' template (RobertaProcessing,
// BertProcessing, TemplateProcessing) and the ByteLevel step whose
// trim_offsets decides the offsets (RobertaProcessing's own, or a ByteLevel
// alone or in a Sequence before a TemplateProcessing, as Llama-3's files
// have it). A ByteLevel alone adds no special token: the template is then
// $A alone and $A $B with B in segment 1, as tokenizers merges a pair.
struct PostProcessorSteps {
  nlohmann::json special_tokens;
  nlohmann::json offsets;  // null: no trimming
};

PostProcessorSteps ReadPostProcessor(const nlohmann::json& post) {
  PostProcessorSteps steps;
  const std::string type = TypeOf(post);
  if (type == "ByteLevel" || post.is_null()) {
    steps.offsets = post;
    auto sequence = [](const char* id, int type_id) {
      nlohmann::json body = nlohmann::json::object();
      body["id"] = id;
      body["type_id"] = type_id;
      nlohmann::json item = nlohmann::json::object();
      item["Sequence"] = body;
      return item;
    };
    steps.special_tokens = nlohmann::json::object();
    steps.special_tokens["type"] = "TemplateProcessing";
    steps.special_tokens["single"] = nlohmann::json::array({sequence("A", 0)});
    steps.special_tokens["pair"] = nlohmann::json::array({sequence("A", 0), sequence("B", 1)});
    return steps;
  }
  if (type == "Sequence" && post.contains("processors") && post["processors"].is_array() &&
      post["processors"].size() == 2 && TypeOf(post["processors"][0]) == "ByteLevel") {
    steps.offsets = post["processors"][0];
    steps.special_tokens = post["processors"][1];
    return steps;
  }
  steps.special_tokens = post;
  if (type == "RobertaProcessing") steps.offsets = post;
  return steps;
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
  // Qwen2's files NFC-normalize; nothing else is read.
  const nlohmann::json normalizer = j.value("normalizer", nlohmann::json());
  if (!normalizer.is_null() && TypeOf(normalizer) != "NFC") {
    return Bad(path, absl::StrCat("normalizer \"", TypeOf(normalizer),
                                  "\" is not supported by the byte-level BPE encoder (none or NFC)"));
  }
  ASSIGN_OR_RETURN(PreTokenizerSteps pre_steps, ReadPreTokenizer(j.value("pre_tokenizer", nlohmann::json()), path));
  const nlohmann::json decoder = j.value("decoder", nlohmann::json());
  if (TypeOf(decoder) != "ByteLevel") {
    return Bad(path, absl::StrCat("decoder \"", TypeOf(decoder),
                                  "\" is not supported by the byte-level BPE encoder (ByteLevel)"));
  }

  std::unique_ptr<ByteLevelBpeEncoder> t(new ByteLevelBpeEncoder());
  t->path_ = path;
  // tokenizers' ByteLevel defaults, for files that leave a field out.
  t->nfc_ = !normalizer.is_null();
  t->add_prefix_space_ = BoolOr(pre_steps.byte_level, "add_prefix_space", true);
  t->split_ = pre_steps.split;
  t->fuse_unk_ = BoolOr(model, "fuse_unk", false);
  t->ignore_merges_ = BoolOr(model, "ignore_merges", false);

  ASSIGN_OR_RETURN(std::vector<std::string> vocab, ReadBpeVocab(model, path));
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (!vocab[id].empty()) t->piece_to_id_.emplace(vocab[id], static_cast<int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = t->piece_to_id_.find(ByteToUnicode(static_cast<uint8_t>(b)));
    t->byte_id_[static_cast<size_t>(b)] = it == t->piece_to_id_.end() ? -1 : it->second;
  }
  ASSIGN_OR_RETURN(auto merges, ReadBpeMerges(model, path));
  t->merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [left, right] = merges[r];
    auto a = t->piece_to_id_.find(left);
    auto b = t->piece_to_id_.find(right);
    auto merged = t->piece_to_id_.find(left + right);
    // tokenizers refuses such a file too (MergeTokenOutOfVocabulary).
    if (a == t->piece_to_id_.end() || b == t->piece_to_id_.end() || merged == t->piece_to_id_.end()) {
      return Bad(path, absl::StrCat("model.merges[", r, "] \"", left, " ", right,
                                    "\" names a token that is not in model.vocab"));
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(a->second)) << 32) |
                         static_cast<uint32_t>(b->second);
    // A pair listed twice keeps its last rank, as tokenizers' map of merges does.
    t->merges_.insert_or_assign(key, std::make_pair(static_cast<int32_t>(r), merged->second));
  }
  ASSIGN_OR_RETURN(t->unk_id_, ReadBpeUnkId(model, t->piece_to_id_, path));

  ASSIGN_OR_RETURN(t->added_, AddedVocabulary::FromJson(j.value("added_tokens", nlohmann::json()), path));
  t->SetEntries(static_cast<int64_t>(vocab.size()), vocab);
  const PostProcessorSteps post = ReadPostProcessor(j.value("post_processor", nlohmann::json()));
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(post.special_tokens, t->vocab_size(), path));
  if (!post.offsets.is_null()) {
    t->trim_offsets_ = BoolOr(post.offsets, "trim_offsets", true);
    t->trim_keeps_prefix_space_ = BoolOr(post.offsets, "add_prefix_space", true);
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
  // NFC, when the file asks for it and it changes something: the text the
  // pre-tokenizer sees is the normalized one, each character aligned to the
  // original it came from.
  AlignedText aligned;
  std::string normalized;
  std::vector<size_t> char_at_byte;
  if (nfc_) {
    ASSIGN_OR_RETURN(aligned, AlignText(segment, 0));
    std::u32string chars;
    chars.reserve(aligned.size());
    for (const AlignedChar& a : aligned) chars.push_back(a.c);
    const std::vector<std::pair<char32_t, int>> nfc = NfcEdits(chars);
    if (nfc.empty()) {
      aligned.clear();
    } else {
      std::vector<CharEdit> edits;
      edits.reserve(nfc.size());
      for (const auto& [c, change] : nfc) edits.push_back(CharEdit{c, change});
      aligned = ApplyEdits(aligned, edits);
    }
  }
  const bool mapped = !aligned.empty();
  const absl::string_view source = mapped ? absl::string_view(normalized = ToUtf8(aligned, &char_at_byte)) : segment;
  // ByteLevel's add_prefix_space: a space before a stretch that lacks one,
  // spanning nothing of the text (an empty span at its start).
  const bool prefixed = add_prefix_space_ && source.front() != ' ';
  const std::string work = prefixed ? absl::StrCat(" ", source) : std::string();
  const absl::string_view text = prefixed ? absl::string_view(work) : source;
  // The span (in the segment) of the character byte k of `text` is part of.
  auto char_span = [&](size_t k) -> std::pair<uint32_t, uint32_t> {
    if (prefixed && k == 0) return {0, 0};
    size_t s = prefixed ? k - 1 : k;
    while (s > 0 && (static_cast<unsigned char>(source[s]) & 0xC0) == 0x80) --s;
    if (mapped) {
      const AlignedChar& a = aligned[char_at_byte[s]];
      return {a.begin, a.end};
    }
    return {static_cast<uint32_t>(s), static_cast<uint32_t>(s + static_cast<size_t>(Utf8CharLen(segment, s)))};
  };
  const std::vector<absl::string_view> pieces =
      split_.has_value() ? Pretokenize(text, *split_) : std::vector<absl::string_view>{text};
  std::vector<std::pair<int32_t, uint32_t>> tokens;  // (id or -1, bytes)
  for (absl::string_view piece : pieces) {
    tokens.clear();
    if (ignore_merges_) {
      std::string whole;
      for (unsigned char b : piece) whole += ByteToUnicode(b);
      auto it = piece_to_id_.find(whole);
      if (it != piece_to_id_.end()) tokens.emplace_back(it->second, static_cast<uint32_t>(piece.size()));
    }
    if (tokens.empty()) MergePiece(piece, &tokens);
    size_t pos = static_cast<size_t>(piece.data() - text.data());
    bool previous_unknown = false;
    for (const auto& [id, bytes] : tokens) {
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
      const bool unknown = id < 0;
      if (unknown && unk_id_ < 0) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": byte-level symbol '",
                                                       ByteToUnicode(static_cast<uint8_t>(text[pos])),
                                                       "' is not in the vocabulary and there is no unk_token"));
      }
      pos += bytes;
      if (unknown && previous_unknown && fuse_unk_) {
        out->offsets.back().second = end;
        continue;
      }
      previous_unknown = unknown;
      out->ids.push_back(unknown ? unk_id_ : id);
      out->offsets.emplace_back(begin, end);
    }
  }
  return absl::OkStatus();
}

void ByteLevelBpeEncoder::MergePiece(absl::string_view piece,
                                     std::vector<std::pair<int32_t, uint32_t>>* tokens) const {
  const int n = static_cast<int>(piece.size());
  std::vector<int32_t> id(n);
  std::vector<uint32_t> bytes(n, 1);
  std::vector<int> prev(n), next(n), version(n, 0);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_id_[static_cast<uint8_t>(piece[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // The merge of the pair starting at l, if any: (rank, merged id).
  auto merge_of = [&](int l) -> const std::pair<int32_t, int32_t>* {
    const int r = next[l];
    if (r < 0 || id[l] < 0 || id[r] < 0) return nullptr;
    auto it = merges_.find((static_cast<uint64_t>(static_cast<uint32_t>(id[l])) << 32) | static_cast<uint32_t>(id[r]));
    return it == merges_.end() ? nullptr : &it->second;
  };
  // (rank, left position, left version, right version): a min-heap, so the
  // lowest rank and then the leftmost pair merges first; an entry whose
  // symbols have changed since it was pushed is skipped.
  using Entry = std::tuple<int32_t, int, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int l) {
    if (l < 0) return;
    if (const auto* m = merge_of(l)) heap.emplace(m->first, l, version[l], version[next[l]]);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const auto [rank, l, vl, vr] = heap.top();
    heap.pop();
    const int r = next[l];
    if (!alive[l] || r < 0 || version[l] != vl || version[r] != vr) continue;  // stale
    id[l] = merge_of(l)->second;
    bytes[l] += bytes[r];
    alive[r] = false;
    ++version[l];
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    push(prev[l]);
    push(l);
  }
  for (int i = 0; i >= 0 && i < n; i = next[i]) tokens->emplace_back(id[i], bytes[i]);
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
