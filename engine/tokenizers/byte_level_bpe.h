// Byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM...): the text is split at
// added/special tokens, pre-tokenised (pretokenizer.h), each piece's bytes
// are mapped to printable characters with GPT-2's byte<->unicode table, and
// merges are applied by rank. Vocabulary entries are in that mapped form
// ("Ġthe"); added tokens are literal text. Decoding maps characters back to
// bytes (so a token may end inside a UTF-8 character); special added tokens
// decode to "". Immutable after Create; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unordered_map>
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

struct ByteLevelVocab {
  std::vector<std::string> pieces;  // id -> piece (mapped form, or literal for added tokens)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  // Added tokens (matched in raw text before pre-tokenisation).
  struct Added {
    std::string content;
    int32_t id;
    bool special;  // special: decodes to "", matched only with parse_special
    uint8_t strip;  // kAddedTokenLstrip | kAddedTokenRstrip (pretokenizer.h)
  };
  std::vector<Added> added;
  PretokenizerKind pretokenizer = PretokenizerKind::kGpt2;
  // tokenizer.json's NFC normalizer (Qwen2's files), on the text between
  // added tokens. (llama.cpp does not normalize GGUF text: nor do we.)
  bool nfc = false;
  SpecialTokens special;
};

class ByteLevelBpe : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<ByteLevelBpe>> Create(ByteLevelVocab vocab, const std::string& where);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              const TokenizeOptions& options = {}) const override;
  std::string TokenBytes(int32_t id, int32_t prev_id) const override;
  std::string IdToPiece(int32_t id) const override;
  std::optional<int32_t> PieceToId(std::string_view piece) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  bool IsControl(int32_t id) const override;
  const SpecialTokens& special() const override { return vocab_.special; }
  std::string_view kind() const override { return "byte_level_bpe"; }
  PretokenizerKind pretokenizer() const { return vocab_.pretokenizer; }

 private:
  explicit ByteLevelBpe(ByteLevelVocab vocab) : vocab_(std::move(vocab)) {}
  absl::Status EncodePiece(absl::string_view piece, std::vector<int32_t>* out) const;

  ByteLevelVocab vocab_;
  std::unordered_map<std::string, int32_t> piece_to_id_;
  std::unordered_map<std::string, int32_t> merge_rank_;  // "a b" -> rank
  std::vector<std::string> decoded_;                      // id -> bytes
  std::vector<uint8_t> kind_;                             // 0 normal, 1 added, 2 special
  std::vector<AddedToken> all_added_, nonspecial_added_;
  std::vector<uint8_t> strip_;  // id -> lstrip / rstrip flags; empty when no token has one
  std::string where_;
};

// GPT-2's bytes_to_unicode: byte -> UTF-8 of its printable stand-in.
const std::string& ByteToUnicode(uint8_t b);
// The inverse, for one character's UTF-8; nullopt for a character that
// stands for no byte.
std::optional<uint8_t> UnicodeToByte(absl::string_view ch);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_H_
