// Tokenizer: the small interface decoders use, implemented by
// SentencePieceBpe (GGUF tokenizer.ggml.model = llama), HfSentencePieceBpe
// (the same kind of vocabulary from an HF tokenizer.json) and ByteLevelBpe
// (GPT-2 style; HF tokenizer.json or GGUF tokenizer.ggml.model = gpt2).
// Implementations are immutable after construction and thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace attnserve {

struct SpecialTokens {
  int32_t bos = -1;  // -1: none
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  // What Encode does when TokenizeOptions leaves it to the model
  // (GGUF tokenizer.ggml.add_bos_token, HF post-processor).
  bool add_bos_by_default = false;
  bool add_eos_by_default = false;
};

// (Named TokenizeOptions, not EncodeOptions: the encoder model owns that name.)
struct TokenizeOptions {
  // Prepend BOS / append EOS: nullopt = the model's default.
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  // Recognise special/added token texts (e.g. "<|endoftext|>") in the input
  // as single ids. False: they are tokenized as plain text.
  bool parse_special = true;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                      const TokenizeOptions& options = {}) const = 0;

  // The bytes token `id` contributes to the output text: byte-fallback
  // "<0xNN>" -> that one byte, "▁" -> ' ', byte-level map reversed. May be
  // an incomplete UTF-8 sequence. Control tokens (BOS/EOS...) give "".
  // prev_id is the last non-control token before it (-1: none; callers skip
  // control tokens, which add no text): SentencePiece drops the leading
  // space of a piece that starts the text, or follows a BOS given as prev_id
  // (a prompt of BOS alone before a stream). So [a, BOS, ▁b] keeps the
  // space before b, as sentencepiece, HF tokenizers and llama.cpp do.
  virtual std::string TokenBytes(int32_t id, int32_t prev_id) const = 0;

  // Whole-sequence decode; ids out of range are an error. Control tokens are
  // skipped. The result may contain invalid UTF-8 only if the ids do.
  // Default: TokenBytes of each token in turn.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const;

  // The vocabulary entry as stored ("▁the", "Ġthe", "<0x0A>").
  virtual std::string IdToPiece(int32_t id) const = 0;
  virtual std::optional<int32_t> PieceToId(std::string_view piece) const = 0;
  virtual int32_t vocab_size() const = 0;
  // Control/special tokens (BOS, EOS, "<|endoftext|>", added special tokens):
  // they decode to "" and are never produced by splitting plain text.
  virtual bool IsControl(int32_t id) const = 0;
  virtual const SpecialTokens& special() const = 0;
  // "sentencepiece_bpe", "byte_level_bpe".
  virtual std::string_view kind() const = 0;
};

inline absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids) const {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError("Decode: token id " + std::to_string(id) +
                                        " out of range [0, " + std::to_string(vocab_size()) + ")");
    }
    out += TokenBytes(id, prev);
    if (!IsControl(id)) prev = id;
  }
  return out;
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_TOKENIZER_H_
