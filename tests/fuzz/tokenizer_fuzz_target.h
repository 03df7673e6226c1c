// The tokenizers' fuzz body, shared by the libFuzzer entry point
// (tokenizer_fuzzer.cc, clang -fsanitize=fuzzer builds) and the gtest that
// drives it with a fixed-seed mutation loop (GCC has no libFuzzer):
// tests/engine/tokenizers/tokenizer_fuzz_test.cc.
//
// These are the paths request input reaches: a prompt's text goes to
// Encode, a Detokenize call's ids to Decode, generated ids through the
// StreamingDetokenizer into every streamed message. One tokenizer of each
// kind, loaded from real files: SentencePiece BPE from stories260K's GGUF,
// the same vocabulary as an HF tokenizer.json (Metaspace), and SmolLM's
// byte-level BPE tokenizer.json.
//
// The encoder's WordPiece tokenizer (all-MiniLM-L6-v2's tokenizer.json from
// the venv, or ATTNSERVE_MINILM_DIR) is fuzzed beside them: every Encode
// request's text reaches it.
//
// The first input byte picks the tokenizer and the mode (selector % 8: 0-5
// the decoder tokenizers, text or ids; 6-7 WordPiece); the rest is the
// payload. Contracts (a violation aborts, which libFuzzer and the gtest
// report):
// - text: Encode of any bytes returns a Status or ids in [0, vocab); for
//   valid UTF-8, Decode of those ids gives the text back exactly (all three
//   are lossless: byte fallback or byte-level pieces cover every byte), but
//   for two losses of the references themselves: in both SentencePiece
//   kinds a literal U+2581 "▁" is the same piece as a space and decodes as
//   one (sentencepiece, HF tokenizers); and HF's Metaspace with
//   prepend_scheme "first" prepends no "▁" to a text that already starts
//   with one while its decoder strips one leading space, so a leading space
//   is lost (HF tokenizers 0.23: "  two" -> " two", " one" -> "one").
// - ids: payload byte pairs as ids (mod vocab). Every chunk the streaming
//   detokenizer returns is valid UTF-8, and the chunks plus Flush equal the
//   tokens' bytes (TokenBytes in turn) with invalid sequences replaced as
//   TakeCompleteUtf8 replaces them: streaming never splits, drops or
//   reorders text. When those bytes are valid UTF-8 they also equal the
//   whole-sequence Decode (what the Detokenize RPC returns). Known and
//   allowed: for invalid bytes from byte-fallback tokens the HF
//   SentencePiece Decode follows HF's ByteFallback decoder (one U+FFFD per
//   byte token of an invalid run, ASCII ones included), the stream one
//   U+FFFD per invalid sequence.
// - WordPiece: the payload's first byte sets max_length (0: none) and
//   whether [CLS]/[SEP] are added. Invalid UTF-8 is refused with a Status,
//   valid UTF-8 never; ids are in range, [CLS] first and [SEP] last when
//   added; offsets lie inside the text on character boundaries, in order;
//   with max_length, at most that many tokens, `truncated` exactly when the
//   untruncated length exceeds it, and the kept tokens are the untruncated
//   encoding's first ones; Decode of the ids is valid UTF-8.
#ifndef ATTNSERVE_TESTS_FUZZ_TOKENIZER_FUZZ_TARGET_H_
#define ATTNSERVE_TESTS_FUZZ_TOKENIZER_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/streaming_detokenizer.h"
#include "engine/tokenizers/tokenizer.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/unicode_util.h"
#include "engine/tokenizers/wordpiece.h"
#include "tests/engine/models/encoder_test_util.h"

namespace attnserve::fuzz {

struct TokenizerFuzzSet {
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  std::unique_ptr<WordPieceTokenizer> wordpiece;
  std::unique_ptr<EncoderTokenizer> unigram;  // XLM-R's (Precompiled + Metaspace + Unigram)
  std::unique_ptr<EncoderTokenizer> bpe;      // RoBERTa's (byte-level BPE, trimmed offsets)
  // The three kinds again with added tokens matched after normalization
  // (tests/golden/encoder/added_tokens_golden.json).
  std::vector<std::unique_ptr<EncoderTokenizer>> with_normalized_added;
};

// `source_dir`: the repository (tests/golden); `shared_dir`: ../shared.
inline absl::StatusOr<TokenizerFuzzSet> LoadTokenizerFuzzSet(const std::string& source_dir,
                                                             const std::string& shared_dir) {
  TokenizerFuzzSet set;
  absl::StatusOr<std::unique_ptr<GgufFile>> gguf = GgufFile::Open(shared_dir + "/models/stories260K/stories260K.gguf");
  if (!gguf.ok()) return gguf.status();
  absl::StatusOr<std::unique_ptr<Tokenizer>> sp = TokenizerFromGguf(**gguf);
  if (!sp.ok()) return sp.status();
  set.tokenizers.push_back(std::move(*sp));
  for (const char* name : {"tok512_metaspace_tokenizer.json", "smollm_tokenizer.json"}) {
    absl::StatusOr<std::unique_ptr<Tokenizer>> t =
        TokenizerFromHfJson(source_dir + "/tests/golden/decoder_tokenizers/" + name);
    if (!t.ok()) return t.status();
    set.tokenizers.push_back(std::move(*t));
  }
  absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> wp =
      WordPieceTokenizer::FromFile(testing_util::MiniLmDir() + "/tokenizer.json");
  if (!wp.ok()) return wp.status();
  set.wordpiece = std::move(*wp);
  absl::StatusOr<std::unique_ptr<EncoderTokenizer>> unigram =
      LoadEncoderTokenizer(source_dir + "/tests/golden/encoder_models/xlmr_tiny/tokenizer.json");
  if (!unigram.ok()) return unigram.status();
  set.unigram = std::move(*unigram);
  absl::StatusOr<std::unique_ptr<EncoderTokenizer>> bpe =
      LoadEncoderTokenizer(source_dir + "/tests/golden/encoder_models/roberta_tiny/tokenizer.json");
  if (!bpe.ok()) return bpe.status();
  set.bpe = std::move(*bpe);
  absl::StatusOr<nlohmann::json> added = ReadJsonFile(source_dir + "/tests/golden/encoder/added_tokens_golden.json");
  if (!added.ok()) return added.status();
  for (const char* kind : {"wordpiece", "unigram", "bpe"}) {
    absl::StatusOr<std::unique_ptr<EncoderTokenizer>> t =
        EncoderTokenizerFromJson((*added)[kind]["tokenizer"], std::string(kind) + "/tokenizer.json");
    if (!t.ok()) return t.status();
    set.with_normalized_added.push_back(std::move(*t));
  }
  return set;
}

namespace tokenizer_fuzz_internal {

[[noreturn]] inline void Fail(const Tokenizer& t, const char* what, std::string_view detail) {
  std::fprintf(stderr, "tokenizer fuzz (%.*s): %s: %.*s\n", static_cast<int>(t.kind().size()), t.kind().data(), what,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline std::string Escaped(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace tokenizer_fuzz_internal

// The encoder tokenizers' part (selectors 6-7 WordPiece, 8 Unigram, 9
// byte-level BPE, 10-12 the three with normalized added tokens); true
// when the text was encoded.
inline bool EncoderTokenizerFuzzOne(const EncoderTokenizer& wp, std::string_view input) {
  using tokenizer_fuzz_internal::Escaped;
  if (input.empty()) return false;
  const uint8_t knobs = static_cast<uint8_t>(input[0]);
  const bool add_special = (knobs & 1) != 0;
  int max_length = knobs >> 1 >= 64 ? 0 : knobs >> 1;  // 0..63, or none
  // The template's tokens around an empty text ([CLS] [SEP], <s> </s>).
  const absl::StatusOr<TextEncoding> empty = wp.Encode("", /*add_special_tokens=*/true);
  if (!empty.ok() || empty->ids.size() != 2) std::abort();
  // They take two of max_length; callers pass the model's limit.
  if (add_special && max_length == 1) max_length = 2;
  const absl::string_view text(input.data() + 1, input.size() - 1);
  auto fail = [&](const char* what, const std::string& detail) {
    std::fprintf(stderr, "tokenizer fuzz (%s): %s: %s (text %s)\n", std::string(wp.kind()).c_str(), what, detail.c_str(),
                 Escaped(std::string_view(text.data(), text.size())).c_str());
    std::abort();
  };
  absl::StatusOr<TextEncoding> enc = wp.Encode(text, add_special, max_length);
  if (!IsValidUtf8(text)) {
    if (enc.ok()) fail("Encode accepted invalid UTF-8", "");
    return false;
  }
  if (!enc.ok()) fail("Encode refused valid UTF-8", enc.status().ToString());
  const std::vector<int32_t>& ids = enc->ids;
  if (enc->offsets.size() != ids.size()) fail("offsets and ids differ in length", std::to_string(enc->offsets.size()));
  for (int32_t id : ids) {
    if (id < 0 || id >= wp.vocab_size()) fail("id out of range", std::to_string(id));
  }
  if (add_special && (ids.size() < 2 || ids.front() != empty->ids.front() || ids.back() != empty->ids.back())) {
    fail("the template's first and last tokens are missing", std::to_string(ids.size()) + " ids");
  }
  uint32_t last_begin = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto [begin, end] = enc->offsets[i];
    if (add_special && (i == 0 || i + 1 == ids.size())) continue;
    if (begin > end || end > text.size()) fail("offset outside the text", std::to_string(begin) + ".." + std::to_string(end));
    if (begin < last_begin) fail("offsets out of order", std::to_string(begin) + " after " + std::to_string(last_begin));
    last_begin = begin;
    if (!IsValidUtf8(text.substr(begin, end - begin))) fail("offset splits a character", std::to_string(begin) + ".." + std::to_string(end));
  }
  if (max_length > 0) {
    if (static_cast<int>(ids.size()) > max_length) fail("more tokens than max_length", std::to_string(ids.size()));
    if (enc->truncated != (enc->untruncated_length > max_length)) fail("truncated flag wrong", std::to_string(enc->untruncated_length));
    absl::StatusOr<TextEncoding> full = wp.Encode(text, add_special, 0);
    if (!full.ok() || full->ids.size() != static_cast<size_t>(enc->untruncated_length)) fail("untruncated length wrong", std::to_string(enc->untruncated_length));
    const size_t body = ids.size() - (add_special ? 1 : 0);  // the kept tokens, [SEP] aside
    for (size_t i = 0; i < body; ++i) {
      if (full->ids[i] != ids[i]) fail("truncation is not a prefix", std::to_string(i));
    }
  } else if (enc->truncated) {
    fail("truncated without max_length", "");
  }
  for (bool skip : {true, false}) {
    absl::StatusOr<std::string> back = wp.Decode(ids, skip);
    if (!back.ok()) fail("Decode of in-range ids failed", back.status().ToString());
    if (!IsValidUtf8(*back)) fail("Decode gave invalid UTF-8", Escaped(*back));
  }
  return true;
}

// Returns true when a text mode's input was encoded (for the gtest's
// bookkeeping: both outcomes must occur); false otherwise.
inline bool TokenizerFuzzOne(const TokenizerFuzzSet& set, const uint8_t* data, size_t size) {
  using tokenizer_fuzz_internal::Escaped;
  using tokenizer_fuzz_internal::Fail;
  if (size == 0 || set.tokenizers.size() != 3 || set.wordpiece == nullptr || set.unigram == nullptr ||
      set.bpe == nullptr || set.with_normalized_added.size() != 3) {
    return false;
  }
  const int selector = data[0] % 13;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (selector >= 10) return EncoderTokenizerFuzzOne(*set.with_normalized_added[selector - 10], payload);
  if (selector == 9) return EncoderTokenizerFuzzOne(*set.bpe, payload);
  if (selector == 8) return EncoderTokenizerFuzzOne(*set.unigram, payload);
  if (selector >= 6) return EncoderTokenizerFuzzOne(*set.wordpiece, payload);
  const Tokenizer& t = *set.tokenizers[selector % 3];
  const bool ids_mode = selector >= 3;
  if (!ids_mode) {
    TokenizeOptions options;
    options.add_bos = false;
    options.add_eos = false;
    options.parse_special = false;  // special-token texts stay text, so the round trip holds
    const bool valid = IsValidUtf8(absl::string_view(payload.data(), payload.size()));
    absl::StatusOr<std::vector<int32_t>> ids = t.Encode(payload, options);
    if (!ids.ok()) {
      if (valid) Fail(t, "Encode refused valid UTF-8", ids.status().ToString());
      return false;
    }
    for (int32_t id : *ids) {
      if (id < 0 || id >= t.vocab_size()) Fail(t, "Encode gave an id out of range", std::to_string(id));
    }
    if (valid) {
      absl::StatusOr<std::string> text = t.Decode(*ids);
      if (!text.ok()) Fail(t, "Decode of Encode's ids failed", text.status().ToString());
      std::string expected(payload);
      if (t.kind() != "byte_level_bpe") expected = absl::StrReplaceAll(expected, {{"\xe2\x96\x81", " "}});
      if (t.kind() == "hf_sentencepiece_bpe" && !expected.empty() && expected[0] == ' ') expected.erase(0, 1);
      if (*text != expected) Fail(t, "round trip changed the text", Escaped(payload) + " -> " + Escaped(*text));
    }
    return true;
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < payload.size(); i += 2) {
    const uint32_t v = static_cast<uint8_t>(payload[i]) | (static_cast<uint32_t>(static_cast<uint8_t>(payload[i + 1])) << 8);
    ids.push_back(static_cast<int32_t>(v % static_cast<uint32_t>(t.vocab_size())));
  }
  StreamingDetokenizer stream(t);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string chunk = stream.Push(id);
    if (!IsValidUtf8(chunk)) Fail(t, "a streamed chunk is not valid UTF-8", Escaped(chunk));
    streamed += chunk;
  }
  const std::string tail = stream.Flush();
  if (!IsValidUtf8(tail)) Fail(t, "the flushed tail is not valid UTF-8", Escaped(tail));
  streamed += tail;
  std::string bytes;
  int32_t prev = -1;
  for (int32_t id : ids) {
    bytes += t.TokenBytes(id, prev);
    if (!t.IsControl(id)) prev = id;  // Tokenizer::TokenBytes: prev is the last non-control token
  }
  const bool valid = IsValidUtf8(absl::string_view(bytes));
  std::string expected = TakeCompleteUtf8(bytes, /*final=*/true);
  if (streamed != expected) Fail(t, "streamed text differs from the tokens' bytes", Escaped(streamed) + " vs " + Escaped(expected));
  absl::StatusOr<std::string> whole = t.Decode(ids);
  if (!whole.ok()) Fail(t, "Decode of in-range ids failed", whole.status().ToString());
  if (valid && streamed != *whole) {
    std::string id_list;
    for (size_t i = 0; i < ids.size() && i < 8; ++i) id_list += " " + std::to_string(ids[i]) + "=" + Escaped(t.IdToPiece(ids[i]));
    Fail(t, "streamed text differs from Decode", Escaped(streamed) + " vs " + Escaped(*whole) + "; ids" + id_list);
  }
  return false;
}

}  // namespace attnserve::fuzz

#endif  // ATTNSERVE_TESTS_FUZZ_TOKENIZER_FUZZ_TARGET_H_
