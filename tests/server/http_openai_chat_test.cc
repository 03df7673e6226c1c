#include "server/http/openai_chat.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

absl::StatusOr<CompletionCall> Parse(const json& body) { return ParseChatCompletionRequest(body.dump()); }

TEST(OpenAiChatTest, MessagesAndSamplingMapOntoAChatPrompt) {
  absl::StatusOr<CompletionCall> call = Parse(json{
      {"model", "stories260K"},
      {"messages",
       {{{"role", "developer"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Hello"}},
                                                    {{"type", "text"}, {"text", "there"}}})}},
        {{"role", "assistant"}, {"content", "Hi"}},
        {{"role", "user"}, {"content", "Tell me a story."}}}},
      {"max_completion_tokens", 7},
      {"max_tokens", 99},
      {"temperature", 0.5},
      {"top_p", 0.9},
      {"stop", "\n"},
      {"seed", 3},
      {"logprobs", true},
      {"top_logprobs", 2},
      {"n", 2},
      {"top_k", 5}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->format.chat);
  EXPECT_TRUE(call->format.logprobs);
  ASSERT_EQ(call->requests.size(), 2u);
  const v1::GenerateRequest& r = call->requests[0];
  ASSERT_TRUE(r.has_chat());
  ASSERT_EQ(r.chat().messages_size(), 4);
  EXPECT_EQ(r.chat().messages(0).role(), "system");  // developer is OpenAI's newer name for it
  EXPECT_EQ(r.chat().messages(1).content(), "Hello\nthere");  // text parts joined as vLLM
  EXPECT_FALSE(r.chat().has_add_generation_prompt());          // the core's default: true
  EXPECT_EQ(r.sampling().max_new_tokens(), 7);  // max_completion_tokens wins over max_tokens
  EXPECT_FLOAT_EQ(r.sampling().temperature(), 0.5f);
  EXPECT_EQ(r.sampling().top_k(), 5);
  EXPECT_EQ(r.sampling().stop(0), "\n");
  EXPECT_TRUE(r.sampling().logprobs());
  EXPECT_EQ(r.sampling().top_logprobs(), 2);
  EXPECT_EQ(r.sampling().seed(), 3u);
  EXPECT_EQ(call->requests[1].sampling().seed(), 4u);  // sample j gets seed + j
}

TEST(OpenAiChatTest, DefaultsLeaveTheLimitToTheCoreAndContinueTakesNoHeader) {
  absl::StatusOr<CompletionCall> call = Parse(json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_FALSE(call->requests[0].sampling().has_max_new_tokens());
  EXPECT_FALSE(call->format.logprobs);
  EXPECT_FALSE(call->requests[0].sampling().logprobs());
  call = Parse(json{{"messages", {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "The"}}}},
                    {"continue_final_message", true}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->requests[0].chat().continue_final_message());
  ASSERT_TRUE(call->requests[0].chat().has_add_generation_prompt());
  EXPECT_FALSE(call->requests[0].chat().add_generation_prompt());
}

TEST(OpenAiChatTest, BadShapesAndUnsupportedOptionsNameTheField) {
  const json user = {{"role", "user"}, {"content", "Hi"}};
  struct Case {
    json body;
    const char* message;
  };
  const std::vector<Case> cases = {
      {json::object(), "messages: required"},
      {json{{"messages", "Hi"}}, "messages: must be an array of messages"},
      {json{{"messages", json::array()}}, "messages: the conversation is empty"},
      {json{{"messages", {{{"content", "Hi"}}}}}, "messages[0].role: required"},
      {json{{"messages", {{{"role", 3}, {"content", "Hi"}}}}}, "messages[0].role: must be a string"},
      {json{{"messages", {{{"role", "tool"}, {"content", "42"}}}}}, "messages[0].role: not supported ('tool'"},
      {json{{"messages", {{{"role", "user"}}}}}, "messages[0].content: required"},
      {json{{"messages", {{{"role", "user"}, {"content", 5}}}}},
       "messages[0].content: must be a string or an array of text parts"},
      {json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}},
       "messages[0].content[0].type: not supported ('image_url': text only)"},
      {json{{"messages", {user}}, {"tools", {{{"type", "function"}}}}}, "tools: not supported (no tool calling)"},
      {json{{"messages", {user}}, {"tool_choice", "auto"}}, "tool_choice: not supported"},
      {json{{"messages", {user}}, {"response_format", {{"type", "json_schema"}, {"json_schema", json::object()}}}},
       "response_format.json_schema.schema: required, an object"},
      {json{{"messages", {user}}, {"response_format", {{"type", "xml"}}}}, "response_format: not supported"},
      {json{{"messages", {user}}, {"response_format", "json_object"}}, "response_format: not supported"},
      {json{{"messages", {user}}, {"echo", true}}, "echo: not supported"},
      {json{{"messages", {user}}, {"top_logprobs", 2}}, "top_logprobs: only with \"logprobs\": true"},
      {json{{"messages", {user}}, {"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs: 21 is outside [0, 20]"},
      {json{{"messages", {user}}, {"logprobs", 3}}, "logprobs: must be"},
      {json{{"messages", {user}}, {"max_completion_tokens", "many"}}, "max_completion_tokens: must be"},
      {json{{"messages", {user}}, {"n", 0}}, "n: 0 is outside [1, 256]"},
      {json{{"messages", {user}}, {"stream_options", {{"include_usage", true}}}},
       "stream_options: only allowed with \"stream\": true"},
      {json{{"messages", {user}}, {"guided_regex", "a+"}}, "guided_regex: not supported"},
      {json{{"messages", {user}}, {"chat_template", "{{ messages }}"}}, "chat_template: not supported"},
      {json{{"messages", {user}}, {"chat_template_kwargs", {{"enable_thinking", false}}}},
       "chat_template_kwargs: not supported"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CompletionCall> call = Parse(c.body);
    ASSERT_FALSE(call.ok()) << c.body.dump();
    EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << c.body.dump();
    EXPECT_THAT(std::string(call.status().message()), HasSubstr(c.message)) << c.body.dump();
  }
  // Accepted as no-ops: no tools, tool_choice "none", a text response format.
  absl::StatusOr<CompletionCall> ok = Parse(json{{"messages", {user}},
                                                 {"tools", json::array()},
                                                 {"tool_choice", "none"},
                                                 {"response_format", {{"type", "text"}}},
                                                 {"echo", false}});
  EXPECT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_TEXT);
  // JSON mode maps onto the proto's response_format.
  absl::StatusOr<CompletionCall> json_mode = Parse(json{{"messages", {user}}, {"response_format", {{"type", "json_object"}}}});
  ASSERT_TRUE(json_mode.ok()) << json_mode.status();
  EXPECT_EQ(json_mode->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_OBJECT);
}

std::vector<v1::GenerateResponse> TwoChunks() {
  std::vector<v1::GenerateResponse> chunks(2);
  const char* texts[] = {"Once", " upon"};
  for (int i = 0; i < 2; ++i) {
    chunks[i].add_token_ids(10 + i);
    chunks[i].set_text(texts[i]);
    v1::PositionLogprobs* lp = chunks[i].add_logprobs();
    lp->set_logprob(-0.5f * (i + 1));
    v1::TokenLogprob* top = lp->add_top();
    top->set_token_id(10 + i);
    top->set_text(texts[i]);
    top->set_logprob(-0.5f * (i + 1));
  }
  chunks[1].set_finish_reason(v1::FINISH_REASON_STOP_STRING);
  chunks[1].set_stop_string("\n");
  v1::GenerateUsage* usage = chunks[1].mutable_usage();
  usage->set_prompt_tokens(9);
  usage->set_generated_tokens(2);
  usage->set_peak_kv_cache_bytes(4096);
  return chunks;
}

TEST(OpenAiChatTest, ResponseObject) {
  const CompletionIdentity id{"chatcmpl-1", 1700000000, "stories260K"};
  json j = ChatCompletionResponse({TwoChunks()}, id, CompletionFormat{.chat = true});
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "stories260K");
  ASSERT_EQ(j["choices"].size(), 1u);
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"], json({{"role", "assistant"}, {"content", "Once upon"}}));
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(choice["stop_reason"], "\n");
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 9);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 11);
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], 4096);

  j = ChatCompletionResponse({TwoChunks()}, id, CompletionFormat{.logprobs = true, .chat = true});
  const json& content = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[1]["token"], " upon");
  EXPECT_FLOAT_EQ(content[1]["logprob"].get<float>(), -1.0f);
  EXPECT_EQ(content[1]["bytes"], json({32, 117, 112, 111, 110}));
  ASSERT_EQ(content[1]["top_logprobs"].size(), 1u);
  EXPECT_EQ(content[1]["top_logprobs"][0]["token"], " upon");
}

TEST(OpenAiChatTest, StreamChunks) {
  const CompletionIdentity id{"chatcmpl-2", 5, "m"};
  json role = ChatRoleChunk(id, 1, ChunkUsage::kOnLast);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 1);
  EXPECT_EQ(role["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_FALSE(role.contains("usage"));
  const std::vector<v1::GenerateResponse> chunks = TwoChunks();
  json first = ChatCompletionChunk(chunks[0], id, CompletionFormat{.chat = true}, 0, ChunkUsage::kOnLast);
  EXPECT_EQ(first["choices"][0]["delta"], json({{"content", "Once"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json last = ChatCompletionChunk(chunks[1], id, CompletionFormat{.logprobs = true, .chat = true}, 0,
                                  ChunkUsage::kOnLast);
  EXPECT_EQ(last["choices"][0]["delta"], json({{"content", " upon"}}));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["choices"][0]["logprobs"]["content"][0]["token"], " upon");
  EXPECT_EQ(last["usage"]["completion_tokens"], 2);
  json with_null = ChatCompletionChunk(chunks[0], id, CompletionFormat{.chat = true}, 0, ChunkUsage::kNull);
  EXPECT_TRUE(with_null["usage"].is_null());
  v1::GenerateUsage total;
  AddCompletionUsage(chunks[1].usage(), &total);
  EXPECT_EQ(CompletionUsageChunk(total, id, "chat.completion.chunk")["object"], "chat.completion.chunk");
}

}  // namespace
}  // namespace attnserve
