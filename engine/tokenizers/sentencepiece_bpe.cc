#include "engine/tokenizers/sentencepiece_bpe.h"

#include <cstdio>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/tokenizers/bpe_merge.h"

namespace attnserve {
namespace {
constexpr char kSpace[] = "\xE2\x96\x81";  // U+2581 "▁"

std::optional<int> ParseByteToken(const std::string& piece) {
  // "<0xNN>"
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return std::nullopt;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    char c = piece[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + d;
  }
  return v;
}
}  // namespace

SentencePieceBpe::SentencePieceBpe(SentencePieceVocab vocab) : vocab_(std::move(vocab)) {}

absl::StatusOr<std::unique_ptr<SentencePieceBpe>> SentencePieceBpe::Create(SentencePieceVocab vocab,
                                                                           const std::string& where) {
  const size_t n = vocab.pieces.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(where, ": empty vocabulary"));
  if (vocab.scores.empty()) vocab.scores.assign(n, 0.0f);
  if (vocab.types.empty()) vocab.types.assign(n, SpTokenType::kNormal);
  if (vocab.scores.size() != n || vocab.types.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", n, " tokens but ", vocab.scores.size(), " scores and ",
                                                   vocab.types.size(), " token types"));
  }
  for (int32_t id : {vocab.special.bos, vocab.special.eos, vocab.special.unk, vocab.special.pad}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": special token id ", id, " out of range [0, ", n, ")"));
    }
  }
  std::unique_ptr<SentencePieceBpe> t(new SentencePieceBpe(std::move(vocab)));
  std::fill(std::begin(t->byte_ids_), std::end(t->byte_ids_), -1);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = t->vocab_.pieces[i];
    const SpTokenType type = t->vocab_.types[i];
    if (type == SpTokenType::kByte) {
      std::optional<int> b = ParseByteToken(p);
      if (!b) return absl::InvalidArgumentError(absl::StrCat(where, ": byte token ", i, " '", p, "' is not <0xNN>"));
      t->byte_ids_[*b] = static_cast<int32_t>(i);
    }
    t->piece_to_id_.emplace(p, static_cast<int32_t>(i));  // first wins on duplicates
    if ((type == SpTokenType::kControl || type == SpTokenType::kUserDefined) && !p.empty()) {
      t->specials_.push_back({p, static_cast<int>(i)});
    }
  }
  return t;
}

bool SentencePieceBpe::IsControl(int32_t id) const {
  return id >= 0 && id < vocab_size() && vocab_.types[id] == SpTokenType::kControl;
}

void SentencePieceBpe::EncodeText(absl::string_view text, bool add_prefix, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  std::string s = absl::StrReplaceAll(text, {{" ", kSpace}});
  if (add_prefix) s = kSpace + s;
  auto rank = [&](absl::string_view a, absl::string_view b) -> std::optional<double> {
    auto it = piece_to_id_.find(absl::StrCat(a, b));
    if (it == piece_to_id_.end()) return std::nullopt;
    SpTokenType type = vocab_.types[it->second];
    if (type != SpTokenType::kNormal && type != SpTokenType::kUserDefined) return std::nullopt;
    return -static_cast<double>(vocab_.scores[it->second]);  // higher score merges first
  };
  for (const std::string& sym : BpeMerge(SplitUtf8Chars(s), rank)) {
    auto it = piece_to_id_.find(sym);
    if (it != piece_to_id_.end() && vocab_.types[it->second] != SpTokenType::kControl) {
      out->push_back(it->second);
      continue;
    }
    for (unsigned char b : sym) {
      int32_t id = byte_ids_[b] >= 0 ? byte_ids_[b] : vocab_.special.unk;
      if (id >= 0) out->push_back(id);
    }
  }
}

absl::StatusOr<std::vector<int32_t>> SentencePieceBpe::Encode(std::string_view text_in,
                                                              const TokenizeOptions& options) const {
  const absl::string_view text(text_in.data(), text_in.size());
  std::vector<int32_t> ids;
  if (options.add_bos.value_or(vocab_.special.add_bos_by_default) && vocab_.special.bos >= 0) {
    ids.push_back(vocab_.special.bos);
  }
  std::vector<TextSegment> segments =
      options.parse_special ? SplitOnAddedTokens(text, specials_) : std::vector<TextSegment>{{text, -1}};
  if (options.parse_special && !vocab_.strip.empty()) {
    StripBesideAddedTokens(segments, vocab_.strip, /*ascii_whitespace=*/true);
  }
  // As llama.cpp (llama_vocab::impl::tokenize, SPM) and sentencepiece
  // itself, which sees each piece between special tokens as a text of its
  // own: the dummy prefix goes on a text fragment at the start or after a
  // special token ("<s>[INST]" -> <s> ▁[ ...), not on one that follows text.
  bool prev_special = true;
  for (const TextSegment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      prev_special = true;
    } else {
      EncodeText(seg.text, vocab_.add_space_prefix && prev_special, &ids);
      prev_special = false;
    }
  }
  if (options.add_eos.value_or(vocab_.special.add_eos_by_default) && vocab_.special.eos >= 0) {
    ids.push_back(vocab_.special.eos);
  }
  return ids;
}

std::string SentencePieceBpe::TokenBytes(int32_t id, int32_t prev_id) const {
  if (id < 0 || id >= vocab_size()) return "";
  const std::string& p = vocab_.pieces[id];
  switch (vocab_.types[id]) {
    case SpTokenType::kControl:
    case SpTokenType::kUnused:
      return "";
    case SpTokenType::kByte:
      return std::string(1, static_cast<char>(*ParseByteToken(p)));
    default:
      break;
  }
  std::string s = absl::StrReplaceAll(p, {{kSpace, " "}});
  // The dummy prefix's space comes off again; without one (Gemma) a leading
  // space is the text's own, as llama.cpp keeps it.
  if (vocab_.add_space_prefix && (prev_id < 0 || prev_id == vocab_.special.bos) && !s.empty() && s[0] == ' ') {
    s.erase(0, 1);
  }
  return s;
}

std::string SentencePieceBpe::IdToPiece(int32_t id) const {
  return id >= 0 && id < vocab_size() ? vocab_.pieces[id] : std::string();
}

std::optional<int32_t> SentencePieceBpe::PieceToId(std::string_view piece) const {
  auto it = piece_to_id_.find(std::string(piece));
  if (it == piece_to_id_.end()) return std::nullopt;
  return it->second;
}

}  // namespace attnserve
