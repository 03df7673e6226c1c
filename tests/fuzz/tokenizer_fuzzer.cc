// libFuzzer entry point for the tokenizers: the decoders' Encode / Decode
// round trips and streaming detokenizer, the encoder's WordPiece (contracts
// in tokenizer_fuzz_target.h).
// Built by the fuzz preset and run by ./dev fuzz; without clang the same body
// runs in tests/engine/tokenizers/tokenizer_fuzz_test.cc with a fixed-seed
// mutator. Reads stories260K from ../shared/models, two tokenizer.json
// files from tests/golden and MiniLM's from the venv (paths compiled in).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/tokenizer_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attnserve::fuzz::TokenizerFuzzSet* set = [] {
    auto s = attnserve::fuzz::LoadTokenizerFuzzSet(ATTNSERVE_SOURCE_DIR, ATTNSERVE_SHARED_DIR);
    if (!s.ok()) {
      std::fprintf(stderr, "tokenizer_fuzzer: cannot load the tokenizers: %s\n", s.status().ToString().c_str());
      std::abort();
    }
    return new attnserve::fuzz::TokenizerFuzzSet(std::move(*s));
  }();
  attnserve::fuzz::TokenizerFuzzOne(*set, data, size);
  return 0;
}
