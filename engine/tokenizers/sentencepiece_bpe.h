// SentencePiece-style BPE as llama.cpp runs GGUF `tokenizer.ggml.model =
// llama` vocabularies (and llama2.c's run.c its tok512.bin):
//   * spaces become "▁"; a "▁" dummy prefix is added to non-empty text
//     (add_space_prefix, default on);
//   * the text is split into UTF-8 characters, then the adjacent pair whose
//     concatenation is a vocabulary piece with the highest score is merged,
//     repeatedly (ties: leftmost);
//   * a final symbol that is not a piece becomes byte-fallback tokens
//     "<0xNN>", one per byte (or <unk> without them).
// Control tokens (BOS/EOS...) and user-defined tokens written in the text are
// recognised as single ids when TokenizeOptions::parse_special is set.
// Decoding: "▁" -> ' ', "<0xNN>" -> the byte, control tokens -> "", and,
// with add_space_prefix, a piece that starts the text or follows BOS loses
// its leading space.
// Immutable after Create; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_H_

#include <memory>
#include <string>
#include <vector>

#include <unordered_map>
#include "absl/status/statusor.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

// GGUF / SentencePiece token types.
enum class SpTokenType : int { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct SentencePieceVocab {
  std::vector<std::string> pieces;  // as stored, with "▁"
  std::vector<float> scores;
  std::vector<SpTokenType> types;
  SpecialTokens special;
  bool add_space_prefix = true;
  // id -> lstrip / rstrip flags (pretokenizer.h; llama.cpp's token
  // attributes: Phi-3's RSTRIP), applied with ASCII whitespace as
  // llama.cpp does; empty: none.
  std::vector<uint8_t> strip;
};

class SentencePieceBpe : public Tokenizer {
 public:
  // Validates sizes, types and special ids; `where` names the source in errors.
  static absl::StatusOr<std::unique_ptr<SentencePieceBpe>> Create(SentencePieceVocab vocab, const std::string& where);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              const TokenizeOptions& options = {}) const override;
  std::string TokenBytes(int32_t id, int32_t prev_id) const override;
  std::string IdToPiece(int32_t id) const override;
  std::optional<int32_t> PieceToId(std::string_view piece) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  bool IsControl(int32_t id) const override;
  const SpecialTokens& special() const override { return vocab_.special; }
  std::string_view kind() const override { return "sentencepiece_bpe"; }

 private:
  explicit SentencePieceBpe(SentencePieceVocab vocab);
  void EncodeText(absl::string_view text, bool add_prefix, std::vector<int32_t>* out) const;

  SentencePieceVocab vocab_;
  std::unordered_map<std::string, int32_t> piece_to_id_;
  int32_t byte_ids_[256];
  std::vector<AddedToken> specials_;  // control + user-defined texts
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_H_
