// The byte-level BPE tokenizer of RoBERTa-family encoders (roberta-base,
// all-distilroberta-v1, the twitter-roberta sentiment classifiers, ...) and
// of decoder-based embedders (Qwen3-Embedding's Qwen2 files, Llama-3's) read
// from their tokenizer.json, producing exactly the `tokenizers` library's ids
// and offsets:
//   added tokens   matched in the raw text (AddedVocabulary: <mask> takes the
//                  space before it with lstrip), then the normalized: true
//                  ones (older RoBERTa files' <s> </s>) in each stretch
//   normalizer     none, or NFC (Qwen2's) on each stretch between added
//                  tokens, offsets aligned as tokenizers aligns them
//                  (unicode_util.h NfcEdits). tokenizers matches normalized:
//                  true added tokens in the NFC text, this in the raw text:
//                  they differ only where NFC rewrites the characters
//                  around such a token (the files that NFC have none).
//   pre_tokenizer  ByteLevel: with add_prefix_space a space before every
//                  stretch between added tokens that lacks one, GPT-2's regex
//                  split (pretokenizer.h) unless use_regex is false, each byte
//                  written as its printable stand-in; or a Sequence of an
//                  Isolated Split by the Llama-3 or Qwen2 regex and such a
//                  ByteLevel without its own regex
//   model          BPE: merges by rank within each piece, on ids, an
//                  unknown symbol as unk_token if there is one (fused with
//                  fuse_unk), ignore_merges taking a whole piece found in the
//                  vocabulary as it is
//   post_processor RobertaProcessing (<s> $A </s></s> $B </s>), whose
//                  trim_offsets drops the spaces at either end of a token
//                  from its span, or TemplateProcessing / BertProcessing,
//                  or a ByteLevel (trim_offsets as RoBERTa's) alone (no
//                  special tokens) or before a TemplateProcessing
//   decoder        ByteLevel: the stand-ins back to bytes, invalid UTF-8 as
//                  U+FFFD
// A token's byte span covers whole characters of the text: a character split
// across tokens gives each of them the character's span, as tokenizers does.
//
// Immutable after construction; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_ENCODER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_ENCODER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/pretokenizer.h"

namespace attnserve {

class ByteLevelBpeEncoder : public EncoderTokenizer {
 public:
  // INVALID_ARGUMENT naming the file and the component for anything
  // unsupported (a normalizer, another pre-tokenizer or decoder, a BPE with
  // dropout, byte_fallback or a subword prefix / suffix).
  static absl::StatusOr<std::unique_ptr<ByteLevelBpeEncoder>> FromJson(const nlohmann::json& json,
                                                                       const std::string& path);

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  absl::string_view kind() const override { return "bpe"; }

 private:
  ByteLevelBpeEncoder() = default;
  absl::Status EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const override;
  // Pre-tokenizes and tokenizes text that holds no added token.
  absl::Status EncodeStretch(absl::string_view segment, uint32_t base, TextEncoding* out) const;
  // trim_offsets applies to added tokens too: <mask>'s lstrip span loses the
  // spaces it took.
  void AppendAddedToken(absl::string_view matched, int32_t id, uint32_t begin, uint32_t end,
                        TextEncoding* out) const override;
  // RobertaProcessing's trim_offsets for a token with `leading` / `trailing`
  // bytes of spaces at its ends and span [*begin, *end): they leave the span,
  // except the one add_prefix_space put before the text's first token.
  void TrimOffsets(size_t leading, size_t trailing, const TextEncoding& so_far, uint32_t* begin,
                   uint32_t* end) const;

  // The BPE merges of one piece's bytes, on ids: each byte's stand-in id
  // (-1 when the vocabulary lacks it), merged by rank (ties: leftmost) as
  // tokenizers' merge_word does. Appends (id or -1, byte count) per token.
  void MergePiece(absl::string_view piece, std::vector<std::pair<int32_t, uint32_t>>* tokens) const;

  std::unordered_map<std::string, int32_t> piece_to_id_;
  std::array<int32_t, 256> byte_id_{};  // each byte's stand-in, -1 if not in the vocabulary
  // (left id << 32 | right id) -> (rank, merged id), as tokenizers keys them.
  absl::flat_hash_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  bool nfc_ = false;               // the normalizer
  bool add_prefix_space_ = false;  // the pre-tokenizer's ByteLevel's
  // The regex split before the bytes: ByteLevel's own (GPT-2's, unless its
  // use_regex is false) or a Split step's; nullopt: none.
  std::optional<PretokenizerKind> split_;
  bool trim_offsets_ = false;      // RobertaProcessing's or a ByteLevel post-processor's
  bool trim_keeps_prefix_space_ = false;  // and its add_prefix_space
  std::string path_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BYTE_LEVEL_BPE_ENCODER_H_
