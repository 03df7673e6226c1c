#include "engine/tokenizers/hf_sentencepiece_bpe.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/tokenizers/bpe_merge.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

constexpr absl::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁"

int ByteTokenValue(absl::string_view piece) {
  // "<0xNN>" (HF ByteFallback accepts exactly this form, hex digits either case).
  if (piece.size() != 6 || !absl::StartsWith(piece, "<0x") || piece[5] != '>') return -1;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = piece[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

std::string MergeKey(absl::string_view a, absl::string_view b) {
  std::string k(a);
  k.push_back('\0');
  k.append(b.data(), b.size());
  return k;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HfSentencePieceBpe>> HfSentencePieceBpe::Create(HfSentencePieceVocab vocab,
                                                                               const std::string& where) {
  const size_t n = vocab.pieces.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(where, ": empty vocabulary"));
  for (int32_t id : {vocab.special.bos, vocab.special.eos, vocab.special.unk, vocab.special.pad}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": special token id ", id, " out of range [0, ", n, ")"));
    }
  }
  std::unique_ptr<HfSentencePieceBpe> t(new HfSentencePieceBpe(std::move(vocab)));
  HfSentencePieceVocab& v = t->vocab_;
  t->kind_.assign(n, 0);
  for (const HfSentencePieceVocab::Added& a : v.added) {
    if (a.id < 0 || a.id >= static_cast<int32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": added token id ", a.id, " out of range"));
    }
    t->kind_[a.id] = a.special ? 2 : 1;
  }
  std::fill(std::begin(t->byte_ids_), std::end(t->byte_ids_), -1);
  t->byte_value_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = v.pieces[i];
    t->piece_ids_.emplace(p, static_cast<int32_t>(i));
    if (t->kind_[i] != 0) continue;
    t->model_ids_.emplace(p, static_cast<int32_t>(i));
    const int b = ByteTokenValue(p);
    if (b >= 0) {
      t->byte_value_[i] = static_cast<int16_t>(b);
      if (t->byte_ids_[b] < 0) t->byte_ids_[b] = static_cast<int32_t>(i);
    }
  }
  for (size_t r = 0; r < v.merges.size(); ++r) {
    t->merge_rank_.emplace(MergeKey(v.merges[r].first, v.merges[r].second), static_cast<int32_t>(r));
  }
  for (const HfSentencePieceVocab::Added& a : v.added) {
    if (a.content.empty()) continue;
    // Normalized added tokens are matched (and decoded) in normalized form.
    AddedToken tok{a.normalized ? t->Normalize(a.content) : a.content, a.id};
    (a.normalized ? t->norm_all_ : t->raw_all_).push_back(tok);
    if (a.strip != 0 && !a.normalized) {
      t->strip_.resize(n, 0);
      t->strip_[a.id] = a.strip;
    }
    if (!a.special) (a.normalized ? t->norm_plain_ : t->raw_plain_).push_back(tok);
  }
  return t;
}

bool HfSentencePieceBpe::IsControl(int32_t id) const {
  return id >= 0 && id < vocab_size() && kind_[id] == 2;
}

std::string HfSentencePieceBpe::Normalize(absl::string_view text) const {
  std::string s(text);
  if (vocab_.prepend_space && !s.empty()) s = absl::StrCat(kSpace, s);
  if (vocab_.replace_spaces) s = absl::StrReplaceAll(s, {{" ", kSpace}});
  return s;
}

void HfSentencePieceBpe::EncodeWord(absl::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  auto rank = [&](absl::string_view a, absl::string_view b) -> std::optional<double> {
    auto it = merge_rank_.find(MergeKey(a, b));
    if (it == merge_rank_.end()) return std::nullopt;
    return static_cast<double>(it->second);
  };
  bool last_unk = false;
  for (const std::string& sym : BpeMerge(SplitUtf8Chars(word), rank)) {
    auto it = model_ids_.find(sym);
    if (it != model_ids_.end()) {
      out->push_back(it->second);
      last_unk = false;
      continue;
    }
    bool all_bytes = vocab_.byte_fallback;
    for (unsigned char b : sym) all_bytes = all_bytes && byte_ids_[b] >= 0;
    if (all_bytes) {
      for (unsigned char b : sym) out->push_back(byte_ids_[b]);
      last_unk = false;
    } else if (vocab_.special.unk >= 0 && !(vocab_.fuse_unk && last_unk)) {
      out->push_back(vocab_.special.unk);
      last_unk = true;
    }
    // No unk token: HF drops the symbol.
  }
}

void HfSentencePieceBpe::EncodePiece(absl::string_view piece, bool at_start, std::vector<int32_t>* out) const {
  if (!vocab_.metaspace) {
    EncodeWord(piece, out);
    return;
  }
  std::string s = absl::StrReplaceAll(piece, {{" ", kSpace}});
  const bool starts = absl::StartsWith(s, kSpace);
  if (!s.empty() && !starts &&
      (vocab_.metaspace_prepend == PrependScheme::kAlways ||
       (vocab_.metaspace_prepend == PrependScheme::kFirst && at_start))) {
    s = absl::StrCat(kSpace, s);
  }
  if (!vocab_.metaspace_split) {
    EncodeWord(s, out);
    return;
  }
  // Split before each "▁" (HF MergedWithNext): "a▁▁b" -> "a", "▁", "▁b".
  size_t begin = 0;
  for (size_t i = kSpace.size(); i <= s.size(); ++i) {
    if (i == s.size() || absl::string_view(s).substr(i, kSpace.size()) == kSpace) {
      EncodeWord(absl::string_view(s).substr(begin, i - begin), out);
      begin = i;
    }
  }
}

absl::StatusOr<std::vector<int32_t>> HfSentencePieceBpe::Encode(std::string_view text_in,
                                                                const TokenizeOptions& options) const {
  const absl::string_view text(text_in.data(), text_in.size());
  std::vector<int32_t> ids;
  if (options.add_bos.value_or(vocab_.special.add_bos_by_default) && vocab_.special.bos >= 0) {
    ids.push_back(vocab_.special.bos);
  }
  const auto& raw_tokens = options.parse_special ? raw_all_ : raw_plain_;
  const auto& norm_tokens = options.parse_special ? norm_all_ : norm_plain_;
  std::vector<TextSegment> segments = SplitOnAddedTokens(text, raw_tokens);
  if (!strip_.empty()) StripBesideAddedTokens(segments, strip_);
  for (const TextSegment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    const bool seg_at_start = seg.text.data() == text.data();
    const std::string normalized = Normalize(seg.text);
    for (const TextSegment& piece : SplitOnAddedTokens(normalized, norm_tokens)) {
      if (piece.id >= 0) {
        ids.push_back(piece.id);
      } else {
        EncodePiece(piece.text, seg_at_start && piece.text.data() == normalized.data(), &ids);
      }
    }
  }
  if (options.add_eos.value_or(vocab_.special.add_eos_by_default) && vocab_.special.eos >= 0) {
    ids.push_back(vocab_.special.eos);
  }
  return ids;
}

std::string HfSentencePieceBpe::PieceText(int32_t id) const {
  if (byte_value_[id] >= 0) return std::string(1, static_cast<char>(byte_value_[id]));
  const std::string& p = vocab_.pieces[id];
  // A normalized added token reaches the decoder in normalized form.
  const std::string form = kind_[id] == 1 ? Normalize(p) : p;
  return absl::StrReplaceAll(form, {{kSpace, " "}});
}

std::string HfSentencePieceBpe::TokenBytes(int32_t id, int32_t prev_id) const {
  if (id < 0 || id >= vocab_size() || kind_[id] == 2) return "";
  std::string s = PieceText(id);
  // HF's Strip decoder removes the text's first space whatever token made
  // it: a "▁" piece or a byte-fallback <0x20> (HF tokenizers 0.23 decodes
  // [<0x20>, <0x4E>] as "N").
  if (vocab_.strip_leading_space && (prev_id < 0 || prev_id == vocab_.special.bos) && !s.empty() && s[0] == ' ') {
    s.erase(0, 1);
  }
  return s;
}

absl::StatusOr<std::string> HfSentencePieceBpe::Decode(absl::Span<const int32_t> ids) const {
  ByteFallbackText text;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Decode: token id ", id, " out of range [0, ", vocab_size(), ")"));
    }
    if (kind_[id] == 2) continue;  // skip_special_tokens
    if (byte_value_[id] >= 0) {
      text.AddByte(static_cast<uint8_t>(byte_value_[id]));
    } else {
      text.Text() += PieceText(id);
    }
  }
  std::string out = std::move(text).Finish();
  if (vocab_.strip_leading_space && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string HfSentencePieceBpe::IdToPiece(int32_t id) const {
  return id >= 0 && id < vocab_size() ? vocab_.pieces[id] : std::string();
}

std::optional<int32_t> HfSentencePieceBpe::PieceToId(std::string_view piece) const {
  auto it = piece_ids_.find(std::string(piece));
  if (it == piece_ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace attnserve
