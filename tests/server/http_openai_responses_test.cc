// The Responses API's pure mapping (server/http/openai_responses.h): a
// Responses body onto chat's GenerateRequest, chat's errors renamed, and
// the response object and stream events from the engine's chunks. The
// official openai client runs against the binary in
// tests/integration/test_http_openai_responses.py.
#include "server/http/openai_responses.h"

#include <map>
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

absl::StatusOr<ResponsesCall> Parse(const json& body, ToolSupport tools = {}) {
  return ParseResponsesRequest(body.dump(), tools);
}

TEST(ResponsesRequestTest, InputItemsAndInstructionsBecomeTheChatPrompt) {
  absl::StatusOr<ResponsesCall> call = Parse(json{
      {"model", "m"},
      {"instructions", "Be brief."},
      {"input",
       {{{"role", "user"}, {"content", "Hello"}},
        {{"type", "message"}, {"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "Hi"}}}}},
        {{"role", "user"},
         {"content", {{{"type", "input_text"}, {"text", "Tell me"}}, {{"type", "input_text"}, {"text", "a story."}}}}}}},
      {"max_output_tokens", 7},
      {"temperature", 0.5},
      {"top_p", 0.9},
      {"metadata", {{"k", "v"}}},
      {"seed", 9},
      {"ignore_eos", true}});
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->completion.requests.size(), 1u);
  const v1::GenerateRequest& r = call->completion.requests[0];
  ASSERT_EQ(r.chat().messages_size(), 4);
  EXPECT_EQ(r.chat().messages(0).role(), "system");
  EXPECT_EQ(r.chat().messages(0).content(), "Be brief.");
  EXPECT_EQ(r.chat().messages(2).content(), "Hi");
  EXPECT_EQ(r.chat().messages(3).content(), "Tell me\na story.");  // parts joined as chat joins them
  EXPECT_EQ(r.sampling().max_new_tokens(), 7);
  EXPECT_FLOAT_EQ(r.sampling().temperature(), 0.5f);
  EXPECT_FLOAT_EQ(r.sampling().top_p(), 0.9f);
  EXPECT_EQ(r.sampling().seed(), 9u);  // vLLM's extensions pass through
  EXPECT_TRUE(r.sampling().ignore_eos());
  EXPECT_THAT(call->message_fields, ElementsAre("instructions", "input[0]", "input[1]", "input[2]"));
  EXPECT_EQ(call->echo["instructions"], "Be brief.");
  EXPECT_EQ(call->echo["metadata"], nlohmann::ordered_json({{"k", "v"}}));
  EXPECT_EQ(call->echo["tool_choice"], "auto");
  EXPECT_EQ(call->echo["store"], false);

  call = Parse(json{{"input", "Hello"}});
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->completion.requests[0].chat().messages_size(), 1);
  EXPECT_EQ(call->completion.requests[0].chat().messages(0).role(), "user");
  EXPECT_FALSE(call->completion.requests[0].sampling().has_max_new_tokens());  // to the context, as chat
  EXPECT_EQ(call->echo["max_output_tokens"], nullptr);
  EXPECT_EQ(call->echo["text"], nlohmann::ordered_json::parse(R"({"format": {"type": "text"}})"));
}

TEST(ResponsesRequestTest, FunctionCallsInARowAreOneAssistantTurn) {
  const json body{{"input",
                   {{{"role", "user"}, {"content", "a"}},
                    {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}},
                    {{"type", "function_call"}, {"call_id", "c2"}, {"name", "g"}, {"arguments", "{\"x\": 1}"}},
                    {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "one"}}}},
                  {"tools", {{{"type", "function"}, {"name", "f"}}, {{"type", "function"}, {"name", "g"}}}}};
  absl::StatusOr<ResponsesCall> call =
      ParseResponsesRequest(body.dump(), ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->completion.requests[0].chat();
  ASSERT_EQ(chat.messages_size(), 3);
  EXPECT_EQ(chat.messages(1).role(), "assistant");
  ASSERT_EQ(chat.messages(1).tool_calls_size(), 2);
  EXPECT_EQ(chat.messages(1).tool_calls(1).name(), "g");
  EXPECT_EQ(chat.messages(2).role(), "tool");
  EXPECT_EQ(chat.messages(2).tool_call_id(), "c1");
  EXPECT_EQ(chat.messages(2).content(), "one");
  EXPECT_THAT(call->message_fields, ElementsAre("input[0]", "input[1]", "input[3]"));
}

TEST(ResponsesRequestTest, ToolsToolChoiceAndTextFormatAreChats) {
  const json tools = {{{"type", "function"},
                       {"name", "get_weather"},
                       {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}};
  absl::StatusOr<ResponsesCall> call = Parse(
      json{{"input", "a"}, {"tools", tools}, {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->completion.format.tools.mode, ToolCallFormat::Mode::kNamed);
  EXPECT_EQ(call->completion.format.tools.function, "get_weather");
  EXPECT_EQ(call->completion.requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA);
  EXPECT_EQ(call->echo["tools"][0]["name"], "get_weather");  // echoed in the Responses shape

  call = Parse(json{{"input", "a"},
                    {"text", {{"format", {{"type", "json_schema"}, {"name", "pet"},
                                          {"schema", {{"type", "object"}, {"properties", {{"b", {{"type", "string"}}},
                                                                                          {"a", {{"type", "string"}}}}}}}}}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->completion.requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA);
  EXPECT_THAT(call->completion.requests[0].sampling().json_schema(), HasSubstr("\"properties\""));
  call = Parse(json{{"input", "a"}, {"text", {{"format", {{"type", "json_object"}}}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->completion.requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_OBJECT);
}

TEST(ResponsesRequestTest, RefusalsNameTheResponsesField) {
  const std::pair<json, const char*> bad[] = {
      {json{{"input", "a"}, {"previous_response_id", "resp_1"}}, "previous_response_id: not supported"},
      {json{{"input", "a"}, {"store", true}}, "store: not supported"},
      {json{{"input", "a"}, {"store", "yes"}}, "store: must be a boolean"},
      {json{{"input", "a"}, {"include", {"reasoning.encrypted_content"}}}, "include[0]: not supported"},
      {json{{"input", "a"}, {"top_logprobs", 30}}, "top_logprobs: 30 is outside [0, 20]"},
      {json{{"input", "a"}, {"tools", {{{"type", "file_search"}}}}}, "tools[0].type: not supported"},
      {json{{"input", "a"}, {"tool_choice", {{"type", "web_search_preview"}}}}, "tool_choice.type: not supported"},
      {json{{"input", {{{"role", "user"}}}}}, "input[0].content: required"},
      {json{{"input", {{{"role", "user"}, {"content", {{{"type", "input_file"}}}}}}}},
       "input[0].content[0].type: not supported"},
      {json{{"input", {{{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}}}}}, "input[0].call_id: required"},
      {json{{"input", 5}}, "input: must be a string or an array"},
      {json{{"instructions", "x"}, {"input", {{{"role", "user"}, {"content", "a"}}, {{"role", "bot"}, {"content", "b"}}}}},
       "input[1].role"},
      {json{{"input", "a"}, {"max_output_tokens", "ten"}}, "max_output_tokens"},
      {json{{"input", "a"}, {"text", {{"format", {{"type", "json_schema"}}}}}}, "text.format"},
      {json{{"input", "a"}, {"metadata", 3}}, "metadata: must be an object"},
  };
  for (const auto& [body, expected] : bad) {
    absl::StatusOr<ResponsesCall> call = Parse(body);
    ASSERT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(call.status().message(), HasSubstr(expected)) << body;
    EXPECT_THAT(call.status().message(), ::testing::Not(HasSubstr("messages["))) << body;
  }
}

TEST(ResponsesRequestTest, CoreErrorsAreRenamed) {
  absl::StatusOr<ResponsesCall> call = Parse(json{{"instructions", "x"}, {"input", "a"}});
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(WithResponsesFieldNames(absl::InvalidArgumentError("chat.messages[1]: too long"), *call).message(),
            "input: too long");
  EXPECT_EQ(WithResponsesFieldNames(absl::InvalidArgumentError("sampling: json_schema: schema: bad"), *call).message(),
            "text.format.schema: schema: bad");
  EXPECT_EQ(WithResponsesFieldNames(absl::InvalidArgumentError("x (OpenAI field 'max_tokens')"), *call).message(),
            "x (OpenAI field 'max_output_tokens')");
  EXPECT_EQ(WithResponsesFieldNames(absl::ResourceExhaustedError("messages[0]"), *call).message(), "messages[0]");
}

v1::GenerateResponse Chunk(const std::string& text, v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED) {
  return TextChunk(text, finish, 5, 4);
}

TEST(ResponsesObjectTest, MessageOutputStatusAndUsage) {
  absl::StatusOr<ResponsesCall> call = Parse(json{{"input", "a"}, {"max_output_tokens", 2}});
  ASSERT_TRUE(call.ok());
  const ResponseIdentity id{"resp_abc", 1700000000, "m"};
  nlohmann::ordered_json r = ResponseObject(*call, {Chunk("He"), Chunk("llo", v1::FINISH_REASON_LENGTH)}, id);
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["output"][0]["id"], "msg_abc");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(r["usage"]["input_tokens"], 5);
  EXPECT_EQ(r["usage"]["output_tokens"], 2);
  EXPECT_EQ(r["usage"]["total_tokens"], 7);
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(r["max_output_tokens"], 2);
  r = ResponseObject(*call, {Chunk("Hi", v1::FINISH_REASON_EOS)}, id);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["incomplete_details"], nullptr);
  EXPECT_EQ(r["output"][0]["status"], "completed");
}

TEST(ResponsesStreamTest, TextEventsInOrderNumberedFromZero) {
  absl::StatusOr<ResponsesCall> call = Parse(json{{"input", "a"}, {"stream", true}});
  ASSERT_TRUE(call.ok());
  ResponsesStream stream(*call, ResponseIdentity{"resp_abc", 1, "m"});
  std::string sse = stream.Start(v1::GenerateResponse());  // one call a statement: the events number themselves as made
  sse += stream.Next(Chunk("He"));
  sse += stream.Next(Chunk("llo", v1::FINISH_REASON_EOS));
  const std::vector<json> events = SseEvents(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    types.push_back(events[i]["type"]);
    EXPECT_EQ(events[i]["sequence_number"], static_cast<int>(i));
  }
  EXPECT_THAT(types, ElementsAre("response.created", "response.in_progress", "response.output_item.added",
                                 "response.content_part.added", "response.output_text.delta",
                                 "response.output_text.delta", "response.output_text.done",
                                 "response.content_part.done", "response.output_item.done", "response.completed"));
  EXPECT_EQ(events[0]["response"]["status"], "in_progress");
  EXPECT_EQ(events[5]["delta"], "llo");
  EXPECT_EQ(events[6]["text"], "Hello");
  EXPECT_EQ(events[9]["response"]["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(events[9]["response"]["status"], "completed");
  // Failed after the start: response.failed carries the error.
  const std::vector<json> failed = SseEvents(stream.Failed(absl::DeadlineExceededError("deadline passed")));
  EXPECT_EQ(failed[0]["type"], "response.failed");
  EXPECT_EQ(failed[0]["response"]["error"]["message"], "deadline passed");
  EXPECT_EQ(failed[0]["sequence_number"], 10);
}

TEST(ResponsesStreamTest, ANamedCallStreamsItsArgumentsAndEndsWithTheItem) {
  const json tools = {{{"type", "function"}, {"name", "f"}, {"parameters", {{"type", "object"}}}}};
  absl::StatusOr<ResponsesCall> call =
      Parse(json{{"input", "a"}, {"stream", true}, {"tools", tools}, {"tool_choice", {{"type", "function"}, {"name", "f"}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  ResponsesStream stream(*call, ResponseIdentity{"resp_abc", 1, "m"});
  std::string sse = stream.Start(v1::GenerateResponse());
  sse += stream.Next(Chunk("{\"x\": "));
  sse += stream.Next(Chunk("1}", v1::FINISH_REASON_EOS));
  const std::vector<json> events = SseEvents(sse);
  std::vector<std::string> types;
  std::string arguments;
  for (const json& e : events) {
    types.push_back(e["type"]);
    if (e["type"] == "response.function_call_arguments.delta") arguments += e["delta"].get<std::string>();
  }
  EXPECT_THAT(types, ElementsAre("response.created", "response.in_progress", "response.output_item.added",
                                 "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                                 "response.function_call_arguments.done", "response.output_item.done",
                                 "response.completed"));
  EXPECT_EQ(arguments, "{\"x\": 1}");
  EXPECT_EQ(events[2]["item"]["type"], "function_call");
  EXPECT_EQ(events[2]["item"]["name"], "f");
  EXPECT_EQ(events[5]["arguments"], arguments);
  EXPECT_EQ(events[6]["item"]["arguments"], arguments);
  EXPECT_EQ(events[6]["item"]["call_id"], events[2]["item"]["call_id"]);
  EXPECT_EQ(events[7]["response"]["output"][0], events[6]["item"]);
}

// A hermes answer with text before its calls: a message item, then a
// function_call item each, whole and streamed, the items' output_index
// their place in "output".
TEST(ResponsesStreamTest, HermesTextBeforeCallsIsAMessageItemThenCallItems) {
  const json tools = {{{"type", "function"}, {"name", "f"}, {"parameters", {{"type", "object"}}}}};
  absl::StatusOr<ResponsesCall> call =
      Parse(json{{"input", "a"}, {"stream", true}, {"tools", tools}},
            ToolSupport{.template_shows_tools = true, .auto_parser = AutoToolParser::kHermes});
  ASSERT_TRUE(call.ok()) << call.status();
  const std::vector<v1::GenerateResponse> chunks = {
      Chunk("Checking."), Chunk("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"),
      Chunk("<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 2}}</tool_call>", v1::FINISH_REASON_EOS)};
  const nlohmann::ordered_json whole = ResponseObject(*call, chunks, ResponseIdentity{"resp_abc", 1, "m"});
  const nlohmann::ordered_json& output = whole["output"];
  ASSERT_EQ(output.size(), 3u) << whole;
  EXPECT_EQ(output[0]["type"], "message");
  EXPECT_EQ(output[0]["content"][0]["text"], "Checking.");
  EXPECT_EQ(output[1]["type"], "function_call");
  EXPECT_EQ(output[1]["arguments"], "{}");
  EXPECT_EQ(output[2]["arguments"], "{\"x\": 2}");
  ResponsesStream stream(*call, ResponseIdentity{"resp_abc", 1, "m"});
  std::string sse = stream.Start(v1::GenerateResponse());
  for (const v1::GenerateResponse& chunk : chunks) sse += stream.Next(chunk);
  std::map<int, json> done;  // output_index: the item output_item.done closed
  json completed;
  for (const json& e : SseEvents(sse)) {
    if (e["type"] == "response.output_item.done") done[e["output_index"].get<int>()] = e["item"];
    if (e["type"] == "response.completed") completed = e["response"];
  }
  ASSERT_EQ(done.size(), 3u) << sse;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(done[i], json::parse(output[static_cast<size_t>(i)].dump())) << i;
  EXPECT_EQ(completed["output"], json::parse(output.dump()));
}

// --reasoning-parser: the thinking is a reasoning item before the message
// (its text the item's reasoning_text content, as vLLM and OpenAI give it),
// whole and streamed (response.reasoning_text.delta / .done), the items'
// output_index their place in "output"; its tokens are the usage's
// reasoning_tokens. An answer that is all thinking has no message item.
TEST(ResponsesStreamTest, TheThinkingIsAReasoningItemBeforeTheMessage) {
  absl::StatusOr<ResponsesCall> call = Parse(json{{"input", "a"}, {"stream", true}});
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &call->completion).ok());
  const ResponseIdentity id{"resp_abc", 1, "m"};
  const std::vector<v1::GenerateResponse> chunks = {Chunk("<think>"), Chunk("Plan"), Chunk(" it.</th"),
                                                    Chunk("ink>"), Chunk("\n\nDone"),
                                                    Chunk(".", v1::FINISH_REASON_EOS)};
  const nlohmann::ordered_json whole = ResponseObject(*call, chunks, id);
  const nlohmann::ordered_json& output = whole["output"];
  ASSERT_EQ(output.size(), 2u) << whole;
  EXPECT_EQ(output[0], nlohmann::ordered_json::parse(
                           R"({"id": "rs_abc", "type": "reasoning", "summary": [],
                               "content": [{"type": "reasoning_text", "text": "Plan it."}], "status": "completed"})"));
  EXPECT_EQ(output[1]["type"], "message");
  EXPECT_EQ(output[1]["content"][0]["text"], "\n\nDone.");
  EXPECT_EQ(whole["usage"]["output_tokens_details"]["reasoning_tokens"], 4);  // <think> ... ink>

  ResponsesStream stream(*call, id);
  std::string sse = stream.Start(v1::GenerateResponse());
  for (const v1::GenerateResponse& chunk : chunks) sse += stream.Next(chunk);
  std::vector<std::string> types;
  std::string thinking;
  std::map<int, json> done;
  json completed;
  for (const json& e : SseEvents(sse)) {
    types.push_back(e["type"]);
    if (e["type"] == "response.reasoning_text.delta") {
      EXPECT_EQ(e["item_id"], "rs_abc");
      EXPECT_EQ(e["output_index"], 0);
      thinking += e["delta"].get<std::string>();
    }
    if (e["type"] == "response.output_item.done") done[e["output_index"].get<int>()] = e["item"];
    if (e["type"] == "response.completed") completed = e["response"];
  }
  EXPECT_EQ(thinking, "Plan it.");
  EXPECT_THAT(types, ElementsAre("response.created", "response.in_progress", "response.output_item.added",
                                 "response.content_part.added", "response.reasoning_text.delta",
                                 "response.reasoning_text.delta", "response.output_item.added",
                                 "response.content_part.added", "response.output_text.delta",
                                 "response.output_text.delta", "response.reasoning_text.done",
                                 "response.content_part.done", "response.output_item.done",
                                 "response.output_text.done", "response.content_part.done",
                                 "response.output_item.done", "response.completed"));
  ASSERT_EQ(done.size(), 2u) << sse;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(done[i], json::parse(output[static_cast<size_t>(i)].dump())) << i;
  EXPECT_EQ(completed["output"], json::parse(output.dump()));

  // All thinking (the limit cut it): a reasoning item alone, incomplete.
  const std::vector<v1::GenerateResponse> cut = {Chunk("<think>"), Chunk("Plan", v1::FINISH_REASON_LENGTH)};
  const nlohmann::ordered_json thought = ResponseObject(*call, cut, id);
  ASSERT_EQ(thought["output"].size(), 1u) << thought;
  EXPECT_EQ(thought["output"][0]["type"], "reasoning");
  EXPECT_EQ(thought["output"][0]["status"], "incomplete");
  EXPECT_EQ(thought["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
  ResponsesStream cut_stream(*call, id);
  sse = cut_stream.Start(v1::GenerateResponse());
  for (const v1::GenerateResponse& chunk : cut) sse += cut_stream.Next(chunk);
  const std::vector<json> events = SseEvents(sse);
  EXPECT_EQ(events.back()["type"], "response.incomplete");
  EXPECT_EQ(events.back()["response"]["output"], json::parse(thought["output"].dump()));
  // qwen3 with the thinking switched off (the prompt closed it): a message
  // alone, no reasoning tokens, whatever the answer writes.
  absl::StatusOr<ResponsesCall> off = Parse(json{{"input", "a"}});
  ASSERT_TRUE(off.ok()) << off.status();
  off->completion.requests[0].mutable_chat()->set_enable_thinking(false);
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &off->completion).ok());
  const nlohmann::ordered_json plain =
      ResponseObject(*off, {Chunk("Hi"), Chunk("</think>", v1::FINISH_REASON_EOS)}, id);
  ASSERT_EQ(plain["output"].size(), 1u);
  EXPECT_EQ(plain["output"][0]["type"], "message");
  EXPECT_EQ(plain["output"][0]["content"][0]["text"], "Hi</think>");
  EXPECT_EQ(plain["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
}

// A reasoning item sent back (as OpenAI asks clients that keep the
// conversation to) becomes the next assistant turn's reasoning_content:
// of its message, or of its calls; alone, a turn of its own. Encrypted
// content, which this server never writes, is refused naming the field.
TEST(ResponsesRequestTest, AReasoningItemIsTheNextAssistantTurnsThinking) {
  const json reasoning = {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()},
                          {"content", {{{"type", "reasoning_text"}, {"text", "Plan."}}}}};
  absl::StatusOr<ResponsesCall> call = Parse(json{
      {"input",
       {{{"role", "user"}, {"content", "a"}},
        reasoning,
        {{"type", "message"}, {"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "Hi"}}}}},
        {{"role", "user"}, {"content", "b"}},
        {{"type", "reasoning"}, {"summary", {{{"type", "summary_text"}, {"text", "Call."}}}}},
        {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}},
        {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "1"}},
        reasoning}}},
      ToolSupport{.template_shows_tools = true});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->completion.requests[0].chat();
  ASSERT_EQ(chat.messages_size(), 6) << chat.DebugString();
  EXPECT_EQ(chat.messages(1).role(), "assistant");
  EXPECT_EQ(chat.messages(1).content(), "Hi");
  EXPECT_EQ(chat.messages(1).reasoning_content(), "Plan.");
  EXPECT_FALSE(chat.messages(2).has_reasoning_content());
  EXPECT_EQ(chat.messages(3).tool_calls_size(), 1);
  EXPECT_EQ(chat.messages(3).reasoning_content(), "Call.");
  EXPECT_EQ(chat.messages(4).role(), "tool");
  EXPECT_EQ(chat.messages(5).role(), "assistant");  // alone at the end: a turn of its own
  EXPECT_EQ(chat.messages(5).content(), "");
  EXPECT_EQ(chat.messages(5).reasoning_content(), "Plan.");
  EXPECT_EQ(call->message_fields[5], "input[7]");

  json encrypted = reasoning;
  encrypted["encrypted_content"] = "gAAA";
  call = Parse(json{{"input", {{{"role", "user"}, {"content", "a"}}, encrypted}}});
  ASSERT_FALSE(call.ok());
  EXPECT_THAT(std::string(call.status().message()), HasSubstr("input[1].encrypted_content"));
  json wrong = reasoning;
  wrong["content"][0]["type"] = "output_text";
  call = Parse(json{{"input", {{{"role", "user"}, {"content", "a"}}, wrong}}});
  ASSERT_FALSE(call.ok());
  EXPECT_THAT(std::string(call.status().message()), HasSubstr("input[1].content[0].type"));
}

}  // namespace
}  // namespace attnserve
