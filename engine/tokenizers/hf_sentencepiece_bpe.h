// SentencePiece-style BPE as Hugging Face `tokenizers` runs it from a
// tokenizer.json (Llama-2, Mistral, TinyLlama, and what transformers'
// SentencePiece converter writes): model BPE with merge ranks and
// byte_fallback, "▁" for spaces. Unlike SentencePieceBpe (GGUF: merges by
// piece score, llama.cpp's rules) this follows the HF pipeline step by step,
// because the two disagree on leading spaces and added tokens:
//   1. split the raw text at added tokens with normalized=false (special
//      tokens: only with TokenizeOptions::parse_special);
//   2. normalizer, per remaining segment: Prepend("▁") (non-empty text)
//      and/or Replace(" ", "▁") (the Llama-2 "legacy" files);
//   3. split the normalized text at added tokens with normalized=true,
//      matched by their normalized content (so with a Prepend normalizer
//      "<x>" matches only as "▁<x>", exactly as HF does);
//   4. Metaspace pre-tokenizer (transformers 5 files): " " -> "▁", prepend
//      "▁" (scheme always, or first = only the piece at the very start of the
//      input, never when it already starts with "▁"), optional split before
//      each "▁";
//   5. BPE per word: characters, merges by rank (ties: leftmost), a final
//      symbol that is not in the vocabulary becomes its <0xNN> byte tokens
//      (byte_fallback) or <unk> (consecutive unknowns fused).
// Decoding is the decoder chain Replace("▁", " ") / ByteFallback / Fuse /
// Strip(" ", 1, 0) (or a Metaspace decoder): Decode() follows HF exactly
// (special tokens skipped; invalid byte runs become U+FFFD; one leading
// space removed from the whole text). TokenBytes(), for streaming, removes
// the leading space of a token at the start or right after BOS.
// Immutable after Create; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_HF_SENTENCEPIECE_BPE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_HF_SENTENCEPIECE_BPE_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizers/metaspace.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

struct HfSentencePieceVocab {
  std::vector<std::string> pieces;  // id -> model piece, or an added token's content
  std::vector<std::pair<std::string, std::string>> merges;  // rank order
  struct Added {
    std::string content;
    int32_t id;
    bool special;     // skipped when decoding; matched only with parse_special
    bool normalized;  // matched in the normalized text (step 3), else raw (step 1)
    uint8_t strip;    // kAddedTokenLstrip | kAddedTokenRstrip (pretokenizer.h), raw tokens only
  };
  std::vector<Added> added;
  // Normalizer (step 2).
  bool prepend_space = false;   // Prepend("▁")
  bool replace_spaces = false;  // Replace(" ", "▁")
  // Metaspace pre-tokenizer (step 4).
  bool metaspace = false;
  PrependScheme metaspace_prepend = PrependScheme::kAlways;
  bool metaspace_split = false;
  // Model.
  bool byte_fallback = true;
  bool fuse_unk = true;
  // Decoder: remove one leading space of the text (Strip start 1).
  bool strip_leading_space = true;
  SpecialTokens special;
};

class HfSentencePieceBpe : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<HfSentencePieceBpe>> Create(HfSentencePieceVocab vocab,
                                                                    const std::string& where);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              const TokenizeOptions& options = {}) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const override;
  std::string TokenBytes(int32_t id, int32_t prev_id) const override;
  std::string IdToPiece(int32_t id) const override;
  std::optional<int32_t> PieceToId(std::string_view piece) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  bool IsControl(int32_t id) const override;
  const SpecialTokens& special() const override { return vocab_.special; }
  std::string_view kind() const override { return "hf_sentencepiece_bpe"; }

 private:
  explicit HfSentencePieceBpe(HfSentencePieceVocab vocab) : vocab_(std::move(vocab)) {}
  std::string Normalize(absl::string_view text) const;
  // Steps 4 and 5 for one normalized piece; `at_start`: it begins the input.
  void EncodePiece(absl::string_view piece, bool at_start, std::vector<int32_t>* out) const;
  void EncodeWord(absl::string_view word, std::vector<int32_t>* out) const;
  // Piece text with "▁" as spaces (byte tokens as their byte).
  std::string PieceText(int32_t id) const;

  HfSentencePieceVocab vocab_;
  std::unordered_map<std::string, int32_t> model_ids_;   // model vocabulary only
  std::unordered_map<std::string, int32_t> piece_ids_;   // model + added (PieceToId)
  std::unordered_map<std::string, int32_t> merge_rank_;  // left + '\0' + right -> rank
  std::vector<int16_t> byte_value_;                      // id -> byte of a <0xNN> token, -1 otherwise
  int32_t byte_ids_[256];
  std::vector<uint8_t> kind_;  // 0 model piece, 1 added, 2 special added
  // Added tokens matched in the raw text (all / non-special only) and in
  // normalized text (all / non-special only), the latter by normalized content.
  std::vector<AddedToken> raw_all_, raw_plain_, norm_all_, norm_plain_;
  std::vector<uint8_t> strip_;  // id -> lstrip / rstrip flags of raw tokens; empty when none has one
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_HF_SENTENCEPIECE_BPE_H_
