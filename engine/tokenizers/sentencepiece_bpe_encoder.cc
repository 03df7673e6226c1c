#include "engine/tokenizers/sentencepiece_bpe_encoder.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/tokenizers/bpe_merge.h"
#include "engine/tokenizers/bpe_model_json.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

constexpr char kMetaspace[] = "\xE2\x96\x81";  // "▁"

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string TypeOf(const nlohmann::json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : std::string();
}

const nlohmann::json& Member(const nlohmann::json& j, const char* name) {
  static const nlohmann::json kNull;
  return j.is_object() && j.contains(name) ? j[name] : kNull;
}

bool IsSpaceToMetaspace(const nlohmann::json& n) {
  return TypeOf(n) == "Replace" && n.contains("pattern") && n["pattern"].is_object() &&
         n["pattern"].value("String", "") == " " && n.value("content", "") == kMetaspace;
}

// The decoder: Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)]
// (Strip optional), or Metaspace. Returns whether one leading space goes.
absl::StatusOr<bool> ReadDecoder(const nlohmann::json& dec, const std::string& path) {
  if (TypeOf(dec) == "Metaspace") {
    ASSIGN_OR_RETURN(PrependScheme scheme, ReadPrependScheme(dec, path));
    return scheme != PrependScheme::kNever;
  }
  if (TypeOf(dec) != "Sequence" || !dec.contains("decoders") || !dec["decoders"].is_array()) {
    return Bad(path, absl::StrCat("decoder \"", TypeOf(dec),
                                  "\" is not supported by the SentencePiece BPE encoder (a Replace / ByteFallback / "
                                  "Fuse / Strip Sequence, or Metaspace)"));
  }
  bool strip = false;
  for (const nlohmann::json& d : dec["decoders"]) {
    const std::string type = TypeOf(d);
    if (type == "Replace" && d.contains("pattern") && d["pattern"].is_object() &&
        d["pattern"].value("String", "") == kMetaspace && d.value("content", "") == " ") {
      continue;
    }
    if (type == "ByteFallback" || type == "Fuse") continue;
    if (type == "Strip" && d.value("content", "") == " " && d.value("start", 0) == 1 && d.value("stop", 0) == 0) {
      strip = true;
      continue;
    }
    return Bad(path, absl::StrCat("decoder step \"", type, "\" is not supported by the SentencePiece BPE encoder"));
  }
  return strip;
}

}  // namespace

bool SentencePieceBpeEncoder::Matches(const nlohmann::json& j) {
  const nlohmann::json& model = Member(j, "model");
  if (model.is_object() && model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
      model["byte_fallback"].get<bool>()) {
    return true;
  }
  if (TypeOf(Member(j, "pre_tokenizer")) == "Metaspace") return true;
  const nlohmann::json& norm = Member(j, "normalizer");
  if (IsSpaceToMetaspace(norm) || TypeOf(norm) == "Prepend") return true;
  if (TypeOf(norm) == "Sequence" && norm.contains("normalizers") && norm["normalizers"].is_array()) {
    for (const nlohmann::json& n : norm["normalizers"]) {
      if (IsSpaceToMetaspace(n) || TypeOf(n) == "Prepend") return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<SentencePieceBpeEncoder>> SentencePieceBpeEncoder::FromJson(const nlohmann::json& j,
                                                                                         const std::string& path) {
  const nlohmann::json& model = Member(j, "model");
  if (TypeOf(model) != "BPE") return Bad(path, "model.type must be BPE");
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return Bad(path, "model.dropout is not supported (a served tokenizer must be deterministic)");
  }
  for (const char* unused : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(unused) && model[unused].is_string() && !model[unused].get<std::string>().empty()) {
      return Bad(path, absl::StrCat("model.", unused, " is not supported by the SentencePiece BPE encoder"));
    }
  }
  if (model.value("ignore_merges", false)) {
    return Bad(path, "model.ignore_merges is not supported by the SentencePiece BPE encoder");
  }
  std::unique_ptr<SentencePieceBpeEncoder> t(new SentencePieceBpeEncoder());
  t->path_ = path;
  ASSIGN_OR_RETURN(t->normalizer_, SpmNormalizer::FromJson(Member(j, "normalizer"), path));
  // Gemma's files split at " " (MergedWithPrevious) after a normalizer that
  // has already replaced every space: nothing is left to split.
  const nlohmann::json& pre = Member(j, "pre_tokenizer");
  const bool split_on_replaced_spaces = MetaspacePreTokenizer::IsSplitOnSpace(pre) &&
                                        t->normalizer_.NormalizeString(" ").find(' ') == std::string::npos;
  ASSIGN_OR_RETURN(t->pre_tokenizer_,
                   MetaspacePreTokenizer::FromJson(split_on_replaced_spaces ? nlohmann::json() : pre, path));
  ASSIGN_OR_RETURN(t->strip_leading_space_, ReadDecoder(Member(j, "decoder"), path));
  t->byte_fallback_ = model.value("byte_fallback", false);
  t->fuse_unk_ = model.value("fuse_unk", false);

  ASSIGN_OR_RETURN(std::vector<std::string> vocab, ReadBpeVocab(model, path));
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (!vocab[id].empty()) t->piece_to_id_.emplace(vocab[id], static_cast<int32_t>(id));
  }
  t->byte_id_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = t->piece_to_id_.find(name);
    if (it != t->piece_to_id_.end()) t->byte_id_[static_cast<size_t>(b)] = it->second;
  }
  ASSIGN_OR_RETURN(auto merges, ReadBpeMerges(model, path));
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [left, right] = merges[r];
    if (!t->piece_to_id_.contains(left) || !t->piece_to_id_.contains(right) ||
        !t->piece_to_id_.contains(left + right)) {
      return Bad(path, absl::StrCat("model.merges[", r, "] \"", left, " ", right,
                                    "\" names a token that is not in model.vocab"));
    }
    // A pair listed twice keeps its last rank, as tokenizers' map of merges does.
    t->merge_rank_.insert_or_assign(absl::StrCat(left, " ", right), static_cast<int32_t>(r));
  }
  ASSIGN_OR_RETURN(t->unk_id_, ReadBpeUnkId(model, t->piece_to_id_, path));

  ASSIGN_OR_RETURN(t->added_, AddedVocabulary::FromJson(Member(j, "added_tokens"), path));
  t->added_.NormalizePatterns([&](absl::string_view content) { return t->normalizer_.NormalizeString(content); });
  t->SetEntries(static_cast<int64_t>(vocab.size()), vocab);
  ASSIGN_OR_RETURN(t->template_, SequenceTemplate::FromPostProcessor(Member(j, "post_processor"), t->vocab_size(), path));
  return t;
}

absl::Status SentencePieceBpeEncoder::EncodeSegment(absl::string_view segment, uint32_t base,
                                                    TextEncoding* out) const {
  if (segment.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(AlignedText text, AlignText(segment, base));
  normalizer_.Apply(&text);
  if (!added_.has_normalized()) {
    for (const AlignedText& piece : pre_tokenizer_.Split(std::move(text))) Tokenize(piece, out);
    return absl::OkStatus();
  }
  return added_.SplitNormalized(
      text,
      [&](AlignedText part) {
        for (const AlignedText& piece : pre_tokenizer_.Split(std::move(part))) Tokenize(piece, out);
        return absl::OkStatus();
      },
      [&](int32_t id, uint32_t begin, uint32_t end) {
        out->ids.push_back(id);
        out->offsets.emplace_back(begin, end);
      });
}

void SentencePieceBpeEncoder::Tokenize(const AlignedText& piece, TextEncoding* out) const {
  if (piece.empty()) return;
  std::vector<std::string> chars(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) AppendUtf8(piece[i].c, &chars[i]);
  const std::vector<std::string> symbols =
      BpeMerge(std::move(chars), [&](absl::string_view left, absl::string_view right) -> std::optional<double> {
        auto it = merge_rank_.find(absl::StrCat(left, " ", right));
        if (it == merge_rank_.end()) return std::nullopt;
        return it->second;
      });
  bool previous_unknown = false;
  size_t first = 0;  // the symbol's first character in `piece`
  for (const std::string& symbol : symbols) {
    const size_t count = SplitUtf8Chars(symbol).size();
    const uint32_t begin = piece[first].begin;
    const uint32_t end = piece[first + count - 1].end;
    first += count;
    auto it = piece_to_id_.find(symbol);
    if (it != piece_to_id_.end()) {
      out->ids.push_back(it->second);
      out->offsets.emplace_back(begin, end);
      previous_unknown = false;
      continue;
    }
    // Only single characters can be unknown (every merge is in the vocabulary).
    bool all_bytes = byte_fallback_;
    for (unsigned char b : symbol) all_bytes = all_bytes && byte_id_[b] >= 0;
    if (all_bytes) {
      for (unsigned char b : symbol) {
        out->ids.push_back(byte_id_[b]);
        out->offsets.emplace_back(begin, end);
      }
      previous_unknown = false;
      continue;
    }
    if (unk_id_ < 0) continue;  // tokenizers drops a symbol it cannot map
    if (previous_unknown && fuse_unk_) {
      out->offsets.back().second = end;
      continue;
    }
    out->ids.push_back(unk_id_);
    out->offsets.emplace_back(begin, end);
    previous_unknown = true;
  }
}
absl::StatusOr<std::string> SentencePieceBpeEncoder::Decode(absl::Span<const int32_t> ids,
                                                            bool skip_special_tokens) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Entries(ids, skip_special_tokens));
  ByteFallbackText text;
  for (const std::string& token : tokens) {
    unsigned value = 0;
    if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' &&
        std::sscanf(token.c_str() + 3, "%2X", &value) == 1) {
      text.AddByte(static_cast<uint8_t>(value));
      continue;
    }
    std::string& out = text.Text();
    for (size_t p = 0; p < token.size();) {
      if (token.compare(p, 3, kMetaspace) == 0) {
        out += ' ';
        p += 3;
      } else {
        out += token[p++];
      }
    }
  }
  std::string out = std::move(text).Finish();
  if (strip_leading_space_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

}  // namespace attnserve
