// Anthropic's Messages API's pure mapping (server/http/anthropic_messages.h):
// a Messages body onto chat's GenerateRequest, chat's errors renamed, the
// message object and the stream events from the engine's chunks. The
// anthropic SDK runs against the binary in
// tests/integration/test_http_anthropic.py.
#include "server/http/anthropic_messages.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/sse_events.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr AutoToolParser kLlama3Json = AutoToolParser::kLlama3Json;

absl::StatusOr<AnthropicCall> Parse(const json& body, ToolSupport tools = {}) {
  return ParseAnthropicMessagesRequest(body.dump(), tools);
}

TEST(AnthropicRequestTest, SystemMessagesAndSamplingBecomeTheChatPrompt) {
  absl::StatusOr<AnthropicCall> call = Parse(json{
      {"model", "m"},
      {"system", {{{"type", "text"}, {"text", "Be brief."}}, {{"type", "text"}, {"text", "Be kind."}}}},
      {"messages",
       {{{"role", "user"}, {"content", "Hello"}},
        {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "Hi"}}}}},
        {{"role", "user"}, {"content", "Tell me a story."}}}},
      {"max_tokens", 7},
      {"temperature", 0.5},
      {"top_k", 3},
      {"stop_sequences", {"\n\n"}},
      {"metadata", {{"user_id", "u"}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::GenerateRequest& r = call->completion.requests[0];
  ASSERT_EQ(r.chat().messages_size(), 4);
  EXPECT_EQ(r.chat().messages(0).role(), "system");
  EXPECT_EQ(r.chat().messages(0).content(), "Be brief.\nBe kind.");
  EXPECT_EQ(r.chat().messages(2).content(), "Hi");
  EXPECT_EQ(r.sampling().max_new_tokens(), 7);
  EXPECT_FLOAT_EQ(r.sampling().temperature(), 0.5f);
  EXPECT_EQ(r.sampling().top_k(), 3);
  ASSERT_EQ(r.sampling().stop_size(), 1);
  EXPECT_EQ(r.sampling().stop(0), "\n\n");
  EXPECT_THAT(call->message_fields, ElementsAre("system", "messages[0]", "messages[1]", "messages[2]"));
}

TEST(AnthropicRequestTest, ToolUseAndToolResultBlocksAreChatsToolTurns) {
  const json body{
      {"max_tokens", 5},
      {"tools", {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}}},
      {"messages",
       {{{"role", "user"}, {"content", "a"}},
        {{"role", "assistant"},
         {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "f"}, {"input", {{"x", 1}}}}}}},
        {{"role", "user"},
         {"content", {{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"content", {{{"type", "text"}, {"text", "one"}}}}},
                      {{"type", "text"}, {"text", "and?"}}}}}}}};
  absl::StatusOr<AnthropicCall> call =
      Parse(body, ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->completion.requests[0].chat();
  ASSERT_EQ(chat.messages_size(), 4);
  ASSERT_EQ(chat.messages(1).tool_calls_size(), 1);
  EXPECT_EQ(chat.messages(1).tool_calls(0).name(), "f");
  EXPECT_EQ(chat.messages(1).tool_calls(0).arguments(), "{\"x\":1}");
  EXPECT_EQ(chat.messages(2).role(), "tool");  // the result first, then the user's text
  EXPECT_EQ(chat.messages(2).tool_call_id(), "t1");
  EXPECT_EQ(chat.messages(2).content(), "one");
  EXPECT_EQ(chat.messages(3).content(), "and?");
  EXPECT_THAT(call->message_fields, ElementsAre("messages[0]", "messages[1]", "messages[2].content[0]", "messages[2]"));
  // tool_choice: "any" is chat's "required", "tool" a named function.
  json any = body;
  any["tool_choice"] = {{"type", "any"}, {"disable_parallel_tool_use", true}};
  call = Parse(any, ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->completion.format.tools.mode, ToolCallFormat::Mode::kRequired);
  EXPECT_THAT(call->completion.requests[0].sampling().json_schema(), HasSubstr("\"maxItems\":1"));
  any["tool_choice"] = {{"type", "tool"}, {"name", "f"}};
  call = Parse(any, ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->completion.format.tools.mode, ToolCallFormat::Mode::kNamed);
}

TEST(AnthropicRequestTest, CountTokensIsTheDecodersChatTokenizeRequest) {
  absl::StatusOr<v1::TokenizeRequest> r = ParseAnthropicCountTokensRequest(
      json{{"model", "m"}, {"system", "s"}, {"messages", {{{"role", "user"}, {"content", "a"}}}}}.dump(), {});
  ASSERT_TRUE(r.ok()) << r.status();  // no max_tokens needed
  EXPECT_EQ(r->model(), v1::MODEL_KIND_DECODER);
  ASSERT_EQ(r->chat().messages_size(), 2);
  EXPECT_EQ(r->chat().messages(0).role(), "system");
  EXPECT_EQ(r->chat().messages(1).content(), "a");
  EXPECT_THAT(std::string(ParseAnthropicCountTokensRequest(R"({"messages": [{"role": "bot", "content": "a"}]})", {})
                              .status()
                              .message()),
              HasSubstr("messages[0].role"));
}

TEST(AnthropicRequestTest, RefusalsNameTheMessagesField) {
  const json user = {{{"role", "user"}, {"content", "a"}}};
  const std::pair<json, const char*> bad[] = {
      {json{{"messages", user}}, "max_tokens: required"},
      {json{{"max_tokens", 5}}, "messages: required"},
      {json{{"max_tokens", 5}, {"messages", json::array()}}, "messages: must not be empty"},
      {json{{"max_tokens", 5}, {"messages", user}, {"temperature", 1.5}}, "temperature = 1.5: must be in [0, 1]"},
      {json{{"max_tokens", 5}, {"messages", {{{"role", "system"}, {"content", "a"}}}}},
       "messages[0].role: 'system' is not one of"},
      {json{{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}}}}}}},
       "messages[0].content[0].type: not supported"},
      {json{{"max_tokens", 5}, {"messages", user}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}},
       "thinking: not supported (the model does not think apart (no --reasoning-parser)"},
      {json{{"max_tokens", 5}, {"messages", user}, {"thinking", {{"type", "sometimes"}}}},
       "thinking.type: 'sometimes' is not one of"},
      {json{{"max_tokens", 5}, {"messages", {{{"role", "assistant"}, {"content", {{{"type", "redacted_thinking"}}}}}}}},
       "messages[0].content[0].type: not supported ('redacted_thinking'"},
      {json{{"max_tokens", 5}, {"messages", user}, {"tools", {{{"type", "web_search_20250305"}, {"name", "w"}}}}},
       "tools[0].type: not supported"},
      {json{{"max_tokens", 5}, {"messages", user}, {"tool_choice", {{"type", "sometimes"}}}},
       "tool_choice.type: 'sometimes'"},
      {json{{"max_tokens", 5}, {"messages", user}, {"output_config", {{"effort", "high"}}}},
       "output_config.effort: not supported"},
      {json{{"max_tokens", 5}, {"messages", user}, {"output_config", {{"format", {{"type", "regex"}}}}}},
       "output_config.format.type: not supported"},
      {json{{"max_tokens", "ten"}, {"messages", user}}, "max_tokens: must be an integer"},
      {json{{"max_tokens", 5}, {"messages", user}, {"stop_sequences", {1}}}, "stop_sequences"},
  };
  for (const auto& [body, expected] : bad) {
    absl::StatusOr<AnthropicCall> call = Parse(body);
    ASSERT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(call.status().message(), HasSubstr(expected)) << body;
    EXPECT_THAT(call.status().message(), ::testing::Not(HasSubstr("max_completion_tokens"))) << body;
  }
  EXPECT_EQ(AnthropicError(absl::InvalidArgumentError("bad")),
            json::parse(R"({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})"));
  EXPECT_EQ(AnthropicError(absl::ResourceExhaustedError("q"))["error"]["type"], "rate_limit_error");
  EXPECT_EQ(AnthropicError(absl::UnauthenticatedError("k"))["error"]["type"], "authentication_error");
  EXPECT_EQ(AnthropicError(absl::UnavailableError("d"))["error"]["type"], "overloaded_error");
}

v1::GenerateResponse Chunk(const std::string& text, v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED) {
  return TextChunk(text, finish, 20, 16);
}

TEST(AnthropicMessageTest, ContentStopReasonsAndUsage) {
  absl::StatusOr<AnthropicCall> call = Parse(json{{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "a"}}}}});
  ASSERT_TRUE(call.ok());
  const AnthropicIdentity id{"msg_abc", "m"};
  nlohmann::ordered_json m = AnthropicMessage(*call, {Chunk("He"), Chunk("llo", v1::FINISH_REASON_LENGTH)}, id);
  EXPECT_EQ(m["content"], nlohmann::ordered_json::parse(R"([{"type": "text", "text": "Hello"}])"));
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_EQ(m["usage"], nlohmann::ordered_json::parse(R"({"input_tokens": 4, "cache_creation_input_tokens": 0,
                                                          "cache_read_input_tokens": 16, "output_tokens": 2})"));
  EXPECT_EQ(AnthropicMessage(*call, {Chunk("Hi", v1::FINISH_REASON_EOS)}, id)["stop_reason"], "end_turn");
  v1::GenerateResponse stopped = Chunk("Hi", v1::FINISH_REASON_STOP_STRING);
  stopped.set_stop_string("\n\n");
  m = AnthropicMessage(*call, {stopped}, id);
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "\n\n");
  // Nothing written: no content block, as Anthropic answers.
  EXPECT_EQ(AnthropicMessage(*call, {Chunk("", v1::FINISH_REASON_EOS)}, id)["content"], nlohmann::ordered_json::array());
}

TEST(AnthropicStreamTest, TextThenAToolUseBlockInOrder) {
  absl::StatusOr<AnthropicCall> text_call =
      Parse(json{{"max_tokens", 5}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "a"}}}}});
  ASSERT_TRUE(text_call.ok());
  AnthropicStream text(*text_call, AnthropicIdentity{"msg_abc", "m"});
  v1::GenerateResponse first = Chunk("He");
  first.set_prompt_token_count(21);
  first.set_cached_prompt_token_count(16);
  std::string sse = text.Start(first);
  sse += text.Next(first);
  sse += text.Next(Chunk("llo", v1::FINISH_REASON_EOS));
  std::vector<json> events = SseEvents(sse);
  std::vector<std::string> types;
  for (const json& e : events) types.push_back(e["type"]);
  EXPECT_THAT(types, ElementsAre("message_start", "content_block_start", "content_block_delta", "content_block_delta",
                                 "content_block_stop", "message_delta", "message_stop"));
  // message_start splits the prompt's tokens as message_delta does (the
  // cache's apart); message_delta also counts the output.
  EXPECT_EQ(events[0]["message"]["usage"], json::parse(R"({"input_tokens": 5, "cache_creation_input_tokens": 0,
                                                           "cache_read_input_tokens": 16, "output_tokens": 0})"));
  EXPECT_EQ(events[3]["delta"], json::parse(R"({"type": "text_delta", "text": "llo"})"));
  EXPECT_EQ(events[5]["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(events[5]["usage"]["output_tokens"], 2);
  EXPECT_EQ(events[5]["usage"]["cache_read_input_tokens"], 16);

  const json tools = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}};
  absl::StatusOr<AnthropicCall> tool_call = Parse(json{{"max_tokens", 5},
                                                       {"stream", true},
                                                       {"tools", tools},
                                                       {"tool_choice", {{"type", "tool"}, {"name", "f"}}},
                                                       {"messages", {{{"role", "user"}, {"content", "a"}}}}});
  ASSERT_TRUE(tool_call.ok()) << tool_call.status();
  AnthropicStream tool(*tool_call, AnthropicIdentity{"msg_abc", "m"});
  sse = tool.Start(Chunk("{\"x\": "));
  sse += tool.Next(Chunk("{\"x\": "));
  sse += tool.Next(Chunk("1}", v1::FINISH_REASON_EOS));
  events = SseEvents(sse);
  types.clear();
  std::string partial;
  for (const json& e : events) {
    types.push_back(e["type"]);
    if (e["type"] == "content_block_delta") partial += e["delta"]["partial_json"].get<std::string>();
  }
  EXPECT_THAT(types, ElementsAre("message_start", "content_block_start", "content_block_delta", "content_block_delta",
                                 "content_block_stop", "message_delta", "message_stop"));
  EXPECT_EQ(events[1]["content_block"]["type"], "tool_use");
  EXPECT_EQ(events[1]["content_block"]["name"], "f");
  EXPECT_EQ(partial, "{\"x\": 1}");
  EXPECT_EQ(events[5]["delta"]["stop_reason"], "tool_use");
  // Cut by max_tokens: the call's input as far as it was written, as the
  // SDK reads the streamed deltas (partial_json.h), or {} before any.
  nlohmann::ordered_json cut =
      AnthropicMessage(*tool_call, {Chunk("{\"x\": 1, \"y\": [2, "), Chunk("\"ab", v1::FINISH_REASON_LENGTH)},
                       AnthropicIdentity{"msg_abc", "m"});
  EXPECT_EQ(json::parse(cut["content"].dump()),
            json::parse(R"([{"type": "tool_use", "id": "call_msg_abc_0_0", "name": "f", "input": {"x": 1, "y": [2]}}])"));
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
  cut = AnthropicMessage(*tool_call, {Chunk("", v1::FINISH_REASON_LENGTH)}, AnthropicIdentity{"msg_abc", "m"});
  EXPECT_EQ(json::parse(cut["content"].dump())[0]["input"], json::object());
  const std::vector<json> failed = SseEvents(tool.Failed(absl::DeadlineExceededError("deadline passed")));
  EXPECT_EQ(failed[0], json::parse(R"({"type": "error", "error": {"type": "api_error", "message": "deadline passed"}})"));
}

// A hermes answer with text before its call: a text block, then a
// tool_use block, whole and streamed.
TEST(AnthropicStreamTest, HermesTextBeforeACallIsATextBlockThenAToolUseBlock) {
  const json tools = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}};
  absl::StatusOr<AnthropicCall> call =
      Parse(json{{"max_tokens", 50},
                 {"stream", true},
                 {"tools", tools},
                 {"messages", {{{"role", "user"}, {"content", "a"}}}}},
            ToolSupport{.template_shows_tools = true, .auto_parser = AutoToolParser::kHermes});
  ASSERT_TRUE(call.ok()) << call.status();
  const std::vector<v1::GenerateResponse> chunks = {
      Chunk("Checking.\n"), Chunk("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>",
                                  v1::FINISH_REASON_EOS)};
  const nlohmann::ordered_json whole = AnthropicMessage(*call, chunks, AnthropicIdentity{"msg_abc", "m"});
  EXPECT_EQ(json::parse(whole["content"].dump()),
            json::parse(R"([{"type": "text", "text": "Checking.\n"},
                            {"type": "tool_use", "id": "call_msg_abc_0_0", "name": "f", "input": {"x": 1}}])"));
  EXPECT_EQ(whole["stop_reason"], "tool_use");
  AnthropicStream stream(*call, AnthropicIdentity{"msg_abc", "m"});
  std::string sse = stream.Start(chunks[0]);
  for (const v1::GenerateResponse& chunk : chunks) sse += stream.Next(chunk);
  const std::vector<json> events = SseEvents(sse);
  std::vector<std::string> types;
  for (const json& e : events) types.push_back(e["type"]);
  EXPECT_THAT(types, ElementsAre("message_start", "content_block_start", "content_block_delta", "content_block_stop",
                                 "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                                 "message_stop"));
  EXPECT_EQ(events[2]["delta"], json::parse(R"({"type": "text_delta", "text": "Checking.\n"})"));
  EXPECT_EQ(events[4]["content_block"]["type"], "tool_use");
  EXPECT_EQ(events[4]["index"], 1);
  EXPECT_EQ(events[5]["delta"], json::parse(R"({"type": "input_json_delta", "partial_json": "{\"x\": 1}"})"));
  EXPECT_EQ(events[7]["delta"]["stop_reason"], "tool_use");
}

// --reasoning-parser: thinking {"type": "enabled" | "adaptive"} is served
// (the template's switch on: Qwen3's enable_thinking), budget_tokens
// checked as Anthropic checks it and bounding the thinking (the engine's
// thinking budget, "</think>" its end); "disabled" turns the switch off; an
// assistant's thinking blocks given back are its turn's reasoning_content.
TEST(AnthropicRequestTest, ThinkingIsTheTemplatesSwitchAndGivenBackTheTurnsReasoning) {
  const json user = {{{"role", "user"}, {"content", "a"}}};
  auto parse = [&](json thinking, int max_tokens = 2048) {
    return ParseAnthropicMessagesRequest(
        json{{"max_tokens", max_tokens}, {"messages", user}, {"thinking", thinking}}.dump(), {},
        ReasoningParser::kQwen3);
  };
  absl::StatusOr<AnthropicCall> call = parse({{"type", "enabled"}, {"budget_tokens", 1536}});
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_TRUE(call->completion.requests[0].chat().has_enable_thinking());
  EXPECT_TRUE(call->completion.requests[0].chat().enable_thinking());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &call->completion).ok());
  EXPECT_EQ(call->completion.requests[0].sampling().thinking_token_budget(), 1536);
  EXPECT_EQ(call->completion.requests[0].sampling().thinking_end(), "</think>");
  call = parse({{"type", "adaptive"}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->completion.requests[0].chat().enable_thinking());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &call->completion).ok());
  EXPECT_FALSE(call->completion.requests[0].sampling().has_thinking_token_budget());  // adaptive: no budget
  for (const ReasoningParser parser : {ReasoningParser::kNone, ReasoningParser::kQwen3}) {
    call = ParseAnthropicMessagesRequest(
        json{{"max_tokens", 5}, {"messages", user}, {"thinking", {{"type", "disabled"}}}}.dump(), {}, parser);
    ASSERT_TRUE(call.ok()) << call.status();
    ASSERT_TRUE(call->completion.requests[0].chat().has_enable_thinking());
    EXPECT_FALSE(call->completion.requests[0].chat().enable_thinking());
  }
  call = ParseAnthropicMessagesRequest(json{{"max_tokens", 5}, {"messages", user}}.dump(), {}, ReasoningParser::kQwen3);
  ASSERT_TRUE(call.ok());
  EXPECT_FALSE(call->completion.requests[0].chat().has_enable_thinking());
  EXPECT_THAT(std::string(parse({{"type", "enabled"}, {"budget_tokens", 1000}}).status().message()),
              HasSubstr("thinking.budget_tokens = 1000: must be >= 1024"));
  EXPECT_THAT(std::string(parse({{"type", "enabled"}, {"budget_tokens", 2048}}).status().message()),
              HasSubstr("thinking.budget_tokens = 2048: must be less than max_tokens (2048)"));
  EXPECT_THAT(std::string(parse({{"type", "enabled"}}).status().message()), HasSubstr("thinking.budget_tokens: required"));

  const json thought = {{"type", "thinking"}, {"thinking", "Plan."}, {"signature", "abc"}};
  const json tools = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}};
  call = ParseAnthropicMessagesRequest(
      json{{"max_tokens", 5},
           {"tools", tools},
           {"tool_choice", {{"type", "none"}}},
           {"messages",
            {{{"role", "user"}, {"content", "a"}},
             {{"role", "assistant"}, {"content", {thought, {{"type", "text"}, {"text", "Hi"}}}}},
             {{"role", "user"}, {"content", "b"}},
             {{"role", "assistant"},
              {"content", {thought, {{"type", "tool_use"}, {"id", "t1"}, {"name", "f"}, {"input", json::object()}}}}},
             {{"role", "user"}, {"content", {{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"content", "1"}}}}},
             {{"role", "assistant"}, {"content", {thought}}}}}}
          .dump(),
      ToolSupport{.template_shows_tools = true}, ReasoningParser::kQwen3);
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->completion.requests[0].chat();
  ASSERT_EQ(chat.messages_size(), 6) << chat.DebugString();
  EXPECT_EQ(chat.messages(1).content(), "Hi");
  EXPECT_EQ(chat.messages(1).reasoning_content(), "Plan.");
  EXPECT_EQ(chat.messages(3).tool_calls_size(), 1);
  EXPECT_EQ(chat.messages(3).reasoning_content(), "Plan.");
  EXPECT_EQ(chat.messages(5).content(), "");  // thinking alone
  EXPECT_EQ(chat.messages(5).reasoning_content(), "Plan.");
}

// The thinking as a thinking block before the text (signature empty),
// whole and streamed (thinking_delta, then the text's own block).
TEST(AnthropicStreamTest, TheThinkingIsAThinkingBlockBeforeTheText) {
  absl::StatusOr<AnthropicCall> call =
      Parse(json{{"max_tokens", 50}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "a"}}}}});
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kDeepSeekR1, false, &call->completion).ok());
  const std::vector<v1::GenerateResponse> chunks = {Chunk("Plan"), Chunk(" it.</think>"), Chunk("\n\nDone",
                                                                                                v1::FINISH_REASON_EOS)};
  const nlohmann::ordered_json whole = AnthropicMessage(*call, chunks, AnthropicIdentity{"msg_abc", "m"});
  EXPECT_EQ(json::parse(whole["content"].dump()),
            json::parse(R"([{"type": "thinking", "thinking": "Plan it.", "signature": ""},
                            {"type": "text", "text": "\n\nDone"}])"));
  AnthropicStream stream(*call, AnthropicIdentity{"msg_abc", "m"});
  std::string sse = stream.Start(chunks[0]);
  for (const v1::GenerateResponse& chunk : chunks) sse += stream.Next(chunk);
  const std::vector<json> events = SseEvents(sse);
  std::vector<std::string> types;
  for (const json& e : events) types.push_back(e["type"]);
  EXPECT_THAT(types, ElementsAre("message_start", "content_block_start", "content_block_delta", "content_block_delta",
                                 "content_block_stop", "content_block_start", "content_block_delta",
                                 "content_block_stop", "message_delta", "message_stop"));
  EXPECT_EQ(events[1]["content_block"], json::parse(R"({"type": "thinking", "thinking": "", "signature": ""})"));
  EXPECT_EQ(events[2]["delta"], json::parse(R"({"type": "thinking_delta", "thinking": "Plan"})"));
  EXPECT_EQ(events[3]["delta"], json::parse(R"({"type": "thinking_delta", "thinking": " it."})"));
  EXPECT_EQ(events[5]["index"], 1);
  EXPECT_EQ(events[6]["delta"], json::parse(R"({"type": "text_delta", "text": "\n\nDone"})"));
  // All thinking (cut by max_tokens): the thinking block alone.
  const nlohmann::ordered_json cut =
      AnthropicMessage(*call, {Chunk("Plan", v1::FINISH_REASON_LENGTH)}, AnthropicIdentity{"msg_abc", "m"});
  EXPECT_EQ(json::parse(cut["content"].dump()),
            json::parse(R"([{"type": "thinking", "thinking": "Plan", "signature": ""}])"));
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
}

}  // namespace
}  // namespace attnserve
