#include "engine/tokenizers/byte_level_bpe.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizers/bpe_merge.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

std::string Utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<std::string, uint8_t> to_byte;
  ByteMap() {
    // Printable Latin-1 bytes map to themselves; the rest to 256, 257, ...
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      to_unicode[b] = Utf8(cp);
      to_byte[to_unicode[b]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& Map() {
  static const ByteMap* m = new ByteMap();
  return *m;
}

}  // namespace

const std::string& ByteToUnicode(uint8_t b) { return Map().to_unicode[b]; }

std::optional<uint8_t> UnicodeToByte(absl::string_view ch) {
  auto it = Map().to_byte.find(std::string(ch));
  if (it == Map().to_byte.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::unique_ptr<ByteLevelBpe>> ByteLevelBpe::Create(ByteLevelVocab vocab, const std::string& where) {
  const size_t n = vocab.pieces.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(where, ": empty vocabulary"));
  for (int32_t id : {vocab.special.bos, vocab.special.eos, vocab.special.unk, vocab.special.pad}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": special token id ", id, " out of range [0, ", n, ")"));
    }
  }
  std::unique_ptr<ByteLevelBpe> t(new ByteLevelBpe(std::move(vocab)));
  t->where_ = where;
  t->kind_.assign(n, 0);
  for (const ByteLevelVocab::Added& a : t->vocab_.added) {
    if (a.id < 0 || a.id >= static_cast<int32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": added token '", a.content, "' has id ", a.id,
                                                     " outside the vocabulary of ", n));
    }
    t->kind_[a.id] = a.special ? 2 : 1;
    if (a.strip != 0) {
      t->strip_.resize(t->vocab_.pieces.size(), 0);
      t->strip_[a.id] = a.strip;
    }
    t->all_added_.push_back({a.content, a.id});
    if (!a.special) t->nonspecial_added_.push_back({a.content, a.id});
  }
  t->decoded_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = t->vocab_.pieces[i];
    t->piece_to_id_.emplace(p, static_cast<int32_t>(i));
    if (t->kind_[i] == 2) continue;
    if (t->kind_[i] == 1) {
      t->decoded_[i] = p;
      continue;
    }
    // Map each character back to its byte; characters outside the table
    // (malformed vocabularies) are kept as their UTF-8.
    std::string bytes;
    for (const std::string& ch : SplitUtf8Chars(p)) {
      const std::optional<uint8_t> b = UnicodeToByte(ch);
      if (b.has_value()) bytes += static_cast<char>(*b);
      else bytes += ch;
    }
    t->decoded_[i] = std::move(bytes);
  }
  for (size_t r = 0; r < t->vocab_.merges.size(); ++r) {
    const auto& [a, b] = t->vocab_.merges[r];
    t->merge_rank_.emplace(absl::StrCat(a, " ", b), static_cast<int32_t>(r));
  }
  return t;
}

bool ByteLevelBpe::IsControl(int32_t id) const { return id >= 0 && id < vocab_size() && kind_[id] == 2; }

absl::Status ByteLevelBpe::EncodePiece(absl::string_view piece, std::vector<int32_t>* out) const {
  std::vector<std::string> symbols;
  symbols.reserve(piece.size());
  for (unsigned char b : piece) symbols.push_back(ByteToUnicode(b));
  auto rank = [&](absl::string_view a, absl::string_view b) -> std::optional<double> {
    auto it = merge_rank_.find(absl::StrCat(a, " ", b));
    if (it == merge_rank_.end()) return std::nullopt;
    return it->second;
  };
  for (const std::string& sym : BpeMerge(std::move(symbols), rank)) {
    auto it = piece_to_id_.find(sym);
    if (it != piece_to_id_.end()) {
      out->push_back(it->second);
    } else if (vocab_.special.unk >= 0) {
      out->push_back(vocab_.special.unk);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(where_, ": byte-level symbol '", sym,
                                                     "' is not in the vocabulary and there is no unknown token"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ByteLevelBpe::Encode(std::string_view text_in,
                                                          const TokenizeOptions& options) const {
  const absl::string_view text(text_in.data(), text_in.size());
  std::vector<int32_t> ids;
  if (options.add_bos.value_or(vocab_.special.add_bos_by_default) && vocab_.special.bos >= 0) {
    ids.push_back(vocab_.special.bos);
  }
  std::vector<TextSegment> segments = SplitOnAddedTokens(text, options.parse_special ? all_added_ : nonspecial_added_);
  if (!strip_.empty()) StripBesideAddedTokens(segments, strip_);
  for (const TextSegment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string normalized;
    const absl::string_view stretch = vocab_.nfc && ToNfc(seg.text, &normalized) ? absl::string_view(normalized)
                                                                                : seg.text;
    for (absl::string_view piece : Pretokenize(stretch, vocab_.pretokenizer)) {
      absl::Status s = EncodePiece(piece, &ids);
      if (!s.ok()) return s;
    }
  }
  if (options.add_eos.value_or(vocab_.special.add_eos_by_default) && vocab_.special.eos >= 0) {
    ids.push_back(vocab_.special.eos);
  }
  return ids;
}

std::string ByteLevelBpe::TokenBytes(int32_t id, int32_t /*prev_id*/) const {
  if (id < 0 || id >= vocab_size()) return "";
  return decoded_[id];
}

std::string ByteLevelBpe::IdToPiece(int32_t id) const {
  return id >= 0 && id < vocab_size() ? vocab_.pieces[id] : std::string();
}

std::optional<int32_t> ByteLevelBpe::PieceToId(std::string_view piece) const {
  auto it = piece_to_id_.find(std::string(piece));
  if (it == piece_to_id_.end()) return std::nullopt;
  return it->second;
}

}  // namespace attnserve
