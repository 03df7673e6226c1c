// The double Hugging Face tokenizers reads for a number of a tokenizer.json.
//
// tokenizers parses JSON with serde_json, which (without its float_roundtrip
// feature, off in tokenizers) reads a number as its decimal digits in a u64
// converted to double and then ONE multiply or divide by a power of ten: two
// roundings, so about one value in eight of a SentencePiece vocabulary's
// 17-digit scores comes out one unit in the last place away from the
// correctly rounded double every other parser (nlohmann, Python) gives. A
// Unigram Viterbi compares sums of those scores, and where two segmentations
// tie in exact arithmetic (runs of one character: "xxxx", "----", "!!!!")
// the last bit picks the winner, so reading the scores the library's way is
// what makes the ids the library's.
//
// The file's digits are recovered as the shortest decimal that round-trips
// `correctly_rounded` (what tokenizers' own writer and Python's json write).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_SERDE_JSON_FLOAT_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_SERDE_JSON_FLOAT_H_

namespace attnserve {

// serde_json's value for the number whose correctly rounded value is
// `correctly_rounded`. Non-finite values and integers are returned as they
// are (serde reads an integer exactly).
double SerdeJsonFloat(double correctly_rounded);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_SERDE_JSON_FLOAT_H_
