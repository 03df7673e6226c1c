// libFuzzer entry point for the HTTP gateway's request bodies: the native and
// OpenAI-compatible parsers, then the checks both doors share (contracts in
// http_request_fuzz_target.h).
// Built by the fuzz preset and run by ./dev fuzz; without clang the same body
// runs in tests/server/http_request_fuzz_test.cc with a fixed-seed mutator.
// Reads stories260K's tokenizer from ../shared/models (path compiled in).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/http_request_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attnserve::fuzz::HttpFuzzContext* ctx = [] {
    auto c = attnserve::fuzz::LoadHttpFuzzContext(ATTNSERVE_SHARED_DIR);
    if (!c.ok()) {
      std::fprintf(stderr, "http_request_fuzzer: cannot load stories260K's tokenizer: %s\n",
                   c.status().ToString().c_str());
      std::abort();
    }
    return new attnserve::fuzz::HttpFuzzContext(std::move(*c));
  }();
  attnserve::fuzz::HttpRequestFuzzOne(*ctx, data, size);
  return 0;
}
