// Pre-tokenisation for byte-level BPE: the GPT-2 regex and its Llama-3 and
// Qwen2 variants, written by hand (RE2 has no lookahead for `\s+(?!\S)`),
// with ICU character classes (\p{L}, \p{N}, Unicode White_Space for \s).
//
//   GPT-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//           | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:  as Llama3 with \p{N} (single digits) instead of \p{N}{1,3}
//   SmolLM: HF Digits(individual_digits) then the GPT-2 regex on each
//           non-digit run (so " 123" is " ", "1", "2", "3")
//
// Every alternative is tried in order at each position, as the regex engine
// does, so the pieces are exactly the regex matches (the union of the
// alternatives covers every character, so there are no gaps).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_PRETOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_PRETOKENIZER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace attnserve {

// kO200k: GPT-4o's regex (tiktoken o200k_base; Phi-4-mini, GGUF pre "gpt-4o").
enum class PretokenizerKind { kGpt2, kLlama3, kQwen2, kSmolLM, kO200k };

const char* PretokenizerKindName(PretokenizerKind kind);
// The HF regex string of each kind (as in tokenizer.json files).
const std::string& PretokenizerRegex(PretokenizerKind kind);
// Kind from a tokenizer.json Split regex; nullopt when it is none of these.
std::optional<PretokenizerKind> PretokenizerFromRegex(absl::string_view regex);
// Kind from GGUF tokenizer.ggml.pre ("gpt-2", "llama-bpe", "qwen2", ...).
std::optional<PretokenizerKind> PretokenizerFromGgufPre(absl::string_view pre);

// Splits `text` into pieces (views into text). Invalid UTF-8 bytes count as
// "other" characters.
std::vector<absl::string_view> Pretokenize(absl::string_view text, PretokenizerKind kind);

// A piece of text that is either plain text or one added/special token.
struct TextSegment {
  absl::string_view text;
  int id = -1;  // >= 0: an added token with this id
};
// Splits text at occurrences of the given literal token texts (leftmost
// match, longest token on ties), as HF's added-vocabulary pass does.
struct AddedToken {
  std::string content;
  int id;
};
std::vector<TextSegment> SplitOnAddedTokens(absl::string_view text, const std::vector<AddedToken>& tokens);

// lstrip / rstrip added tokens (tokenizer.json's flags; Phi-3's <|user|>,
// <|end|>, ... are rstrip): a token's segment takes the whitespace beside it
// from the plain segment next to it, which is then not encoded (a plain
// segment left empty is dropped), as HF tokenizers' AddedVocabulary widens
// its match. `segments` are SplitOnAddedTokens' (consecutive views of one
// text); `flags[id]` has bit 0 for lstrip and bit 1 for rstrip (ids past
// its end have neither). Whitespace is Unicode's White_Space (HF's
// char::is_whitespace), or with `ascii_whitespace` C's isspace characters
// only (llama.cpp's test on the bytes).
inline constexpr uint8_t kAddedTokenLstrip = 1;
inline constexpr uint8_t kAddedTokenRstrip = 2;
void StripBesideAddedTokens(std::vector<TextSegment>& segments, const std::vector<uint8_t>& flags,
                            bool ascii_whitespace = false);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_PRETOKENIZER_H_
