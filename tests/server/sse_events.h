// Helpers for the tests of the APIs streamed as typed SSE events
// (http_openai_responses_test.cc, http_anthropic_test.cc).
#ifndef ATTNSERVE_TESTS_SERVER_SSE_EVENTS_H_
#define ATTNSERVE_TESTS_SERVER_SSE_EVENTS_H_

#include <string>
#include <vector>

#include "attnserve/v1/inference.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// A Generate stream chunk of one token with `text`; with a finish reason,
// the last chunk's usage too.
inline v1::GenerateResponse TextChunk(const std::string& text, v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED,
                                      int prompt_tokens = 5, int cached_prompt_tokens = 4) {
  v1::GenerateResponse chunk;
  chunk.add_token_ids(7);
  chunk.set_text(text);
  if (finish != v1::FINISH_REASON_UNSPECIFIED) {
    chunk.set_finish_reason(finish);
    chunk.mutable_usage()->set_prompt_tokens(prompt_tokens);
    chunk.mutable_usage()->set_generated_tokens(2);
    chunk.mutable_usage()->set_cached_prompt_tokens(cached_prompt_tokens);
  }
  return chunk;
}

// The events of "event: <type>\ndata: {...}\n\n" blocks, each checked to
// name its own type.
inline std::vector<nlohmann::json> SseEvents(const std::string& sse) {
  std::vector<nlohmann::json> out;
  for (size_t at = 0; at < sse.size();) {
    const size_t end = sse.find("\n\n", at);
    const std::string block = sse.substr(at, end - at);
    const size_t newline = block.find('\n');
    nlohmann::json e = nlohmann::json::parse(block.substr(newline + 7));
    EXPECT_EQ(block.substr(7, newline - 7), e["type"].get<std::string>());
    out.push_back(std::move(e));
    at = end + 2;
  }
  return out;
}

}  // namespace attnserve

#endif  // ATTNSERVE_TESTS_SERVER_SSE_EVENTS_H_
