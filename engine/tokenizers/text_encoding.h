// What an encoder tokenizer produces for a text or a pair (ids, byte
// offsets, segments, truncation), and which end truncation cuts.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_TEXT_ENCODING_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_TEXT_ENCODING_H_

#include <cstdint>
#include <utility>
#include <vector>

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
  // 1 for each token the post-processor's template added ([CLS], </s>...),
  // 0 for the text's own (Hugging Face's special_tokens_mask); empty when the
  // template was not applied. Not the same as an empty span: a token of
  // spaces can have one once RoBERTa trims offsets.
  std::vector<uint8_t> special_tokens_mask;
};

// Which end of an over-long text truncation cuts: the end (Hugging Face's
// default, "right") or the start ("left": the last tokens are kept). The
// special tokens around the text stay either way.
enum class TruncationSide { kEnd, kStart };

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_TEXT_ENCODING_H_
