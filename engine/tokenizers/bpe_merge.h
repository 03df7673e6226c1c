// The BPE merge loop shared by SentencePieceBpe and ByteLevelBpe: repeatedly
// merge the adjacent pair with the best rank (lowest value; ties: leftmost),
// as SentencePiece / llama.cpp (score order) and HF tokenizers (merge rank
// order) both do. O(n log n) with a heap and lazy invalidation, so long
// prompts without pre-tokenisation (SentencePiece) stay fast.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BPE_MERGE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BPE_MERGE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace attnserve {

// rank(left, right): the rank of merging the two symbols into left+right,
// nullopt when that merge does not exist. Returns the final symbols.
using BpeRankFn = std::function<std::optional<double>(absl::string_view left, absl::string_view right)>;
std::vector<std::string> BpeMerge(std::vector<std::string> symbols, const BpeRankFn& rank);

// Splits UTF-8 text into code point strings; an invalid byte is its own
// one-byte symbol (so nothing is ever lost).
std::vector<std::string> SplitUtf8Chars(absl::string_view text);
// Length of the UTF-8 sequence starting at s[i] (1 for an invalid byte).
int Utf8CharLen(absl::string_view s, size_t i);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BPE_MERGE_H_
