#include "engine/tokenizers/streaming_detokenizer.h"

namespace attnserve {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Length of the UTF-8 sequence a lead byte announces, 0 if it cannot lead.
int SequenceLength(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether byte k (1-based) of a sequence led by `lead` may be `c`
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
bool ValidContinuation(unsigned char lead, int k, unsigned char c) {
  if (k == 1) {
    if (lead == 0xE0) return c >= 0xA0 && c <= 0xBF;
    if (lead == 0xED) return c >= 0x80 && c <= 0x9F;
    if (lead == 0xF0) return c >= 0x90 && c <= 0xBF;
    if (lead == 0xF4) return c >= 0x80 && c <= 0x8F;
  }
  return c >= 0x80 && c <= 0xBF;
}

}  // namespace

std::string TakeCompleteUtf8(std::string& bytes, bool final) {
  std::string out;
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const unsigned char lead = static_cast<unsigned char>(bytes[i]);
    const int len = SequenceLength(lead);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    int k = 1;
    while (k < len && i + k < n && ValidContinuation(lead, k, static_cast<unsigned char>(bytes[i + k]))) ++k;
    if (k == len) {
      out.append(bytes, i, len);
      i += len;
    } else if (i + k == n && !final) {
      break;  // a valid start that may still complete: hold it
    } else {
      out += kReplacement;  // broken sequence: replace its valid prefix
      i += k;
    }
  }
  bytes.erase(0, i);
  return out;
}

std::string StreamingDetokenizer::Push(int32_t token) {
  if (tokenizer_.IsControl(token)) {
    // Control tokens add no text (Tokenizer::TokenBytes) unless written out.
    if (write_special_) {
      pending_ += tokenizer_.IdToPiece(token);
      after_written_special_ = true;
    }
  } else {
    // After a written special token the piece does not begin the text: it is
    // read as following an ordinary token (itself stands in for one), as
    // InferenceCore::Detokenize reads it.
    pending_ += tokenizer_.TokenBytes(token, after_written_special_ ? token : prev_);
    after_written_special_ = false;
    prev_ = token;
  }
  return TakeCompleteUtf8(pending_, /*final=*/false);
}

std::string StreamingDetokenizer::Flush() { return TakeCompleteUtf8(pending_, /*final=*/true); }

}  // namespace attnserve
