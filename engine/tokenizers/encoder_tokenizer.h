// EncoderTokenizer: what an encoder (BERT, XLM-RoBERTa) needs from its
// tokenizer: ids with byte offsets for one text or a text pair, the
// post-processor's special tokens around them, truncation to a length limit,
// and decoding. Implemented by WordPieceTokenizer (BERT) and
// UnigramTokenizer (XLM-RoBERTa's SentencePiece vocabulary); both read a
// Hugging Face tokenizer.json and produce exactly the `tokenizers` library's
// ids. LoadEncoderTokenizer picks one by the file's model.type.
//
// Implementations are immutable after construction and thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace attnserve {

struct TextEncoding {
  std::vector<int32_t> ids;
  // Byte span [begin, end) of each token in the input text; (0, 0) for the
  // special tokens the post-processor adds.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  bool truncated = false;
  // Tokens the full text has (with special tokens when they were added),
  // before truncation.
  int64_t untruncated_length = 0;
  // Segment of each token (token_type_ids) as the post-processor's pair
  // template gives them (BERT: 0 up to the first [SEP], 1 after; XLM-R: all
  // 0); empty from Encode, where every token is segment 0.
  std::vector<int32_t> type_ids;
};

// Which end of an over-long text truncation cuts: the end (Hugging Face's
// default, "right") or the start ("left": the last tokens are kept). The
// special tokens around the text stay either way.
enum class TruncationSide { kEnd, kStart };

class EncoderTokenizer {
 public:
  virtual ~EncoderTokenizer() = default;

  // Tokenizes `text` (must be valid UTF-8: INVALID_ARGUMENT otherwise). With
  // max_length > 0 the result is cut to at most max_length tokens, counting
  // the special tokens when add_special_tokens (the tail of the text is
  // dropped, as Hugging Face's truncation of a single sequence does; its
  // start with TruncationSide::kStart).
  virtual absl::StatusOr<TextEncoding> Encode(absl::string_view text, bool add_special_tokens, int max_length = 0,
                                              TruncationSide side = TruncationSide::kEnd) const = 0;
  // A text pair as a cross-encoder reads it, by the post-processor's pair
  // template (BERT: [CLS] a [SEP] b [SEP]; XLM-R: <s> a </s></s> b </s>).
  // With max_length > 0 the texts are cut by Hugging Face's "longest_first"
  // rule (see TruncateLongestFirst), each at the end `side` names. Offsets
  // are byte spans in the text each token came from.
  virtual absl::StatusOr<TextEncoding> EncodePair(absl::string_view first, absl::string_view second,
                                                  int max_length = 0,
                                                  TruncationSide side = TruncationSide::kEnd) const = 0;
  // The vocabulary entry ("[UNK]", "▁the"); out-of-range ids give
  // "<invalid id N>".
  virtual std::string IdToToken(int32_t id) const = 0;
  // The tokenizer.json decoder's text. INVALID_ARGUMENT for ids out of range.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const = 0;
  virtual int vocab_size() const = 0;
  // Added tokens marked special ([CLS], <s>, <mask>, ...).
  virtual bool IsSpecial(int32_t id) const = 0;
  // "wordpiece", "unigram".
  virtual absl::string_view kind() const = 0;
};

// Reads tokenizer.json and builds the tokenizer its model.type names
// (WordPiece or Unigram); INVALID_ARGUMENT naming the file otherwise.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LoadEncoderTokenizer(const std::string& path);
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromJson(const nlohmann::json& json,
                                                                           const std::string& path);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_
