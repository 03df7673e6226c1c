#include "server/http/openai_chat.h"

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

constexpr AutoToolParser kLlama3Json = AutoToolParser::kLlama3Json;

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
  // ... and kept as sent, for templates that read the parts (gemma3)
  EXPECT_THAT(r.chat().messages(1).content_parts(), ::testing::ElementsAre("Hello", "there"));
  EXPECT_EQ(r.chat().messages(2).content_parts_size(), 0);  // a string
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

// Qwen3's thinking switch and an answer's thinking given back, as vLLM
// takes them: chat_template_kwargs' enable_thinking, an assistant's
// reasoning_content or reasoning (this server's answers carry both, one text).
TEST(OpenAiChatTest, ThinkingSwitchAndReasoningGivenBackMapOntoTheChatPrompt) {
  absl::StatusOr<CompletionCall> call = Parse(json{
      {"messages",
       {{{"role", "user"}, {"content", "Hi"}},
        {{"role", "assistant"}, {"content", "Hello"}, {"reasoning_content", "Greet."}, {"reasoning", "Greet."}},
        {{"role", "assistant"}, {"content", "More"}, {"reasoning", "\nThink."}},
        {{"role", "assistant"}, {"content", "Plain"}, {"reasoning", nullptr}, {"reasoning_content", nullptr}}}},
      {"chat_template_kwargs", {{"enable_thinking", false}, {"date_string", "01 Feb 2030"}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->requests[0].chat();
  ASSERT_TRUE(chat.has_enable_thinking());
  EXPECT_FALSE(chat.enable_thinking());
  EXPECT_EQ(chat.date_string(), "01 Feb 2030");
  EXPECT_FALSE(chat.messages(0).has_reasoning_content());
  EXPECT_EQ(chat.messages(1).reasoning_content(), "Greet.");
  EXPECT_EQ(chat.messages(2).reasoning_content(), "\nThink.");
  EXPECT_FALSE(chat.messages(3).has_reasoning_content());  // null: none given
  call = Parse(json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                    {"chat_template_kwargs", {{"enable_thinking", true}}}});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->requests[0].chat().enable_thinking());
  for (const json& kwargs : {json::object(), json()}) {
    call = Parse(json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"chat_template_kwargs", kwargs}});
    ASSERT_TRUE(call.ok()) << call.status();
    EXPECT_FALSE(call->requests[0].chat().has_enable_thinking()) << kwargs.dump();
    EXPECT_FALSE(call->requests[0].chat().has_date_string()) << kwargs.dump();
  }
}

// --reasoning-parser: every format that holds the answer (guided_* and tool
// calls included) waits for "</think>", on every choice, as vLLM's
// structured outputs wait for the thinking; not where qwen3's prompt has
// closed it, nor with --structured-outputs-in-reasoning; free text and no
// parser get nothing.
TEST(OpenAiChatTest, AReasoningParserHoldsEveryFormatAfterTheThinking) {
  const json user = {{"role", "user"}, {"content", "Hi"}};
  const json tools = json::array({{{"type", "function"},
                                   {"function", {{"name", "now"}, {"parameters", {{"type", "object"}}}}}}});
  const ToolSupport hermes{.template_shows_tools = true, .auto_parser = AutoToolParser::kHermes};
  const std::vector<json> held = {
      {{"response_format", {{"type", "json_object"}}}},
      {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}}}}}}}},
      {{"guided_json", {{"type", "object"}}}},
      {{"guided_choice", {"yes", "no"}}},
      {{"guided_regex", "(yes|no)"}},
      {{"tools", tools}, {"tool_choice", "required"}},
      {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "now"}}}}}},
      {{"tools", tools}, {"tool_choice", "auto"}},
  };
  auto parse = [&](json body, ReasoningParser parser, bool in_reasoning) {
    body["messages"] = json::array({user});
    body["n"] = 2;
    absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(body.dump(), hermes);
    EXPECT_TRUE(call.ok()) << body.dump() << call.status();
    if (call.ok()) {
      EXPECT_TRUE(ApplyReasoningParser(parser, in_reasoning, &*call).ok());
    }
    return call;
  };
  for (const json& body : held) {
    for (const ReasoningParser parser : {ReasoningParser::kDeepSeekR1, ReasoningParser::kQwen3}) {
      absl::StatusOr<CompletionCall> call = parse(body, parser, false);
      ASSERT_TRUE(call.ok());
      EXPECT_EQ(call->format.reasoning, parser);
      ASSERT_EQ(call->requests.size(), 2u);
      EXPECT_NE(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_TEXT) << body.dump();
      for (const v1::GenerateRequest& r : call->requests) {
        EXPECT_EQ(r.sampling().constrain_after(), "</think>") << body.dump();
      }
      EXPECT_EQ(parse(body, parser, true)->requests[1].sampling().constrain_after(), "") << body.dump();
      json off = body;
      off["chat_template_kwargs"] = {{"enable_thinking", false}};
      EXPECT_EQ(parse(off, parser, false)->requests[1].sampling().constrain_after(),
                parser == ReasoningParser::kQwen3 ? "" : "</think>")
          << body.dump();
      off["chat_template_kwargs"] = {{"enable_thinking", true}};
      EXPECT_EQ(parse(off, parser, false)->requests[1].sampling().constrain_after(), "</think>") << body.dump();
    }
    absl::StatusOr<CompletionCall> plain = parse(body, ReasoningParser::kNone, false);
    EXPECT_EQ(plain->format.reasoning, ReasoningParser::kNone);
    EXPECT_EQ(plain->requests[0].sampling().constrain_after(), "") << body.dump();
  }
  absl::StatusOr<CompletionCall> text = parse(json::object(), ReasoningParser::kQwen3, false);
  EXPECT_EQ(text->format.reasoning, ReasoningParser::kQwen3);
  EXPECT_EQ(text->requests[0].sampling().constrain_after(), "");
}

// vLLM's thinking_token_budget: with a reasoning parser every choice gets
// the budget and "</think>" as the end to force (with a format or without);
// dropped where qwen3's template has closed the thinking; without a parser,
// or negative, refused naming it.
TEST(OpenAiChatTest, AThinkingBudgetGetsTheEndOfTheThinking) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"n", 2}, {"thinking_token_budget", 30}};
  json choice = body;
  choice["guided_choice"] = {"yes", "no"};
  for (const ReasoningParser parser : {ReasoningParser::kDeepSeekR1, ReasoningParser::kQwen3}) {
    for (const bool in_reasoning : {false, true}) {
      for (const json& b : {body, choice}) {
        absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(b.dump());
        ASSERT_TRUE(call.ok()) << call.status();
        ASSERT_TRUE(ApplyReasoningParser(parser, in_reasoning, &*call).ok());
        ASSERT_EQ(call->requests.size(), 2u);
        for (const v1::GenerateRequest& r : call->requests) {
          EXPECT_EQ(r.sampling().thinking_token_budget(), 30) << b.dump();
          EXPECT_EQ(r.sampling().thinking_end(), "</think>") << b.dump();
        }
      }
    }
  }
  json off = body;
  off["chat_template_kwargs"] = {{"enable_thinking", false}};
  absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(off.dump());
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &*call).ok());
  EXPECT_FALSE(call->requests[1].sampling().has_thinking_token_budget());
  EXPECT_EQ(call->requests[1].sampling().thinking_end(), "");

  call = ParseChatCompletionRequest(body.dump());
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(ApplyReasoningParser(ReasoningParser::kNone, false, &*call).message(),
            "thinking_token_budget: only with --reasoning-parser (which says where the thinking ends)");
  // Without a budget nothing is forced, unless the server sets a default
  // (--thinking-token-budget), which a request's own budget overrides.
  call = ParseChatCompletionRequest(json{{"messages", body["messages"]}}.dump());
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &*call).ok());
  EXPECT_FALSE(call->requests[0].sampling().has_thinking_token_budget());
  EXPECT_EQ(call->requests[0].sampling().thinking_end(), "");
  call = ParseChatCompletionRequest(json{{"messages", body["messages"]}}.dump());
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &*call, 512).ok());
  EXPECT_EQ(call->requests[0].sampling().thinking_token_budget(), 512);
  EXPECT_EQ(call->requests[0].sampling().thinking_end(), "</think>");
  call = ParseChatCompletionRequest(body.dump());
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &*call, 512).ok());
  EXPECT_EQ(call->requests[1].sampling().thinking_token_budget(), 30);
  call = ParseChatCompletionRequest(off.dump());  // no thinking: no default either
  ASSERT_TRUE(call.ok());
  ASSERT_TRUE(ApplyReasoningParser(ReasoningParser::kQwen3, false, &*call, 512).ok());
  EXPECT_FALSE(call->requests[0].sampling().has_thinking_token_budget());
  json negative = body;
  negative["thinking_token_budget"] = -1;
  EXPECT_EQ(ParseChatCompletionRequest(negative.dump()).status().message(), "thinking_token_budget: -1, must be >= 0");
  negative["thinking_token_budget"] = "many";
  EXPECT_THAT(std::string(ParseChatCompletionRequest(negative.dump()).status().message()),
              HasSubstr("thinking_token_budget"));
}

TEST(OpenAiChatTest, BadShapesAndUnsupportedOptionsNameTheField) {
  const json user = {{"role", "user"}, {"content", "Hi"}};
  const json weather = json::parse(R"({"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})");
  struct Case {
    json body;
    const char* message;
  };
  const std::vector<Case> cases = {
      {json::object(), "messages: required"},
      {json{{"messages", "Hi"}}, "messages: must be an array of messages"},
      {json{{"messages", json::array()}}, "messages: the conversation is empty"},
      {json{{"messages", {user}}, {"priority", 2}}, "priority: not supported (requests are served first come"},
      {json{{"messages", {user}}, {"add_special_tokens", true}},
       "add_special_tokens: not supported (true: the chat template writes the special tokens)"},
      {json{{"messages", {user}}, {"add_special_tokens", "no"}}, "add_special_tokens: must be a boolean"},
      {json{{"messages", {user}}, {"modalities", {"text", "audio"}}}, "modalities[1]: not supported (text output only)"},
      {json{{"messages", {user}}, {"modalities", "text"}}, "modalities: must be an array of strings"},
      {json{{"messages", {user}}, {"audio", {{"voice", "alloy"}, {"format", "wav"}}}}, "audio: not supported"},
      {json{{"messages", {user}}, {"web_search_options", json::object()}}, "web_search_options: not supported"},
      {json{{"messages", {user}}, {"documents", {{{"title", "t"}, {"text", "x"}}}}},
       "documents: not supported (the built-in chat formats show no documents)"},
      {json{{"messages", {{{"content", "Hi"}}}}}, "messages[0].role: required"},
      {json{{"messages", {{{"role", 3}, {"content", "Hi"}}}}}, "messages[0].role: must be a string"},
      {json{{"messages", {{{"role", "tool"}, {"content", "42"}}}}}, "messages[0].role: not supported ('tool'"},
      {json{{"messages", {{{"role", "user"}}}}}, "messages[0].content: required"},
      {json{{"messages", {{{"role", "user"}, {"content", 5}}}}},
       "messages[0].content: must be a string or an array of text parts"},
      {json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}},
       "messages[0].content[0].type: not supported ('image_url': text only)"},
      {json{{"messages", {user}}, {"tools", {{{"type", "function"}}}}}, "tools[0].function: required, an object"},
      {json{{"messages", {user}}, {"tools", "get_weather"}}, "tools: must be an array of tools"},
      {json{{"messages", {user}}, {"tools", {{{"type", "code"}, {"function", {{"name", "f"}}}}}}},
       "tools[0].type: must be \"function\""},
      {json{{"messages", {user}}, {"tools", {weather}}},
       "tool_choice: not supported (\"auto\" (OpenAI's default once tools are given) needs a tool-call parser"},
      {json{{"messages", {user}}, {"tools", {weather}}, {"tool_choice", "auto"}}, "tool_choice: not supported (\"auto\""},
      {json{{"messages", {user}}, {"tool_choice", "required"}}, "tool_choice: \"required\" needs tools"},
      {json{{"messages", {user}}, {"tools", {weather}}, {"tool_choice", "always"}}, "tool_choice: must be \"none\""},
      {json{{"messages", {user}}, {"tools", {weather}}, {"tool_choice", 3}}, "tool_choice: must be a string or an object"},
      {json{{"messages", {user}}, {"tools", {weather}}, {"tool_choice", {{"type", "function"}}}},
       "tool_choice: a named choice is"},
      {json{{"messages", {user}}, {"tools", {weather}},
            {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}},
       "tool_choice.function.name: \"get_time\" is not one of the tools"},
      {json{{"messages", {user}}, {"tools", {{{"type", "function"}, {"function", {{"name", "get weather"}}}}}},
            {"tool_choice", "required"}},
       "tools[0].function.name: required, 1 to 64 of a-z"},
      {json{{"messages", {user}}, {"tools", {weather, weather}}, {"tool_choice", "required"}},
       "tools[1].function.name: \"get_weather\" names two tools"},
      {json{{"messages", {user}}, {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "x"}}}}}},
            {"tool_choice", "required"}},
       "tools[0].function.parameters: must be an object (a JSON schema)"},
      {json{{"messages", {user}}, {"tools", {weather}}, {"tool_choice", "required"},
            {"response_format", {{"type", "json_object"}}}},
       "tool_choice: tool calls and a response_format, guided_json or guided_choice exclude each other"},
      {json{{"messages", {{{"role", "tool"}, {"content", "21 C"}, {"tool_call_id", "call_1"}}}}},
       "messages[0].role: not supported ('tool': only system, developer, user and assistant"},
      {json{{"messages", {user}}, {"functions", {{{"name", "f"}}}}}, "functions: not supported"},
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
      {json{{"messages", {user}}, {"guided_grammar", "a+"}}, "guided_grammar: not supported"},
      {json{{"messages", {user}}, {"guided_regex", "a+"}, {"response_format", {{"type", "json_object"}}}},
       "guided_regex: a regex and another constraint"},
      {json{{"messages", {user}}, {"chat_template", "{{ messages }}"}}, "chat_template: not supported"},
      {json{{"messages", {user}}, {"chat_template_kwargs", {{"tools_in_user_message", false}}}},
       "chat_template_kwargs.tools_in_user_message: not supported (the built-in chat templates read only "
       "enable_thinking (qwen3's) and date_string (llama3.1's and llama3.2's))"},
      {json{{"messages", {user}}, {"chat_template_kwargs", {{"date_string", 20300201}}}},
       "chat_template_kwargs.date_string: must be a string"},
      {json{{"messages", {user}}, {"chat_template_kwargs", {{"enable_thinking", "no"}}}},
       "chat_template_kwargs.enable_thinking: must be"},
      {json{{"messages", {user}}, {"chat_template_kwargs", "enable_thinking=false"}},
       "chat_template_kwargs: must be an object"},
      {json{{"messages", {{{"role", "user"}, {"content", "Hi"}, {"reasoning_content", "x"}}}}},
       "messages[0].reasoning_content: only an assistant's"},
      {json{{"messages", {user, {{"role", "assistant"}, {"content", "A"}, {"reasoning", 3}}}}},
       "messages[1].reasoning: must be a string or null"},
      {json{{"messages", {user, {{"role", "assistant"}, {"content", "A"}, {"reasoning", "x"},
                                 {"reasoning_content", "y"}}}}},
       "messages[1].reasoning, messages[1].reasoning_content: two different texts; give one"},
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

// Tool calls: tool_choice becomes JSON schema mode on the function's
// parameters (in the body's property order) or, for "required", on vLLM's
// list of {"name", "parameters"}; the answer becomes OpenAI's tool_calls.
constexpr char kToolsBody[] = R"({"messages": [{"role": "user", "content": "Weather in Oslo?"}],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
              "parameters": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "city": {"type": "string"}},
                             "required": ["city"]}}},
            {"type": "function", "function": {"name": "get_time"}}],
  "tool_choice": TOOL_CHOICE})";

absl::StatusOr<CompletionCall> ParseTools(const std::string& tool_choice) {
  std::string body = kToolsBody;
  body.replace(body.find("TOOL_CHOICE"), 11, tool_choice);
  return ParseChatCompletionRequest(body);
}

std::vector<v1::GenerateResponse> Chunks(const std::vector<std::string>& texts, v1::FinishReason reason) {
  std::vector<v1::GenerateResponse> chunks(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) chunks[i].set_text(texts[i]);
  chunks.back().set_finish_reason(reason);
  return chunks;
}

TEST(OpenAiChatTest, NamedToolChoiceHoldsTheAnswerToTheFunctionsParameters) {
  absl::StatusOr<CompletionCall> call = ParseTools(R"({"type": "function", "function": {"name": "get_weather"}})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->format.tools.mode, ToolCallFormat::Mode::kNamed);
  const v1::SamplingParams& sampling = call->requests[0].sampling();
  EXPECT_EQ(sampling.response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA);
  EXPECT_EQ(sampling.json_schema(),
            R"({"type":"object","properties":{"unit":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]})");
  // A function without parameters takes an empty object.
  call = ParseTools(R"({"type": "function", "function": {"name": "get_time"}})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->requests[0].sampling().json_schema(), R"({"type":"object","properties":{}})");

  const CompletionIdentity id{"chatcmpl-7", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools = {ToolCallFormat::Mode::kNamed, "get_weather"};
  json j = ChatCompletionResponse({Chunks({"{\"city\": ", "\"Oslo\"}"}, v1::FINISH_REASON_EOS)}, id, format);
  const json& message = j["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["id"], "call_chatcmpl-7_0_0");
  EXPECT_EQ(message["tool_calls"][0]["type"], "function");
  EXPECT_EQ(message["tool_calls"][0]["function"], json({{"name", "get_weather"}, {"arguments", "{\"city\": \"Oslo\"}"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");

  // Streamed: the first delta names the call, the rest add to its arguments.
  ChatChoiceStream stream;
  const std::vector<v1::GenerateResponse> chunks = Chunks({"{\"city\": ", "\"Oslo\"}"}, v1::FINISH_REASON_EOS);
  json first = ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream);
  EXPECT_EQ(first["choices"][0]["delta"],
            json::parse(R"({"tool_calls": [{"index": 0, "id": "call_chatcmpl-7_0_0", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\": "}}]})"));
  json last = ChatCompletionChunk(chunks[1], id, format, 0, ChunkUsage::kNone, &stream);
  EXPECT_EQ(last["choices"][0]["delta"],
            json::parse(R"({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]})"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiChatTest, RequiredToolChoiceAnswersWithAListOfCalls) {
  absl::StatusOr<CompletionCall> call = ParseTools(R"("required")");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->format.tools.mode, ToolCallFormat::Mode::kRequired);
  EXPECT_EQ(call->requests[0].sampling().json_schema(),
            R"({"type":"array","minItems":1,"items":{"anyOf":[)"
            R"({"type":"object","properties":{"name":{"type":"string","enum":["get_weather"]},"parameters":)"
            R"({"type":"object","properties":{"unit":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]}},)"
            R"("required":["name","parameters"]},)"
            R"({"type":"object","properties":{"name":{"type":"string","enum":["get_time"]},"parameters":)"
            R"({"type":"object","properties":{}}},"required":["name","parameters"]}]}})");

  // parallel_tool_calls false: one call at most.
  std::string single = kToolsBody;
  single.replace(single.find("TOOL_CHOICE"), 11, R"("required", "parallel_tool_calls": false)");
  absl::StatusOr<CompletionCall> one = ParseChatCompletionRequest(single);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->requests[0].sampling().json_schema(), testing::EndsWith(R"(]},"maxItems":1})"));
  single = kToolsBody;
  single.replace(single.find("TOOL_CHOICE"), 11, R"("required", "parallel_tool_calls": "no")");
  EXPECT_THAT(std::string(ParseChatCompletionRequest(single).status().message()),
              HasSubstr("parallel_tool_calls: must be a boolean"));

  const CompletionIdentity id{"chatcmpl-8", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools = {ToolCallFormat::Mode::kRequired, ""};
  const std::string answer =
      R"([{"name": "get_time", "parameters": {}}, {"name": "get_weather", "parameters": {"unit": "c", "city": "Oslo"}}])";
  json j = ChatCompletionResponse({Chunks({answer.substr(0, 20), answer.substr(20)}, v1::FINISH_REASON_EOS)}, id,
                                  format);
  const json& calls = j["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["function"], json({{"name", "get_time"}, {"arguments", "{}"}}));
  EXPECT_EQ(calls[1]["id"], "call_chatcmpl-8_0_1");
  // The arguments as the answer wrote them: json.dumps' separators, its order.
  EXPECT_EQ(calls[1]["function"]["arguments"], R"({"unit": "c", "city": "Oslo"})");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  // Cut by the token limit inside a call: the calls so far, the last one's
  // arguments cut short, as a named call's are; "length".
  const size_t cut = answer.find("Oslo");
  j = ChatCompletionResponse({Chunks({answer.substr(0, cut)}, v1::FINISH_REASON_LENGTH)}, id, format);
  ASSERT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"], R"({"unit": "c", "city": ")");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  // Cut before the first name is whole: no calls, the text as content.
  j = ChatCompletionResponse({Chunks({answer.substr(0, 15)}, v1::FINISH_REASON_LENGTH)}, id, format);
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(j["choices"][0]["message"]["content"], answer.substr(0, 15));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");

  // Streamed, split anywhere, or a byte a chunk: each call's id, type and
  // name once, then its arguments as they come; put together by index, as
  // the openai client does, they are the calls of the whole answer.
  const json whole_calls = ChatCompletionResponse({Chunks({answer}, v1::FINISH_REASON_EOS)}, id, format)["choices"][0]
                                                 ["message"]["tool_calls"];
  for (size_t split = 0; split <= answer.size() + 1; ++split) {
    std::vector<std::string> parts;
    if (split <= answer.size()) {
      parts = {answer.substr(0, split), answer.substr(split)};
    } else {
      for (char c : answer) parts.push_back(std::string(1, c));
    }
    ChatChoiceStream stream;
    const std::vector<v1::GenerateResponse> chunks = Chunks(parts, v1::FINISH_REASON_EOS);
    json gathered = json::array();
    json finish;
    for (const v1::GenerateResponse& chunk : chunks) {
      json out = ChatCompletionChunk(chunk, id, format, 0, ChunkUsage::kNone, &stream);
      const json& delta = out["choices"][0]["delta"];
      EXPECT_FALSE(delta.contains("content")) << split;
      for (const json& call : delta.value("tool_calls", json::array())) {
        const size_t i = call["index"];
        if (call.contains("id")) {
          ASSERT_EQ(i, gathered.size()) << split;  // opened once, in order
          gathered.push_back({{"id", call["id"]}, {"type", call["type"]},
                              {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}});
        }
        ASSERT_LT(i, gathered.size()) << split;
        gathered[i]["function"]["arguments"] =
            gathered[i]["function"]["arguments"].get<std::string>() + call["function"]["arguments"].get<std::string>();
      }
      finish = out["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(gathered, whole_calls) << split;
    EXPECT_EQ(finish, "tool_calls") << split;
  }
  // Streamed and cut before the first name is whole: the text as content.
  ChatChoiceStream stream;
  json last = ChatCompletionChunk(Chunks({answer.substr(0, 15)}, v1::FINISH_REASON_LENGTH)[0], id, format, 0,
                                  ChunkUsage::kNone, &stream);
  EXPECT_EQ(last["choices"][0]["delta"], json({{"content", answer.substr(0, 15)}}));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
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

json TokenBytesOf(const std::string& text) {
  json bytes = json::array();
  for (unsigned char ch : text) bytes.push_back(static_cast<int>(ch));
  return bytes;
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
  json role = ChatRoleChunk(id, 1, ChunkUsage::kOnLast, CompletionFormat{}, v1::GenerateResponse());
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 1);
  EXPECT_EQ(role["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_FALSE(role.contains("usage"));
  const std::vector<v1::GenerateResponse> chunks = TwoChunks();
  ChatChoiceStream stream;
  json first = ChatCompletionChunk(chunks[0], id, CompletionFormat{.chat = true}, 0, ChunkUsage::kOnLast, &stream);
  EXPECT_EQ(first["choices"][0]["delta"], json({{"content", "Once"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json last = ChatCompletionChunk(chunks[1], id, CompletionFormat{.logprobs = true, .chat = true}, 0,
                                  ChunkUsage::kOnLast, &stream);
  EXPECT_EQ(last["choices"][0]["delta"], json({{"content", " upon"}}));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["choices"][0]["logprobs"]["content"][0]["token"], " upon");
  EXPECT_EQ(last["usage"]["completion_tokens"], 2);
  json with_null = ChatCompletionChunk(chunks[0], id, CompletionFormat{.chat = true}, 0, ChunkUsage::kNull, &stream);
  EXPECT_TRUE(with_null["usage"].is_null());
  v1::GenerateUsage total;
  AddCompletionUsage(chunks[1].usage(), &total);
  EXPECT_EQ(CompletionUsageChunk(total, id, "chat.completion.chunk")["object"], "chat.completion.chunk");
}


// vLLM's return_token_ids on a chat: "prompt_token_ids" at the top level (the
// role chunk's when streamed), "token_ids" in each choice (each chunk's).
// return_tokens_as_token_ids names logprobs' tokens "token_id:<id>", their
// bytes that name's.
TEST(OpenAiChatTest, ReturnTokenIdsAndTokensAsTokenIdsAreVllms) {
  absl::StatusOr<CompletionCall> c = ParseChatCompletionRequest(
      R"({"messages": [{"role": "user", "content": "hi"}], "n": 2, "logprobs": true, "top_logprobs": 1,
          "return_token_ids": true, "return_tokens_as_token_ids": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->requests.size(), 2u);
  EXPECT_TRUE(c->requests[1].return_prompt_token_ids());
  std::vector<v1::GenerateResponse> chunks = TwoChunks();
  chunks[0].add_prompt_token_ids(1);
  chunks[0].add_prompt_token_ids(5);
  const CompletionIdentity id{"chatcmpl-t", 1, "m"};
  json j = ChatCompletionResponse({chunks, chunks}, id, c->format);
  EXPECT_EQ(j["prompt_token_ids"], json({1, 5}));
  EXPECT_EQ(j["choices"][1]["token_ids"], json({10, 11}));
  const json& entry = j["choices"][0]["logprobs"]["content"][1];
  EXPECT_EQ(entry["token"], "token_id:11");
  EXPECT_EQ(entry["bytes"], TokenBytesOf("token_id:11"));
  EXPECT_EQ(entry["top_logprobs"][0]["token"], "token_id:11");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Once upon");

  json role = ChatRoleChunk(id, 0, ChunkUsage::kOnLast, c->format, chunks[0]);
  EXPECT_EQ(role["prompt_token_ids"], json({1, 5}));
  ChatChoiceStream stream;
  json first = ChatCompletionChunk(chunks[0], id, c->format, 0, ChunkUsage::kOnLast, &stream);
  EXPECT_EQ(first["choices"][0]["token_ids"], json({10}));
  EXPECT_FALSE(first.contains("prompt_token_ids"));
  EXPECT_EQ(first["choices"][0]["logprobs"]["content"][0]["token"], "token_id:10");

  c = ParseChatCompletionRequest(R"({"messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->requests[0].return_prompt_token_ids());
  j = ChatCompletionResponse({chunks}, id, c->format);
  EXPECT_FALSE(j.contains("prompt_token_ids"));
  EXPECT_FALSE(j["choices"][0].contains("token_ids"));
  EXPECT_FALSE(ChatRoleChunk(id, 0, ChunkUsage::kOnLast, c->format, chunks[0]).contains("prompt_token_ids"));
}

// Calls a parser read (ids "call_x_<k>") against a golden's {"name",
// "arguments"} list.
void ExpectGoldenCalls(const json& calls, const json& golden, const std::string& text) {
  ASSERT_EQ(calls.size(), golden.size()) << text;
  for (size_t k = 0; k < calls.size(); ++k) {
    EXPECT_EQ(calls[k]["id"], "call_x_" + std::to_string(k));
    EXPECT_EQ(calls[k]["type"], "function");
    EXPECT_EQ(calls[k]["function"]["name"], golden[k]["name"]) << text;
    EXPECT_EQ(calls[k]["function"]["arguments"], golden[k]["arguments"]) << text;
  }
}

// tool_choice "auto" with the llama3_json parser reads an answer as vLLM's
// parser does: every case of tools/golden/llama3_json_tool_calls.py (vLLM's
// algorithm on Python's json) gives the same calls, or none.
TEST(OpenAiChatTest, Llama3JsonCallsAreVllmsOnEveryGoldenCase) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/tool_calls/llama3_json.json");
  ASSERT_TRUE(in.good()) << "run tools/golden/llama3_json_tool_calls.py";
  const json doc = json::parse(in);
  int with_calls = 0;
  for (const json& c : doc["cases"]) {
    const std::string text = c["text"];
    const std::optional<json> calls = Llama3JsonToolCalls(text, "call_x_");
    ASSERT_EQ(calls.has_value(), !c["calls"].is_null()) << text;
    if (!calls.has_value()) continue;
    ++with_calls;
    ExpectGoldenCalls(*calls, c["calls"], text);
  }
  EXPECT_GE(with_calls, 10);
}

// tool_choice "auto" with the hermes parser reads an answer as vLLM's
// parser does: every case of tools/golden/hermes_tool_calls.py (vLLM's
// algorithm on Python's re and json) gives the same calls and content, or
// none and the whole text as content.
TEST(OpenAiChatTest, HermesCallsAreVllmsOnEveryGoldenCase) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/tool_calls/hermes.json");
  ASSERT_TRUE(in.good()) << "run tools/golden/hermes_tool_calls.py";
  const json doc = json::parse(in);
  int with_calls = 0, with_content = 0;
  for (const json& c : doc["cases"]) {
    const std::string text = c["text"];
    std::string content = "unset";
    const std::optional<json> calls = HermesToolCalls(text, "call_x_", &content);
    ASSERT_EQ(calls.has_value(), !c["calls"].is_null()) << text;
    if (!calls.has_value()) {
      EXPECT_EQ(c["content"], text);  // the golden's fallback: all of it
      continue;
    }
    ++with_calls;
    EXPECT_EQ(content, c["content"].is_null() ? "" : c["content"].get<std::string>()) << text;
    with_content += content.empty() ? 0 : 1;
    ExpectGoldenCalls(*calls, c["calls"], text);
  }
  EXPECT_GE(with_calls, 15);
  EXPECT_GE(with_content, 2);
}

TEST(OpenAiChatTest, HermesContentStopsWhereATagMayBegin) {
  EXPECT_EQ(HermesContentBeforeCalls("Hello"), 5u);
  EXPECT_EQ(HermesContentBeforeCalls("Hello <"), 6u);
  EXPECT_EQ(HermesContentBeforeCalls("Hello <tool_cal"), 6u);
  EXPECT_EQ(HermesContentBeforeCalls("Hello <tool_call>{"), 6u);
  EXPECT_EQ(HermesContentBeforeCalls("a < b"), 5u);
  EXPECT_EQ(HermesContentBeforeCalls("<tool_x"), 7u);
  EXPECT_EQ(HermesContentBeforeCalls(""), 0u);
}

// Streamed in pieces of every size from 1 to 7 bytes, each golden answer's
// deltas join to what the whole answer gives: the same content, the same
// calls, the same finish_reason.
TEST(OpenAiChatTest, HermesStreamsJoinToTheWholeAnswer) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/tool_calls/hermes.json");
  ASSERT_TRUE(in.good());
  const json doc = json::parse(in);
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools.mode = ToolCallFormat::Mode::kAuto;
  format.tools.parser = AutoToolParser::kHermes;
  int streams = 0;
  for (const json& c : doc["cases"]) {
    const std::string text = c["text"];
    const json whole = ChatCompletionResponse({Chunks({text}, v1::FINISH_REASON_EOS)}, id, format)["choices"][0];
    EXPECT_EQ(whole["message"]["content"], c["content"]) << text;
    EXPECT_EQ(whole["finish_reason"], c["calls"].is_null() ? "stop" : "tool_calls") << text;
    for (size_t size = 1; size <= 7; ++size) {
      std::vector<std::string> pieces;
      for (size_t at = 0; at < text.size(); at += size) pieces.push_back(text.substr(at, size));
      if (pieces.empty()) pieces.push_back("");
      ChatChoiceStream stream;
      std::string content;
      json calls = json::array(), finish;
      bool content_after_calls = false;
      for (const v1::GenerateResponse& chunk : Chunks(pieces, v1::FINISH_REASON_EOS)) {
        const json choice = ChatCompletionChunk(chunk, id, format, 0, ChunkUsage::kNone, &stream)["choices"][0];
        if (choice["delta"].contains("content")) {
          content_after_calls |= !calls.empty();
          content += choice["delta"]["content"].get<std::string>();
        }
        for (json call : choice["delta"].value("tool_calls", json::array())) {
          call.erase("index");
          calls.push_back(std::move(call));
        }
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
      }
      const std::string where = text + " in pieces of " + std::to_string(size);
      EXPECT_FALSE(content_after_calls) << where;
      EXPECT_EQ(content, whole["message"]["content"].is_null() ? "" : whole["message"]["content"].get<std::string>())
          << where;
      EXPECT_EQ(calls, whole["message"].value("tool_calls", json::array())) << where;
      EXPECT_EQ(finish, whole["finish_reason"]) << where;
      ++streams;
    }
  }
  EXPECT_GE(streams, 200);
}

// "auto" with hermes holds each call after "<tool_call>\n" to one call's
// schema, which says "arguments" as the template asks; a request whose
// answer has its own form leaves the calls free.
TEST(OpenAiChatTest, HermesCallsAreHeldAfterTheirTag) {
  const ToolSupport support{.template_shows_tools = true, .auto_parser = AutoToolParser::kHermes};
  std::string body = kToolsBody;
  body.replace(body.find("TOOL_CHOICE"), 11, "\"auto\"");
  absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(body, support);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->format.tools.parser, AutoToolParser::kHermes);
  const v1::SamplingParams& sampling = call->requests[0].sampling();
  EXPECT_EQ(sampling.response_format(), v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA);
  EXPECT_EQ(sampling.lazy_trigger(), "<tool_call>\n");
  // As vLLM's hermes parser: special tokens are written (a model's tags may
  // be special tokens), unless the client said otherwise.
  EXPECT_TRUE(sampling.has_skip_special_tokens());
  EXPECT_FALSE(sampling.skip_special_tokens());
  {
    std::string own = kToolsBody;
    own.replace(own.find("TOOL_CHOICE"), 11, "\"auto\", \"skip_special_tokens\": true");
    absl::StatusOr<CompletionCall> kept = ParseChatCompletionRequest(own, support);
    ASSERT_TRUE(kept.ok()) << kept.status();
    EXPECT_TRUE(kept->requests[0].sampling().skip_special_tokens());
  }
  const json schema = json::parse(sampling.json_schema());
  ASSERT_EQ(schema["anyOf"].size(), 2u);
  EXPECT_EQ(schema["anyOf"][0]["required"], json({"name", "arguments"}));
  EXPECT_EQ(schema["anyOf"][0]["properties"]["arguments"]["required"], json({"city"}));
  EXPECT_EQ(schema["anyOf"][1]["properties"]["name"]["enum"], json({"get_time"}));
  // The answer is read as hermes reads it, held or not.
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  const json j = ChatCompletionResponse(
      {Chunks({"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}", "\n</tool_call>"}, v1::FINISH_REASON_EOS)},
      id, call->format);
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"], json({{"name", "get_time"}, {"arguments", "{}"}}));
  // "required" keeps vLLM's list of {"name", "parameters"}, untriggered.
  body = kToolsBody;
  body.replace(body.find("TOOL_CHOICE"), 11, "\"required\"");
  call = ParseChatCompletionRequest(body, support);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA);
  EXPECT_EQ(call->requests[0].sampling().lazy_trigger(), "");
  EXPECT_THAT(call->requests[0].sampling().json_schema(), HasSubstr("\"parameters\""));
  // min_tokens: the calls are free (the held value would end the answer).
  body = kToolsBody;
  body.replace(body.find("TOOL_CHOICE"), 11, "\"auto\", \"min_tokens\": 3");
  call = ParseChatCompletionRequest(body, support);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_TEXT);
  EXPECT_EQ(call->requests[0].sampling().lazy_trigger(), "");
}

// Text before a tag streams as it comes; the calls go out once the answer
// is whole.
TEST(OpenAiChatTest, HermesStreamSendsTheTextBeforeACallAtOnce) {
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools.mode = ToolCallFormat::Mode::kAuto;
  format.tools.parser = AutoToolParser::kHermes;
  ChatChoiceStream stream;
  const std::vector<v1::GenerateResponse> chunks =
      Chunks({"Let me", " check. <", "tool_call>\n{\"name\": \"now\", ", "\"arguments\": {}}\n</tool_call>"},
             v1::FINISH_REASON_EOS);
  auto delta = [&](size_t i) {
    return ChatCompletionChunk(chunks[i], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0];
  };
  EXPECT_EQ(delta(0)["delta"], json({{"content", "Let me"}}));
  EXPECT_EQ(delta(1)["delta"], json({{"content", " check. "}}));  // "<" held: it may begin a tag
  EXPECT_EQ(delta(2)["delta"], json::object());
  const json last = delta(3);
  EXPECT_EQ(last["delta"]["tool_calls"],
            json::parse(R"([{"id": "call_chatcmpl-9_0_0", "type": "function", "index": 0,
                             "function": {"name": "now", "arguments": "{}"}}])"))
      << last;
  EXPECT_EQ(last["finish_reason"], "tool_calls");
}

// Calls held after "<tool_call>\n" (the request's own format, as
// ParseChatCompletionRequest sets it with the hermes parser): a stream sends
// each call's id and name once the name is whole, then its arguments as
// written, as vLLM streams them; the whole answer reads the same text the
// same way, so in pieces of every size the deltas join to it.
TEST(OpenAiChatTest, HeldHermesCallsStreamTheirArgumentsAsWritten) {
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools.mode = ToolCallFormat::Mode::kAuto;
  format.tools.parser = AutoToolParser::kHermes;
  format.tools.call_schema = true;
  struct Case {
    std::string text;
    v1::FinishReason reason;
    std::string content;
    std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
    std::string finish;
  };
  const std::string weather = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
  const std::vector<Case> cases = {
      {"Let me check.\n<tool_call>\n" + weather + "\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": "
       "{}}\n</tool_call>",
       v1::FINISH_REASON_EOS, "Let me check.\n", {{"get_weather", R"({"city": "Paris"})"}, {"now", "{}"}},
       "tool_calls"},
      {"<tool_call>\n" + weather + "\n</tool_call>", v1::FINISH_REASON_EOS, "",
       {{"get_weather", R"({"city": "Paris"})"}}, "tool_calls"},
      // Written as held, not re-dumped: non-ASCII stays, the last call needs no close tag.
      {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Z\xC3\xBCrich\", \"n\": 1.50}}",
       v1::FINISH_REASON_EOS, "", {{"get_weather", "{\"city\": \"Z\xC3\xBCrich\", \"n\": 1.50}"}}, "tool_calls"},
      // Cut by the token limit: the call as far as written, the engine's reason.
      {"a <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa", v1::FINISH_REASON_LENGTH, "a ",
       {{"get_weather", R"({"city": "Pa)"}}, "length"},
      // A later tag the lazy format did not hold ends the calls.
      {"<tool_call>\n" + weather + "\n</tool_call><tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
       v1::FINISH_REASON_EOS, "", {{"get_weather", R"({"city": "Paris"})"}}, "tool_calls"},
      // No held call: read whole at the end, as vLLM reads it (json.dumps'd arguments).
      {"Hi <tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>", v1::FINISH_REASON_EOS, "Hi ", {{"now", "{}"}},
       "tool_calls"},
      {"Just a < b and <tool_x", v1::FINISH_REASON_EOS, "Just a < b and <tool_x", {}, "stop"},
      {"ok <tool_call>\n{\"na", v1::FINISH_REASON_LENGTH, "ok <tool_call>\n{\"na", {}, "length"},
  };
  for (const Case& c : cases) {
    const json whole = ChatCompletionResponse({Chunks({c.text}, c.reason)}, id, format)["choices"][0];
    json want_calls = json::array();
    for (size_t i = 0; i < c.calls.size(); ++i) {
      want_calls.push_back({{"id", "call_chatcmpl-9_0_" + std::to_string(i)},
                            {"type", "function"},
                            {"function", {{"name", c.calls[i].first}, {"arguments", c.calls[i].second}}}});
    }
    EXPECT_EQ(whole["message"].value("tool_calls", json::array()), want_calls) << c.text;
    EXPECT_EQ(whole["message"]["content"].is_null() ? "" : whole["message"]["content"].get<std::string>(),
              c.content)
        << c.text;
    EXPECT_EQ(whole["finish_reason"], c.finish) << c.text;
    for (size_t size = 1; size <= 7; ++size) {
      // Pieces of `size` bytes, a character never split (the engine's
      // detokenizer sends whole characters).
      std::vector<std::string> pieces;
      for (size_t at = 0; at < c.text.size();) {
        size_t end = std::min(c.text.size(), at + size);
        while (end < c.text.size() && (static_cast<unsigned char>(c.text[end]) & 0xC0) == 0x80) ++end;
        pieces.push_back(c.text.substr(at, end - at));
        at = end;
      }
      ChatChoiceStream stream;
      std::string content;
      json calls = json::array(), finish;
      int argument_deltas = 0;
      bool content_after_calls = false;
      for (const v1::GenerateResponse& chunk : Chunks(pieces, c.reason)) {
        const json choice = ChatCompletionChunk(chunk, id, format, 0, ChunkUsage::kNone, &stream)["choices"][0];
        if (choice["delta"].contains("content")) {
          content_after_calls |= !calls.empty();
          content += choice["delta"]["content"].get<std::string>();
        }
        for (const json& d : choice["delta"].value("tool_calls", json::array())) {
          const size_t index = d["index"];
          if (index == calls.size()) {
            ASSERT_TRUE(d.contains("id") && d["function"].contains("name")) << d;  // a call opens with its name
            calls.push_back({{"id", d["id"]}, {"type", d["type"]},
                             {"function", {{"name", d["function"]["name"]}, {"arguments", ""}}}});
          }
          ASSERT_LT(index, calls.size()) << d;
          const std::string part = d["function"]["arguments"];
          argument_deltas += !part.empty();
          calls[index]["function"]["arguments"] = calls[index]["function"]["arguments"].get<std::string>() + part;
        }
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
      }
      const std::string where = c.text + " in pieces of " + std::to_string(size);
      EXPECT_FALSE(content_after_calls) << where;
      EXPECT_EQ(content, c.content) << where;
      EXPECT_EQ(calls, want_calls) << where;
      EXPECT_EQ(finish, c.finish) << where;
      // Held calls' arguments come in parts as they are written.
      if (size == 1 && c.text.starts_with("Let me")) {
        EXPECT_GE(argument_deltas, 10) << where;
      }
    }
  }
}

// --reasoning-parser: the thinking apart, as vLLM's deepseek_r1 and qwen3
// parsers set it (vllm/reasoning/qwen3_reasoning_parser.py: the thinking is
// open from the answer's start, "<think>" written or not, unless the prompt
// closed it); streamed in pieces of every size the reasoning and content
// deltas join to the unstreamed message, reasoning first.
TEST(OpenAiChatTest, ReasoningParsersSetTheThinkingApart) {
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  struct Case {
    ReasoningParser parser;
    std::string text;
    json reasoning;  // null: none
    json content;
    bool thinking_off = false;  // the prompt closed the thinking (qwen3's enable_thinking false)
  };
  const ReasoningParser r1 = ReasoningParser::kDeepSeekR1, qwen3 = ReasoningParser::kQwen3;
  const std::vector<Case> cases = {
      {r1, "<think>\nabc\n</think>\n\nHello", "\nabc\n", "\n\nHello"},
      {r1, "abc</think>Hi", "abc", "Hi"},           // R1's template wrote the <think>
      {r1, "abc", "abc", nullptr},                   // cut while thinking: all reasoning
      {r1, "abc</think>", "abc", nullptr},           // vLLM: content or None
      {r1, "<thinking> a</think>b", "<thinking> a", "b"},
      {r1, "x </thin y", "x </thin y", nullptr},     // a held "</thin" given back at the end
      {qwen3, "<think>x</think>y", "x", "y"},
      {qwen3, "<think>x", "x", nullptr},
      {qwen3, "x</think>y", "x", "y"},               // Qwen3-2507 / 3.5: the template wrote <think>
      {qwen3, "Hello", "Hello", nullptr},            // cut while thinking: all reasoning
      {qwen3, "<thin", "<thin", nullptr},
      {qwen3, "", "", nullptr},
      {qwen3, "<think>x</think>y", nullptr, "<think>x</think>y", true},  // thinking off: all content
      {qwen3, "Hello", nullptr, "Hello", true},
      {r1, "abc</think>Hi", "abc", "Hi", true},      // R1's template always opens the thinking
  };
  for (const Case& c : cases) {
    CompletionFormat format{.chat = true};
    format.reasoning = c.parser;
    format.thinking_off = c.thinking_off;
    const json message =
        ChatCompletionResponse({Chunks({c.text}, v1::FINISH_REASON_EOS)}, id, format)["choices"][0]["message"];
    EXPECT_EQ(message["reasoning"], c.reasoning) << c.text;
    EXPECT_EQ(message["reasoning_content"], c.reasoning) << c.text;
    EXPECT_EQ(message["content"], c.content) << c.text;
    for (size_t size = 1; size <= 5; ++size) {
      std::vector<std::string> pieces;
      for (size_t at = 0; at < c.text.size(); at += size) pieces.push_back(c.text.substr(at, size));
      if (pieces.empty()) pieces.push_back("");
      ChatChoiceStream stream;
      std::string reasoning, content;
      bool saw_reasoning = false, reasoning_after_content = false;
      for (const v1::GenerateResponse& chunk : Chunks(pieces, v1::FINISH_REASON_EOS)) {
        const json delta = ChatCompletionChunk(chunk, id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"];
        if (delta.contains("reasoning")) {
          EXPECT_EQ(delta["reasoning"], delta["reasoning_content"]);
          reasoning_after_content |= !content.empty();
          reasoning += delta["reasoning"].get<std::string>();
          saw_reasoning = true;
        }
        if (delta.contains("content")) content += delta["content"].get<std::string>();
      }
      const std::string where = c.text + " in pieces of " + std::to_string(size);
      EXPECT_FALSE(reasoning_after_content) << where;
      EXPECT_EQ(reasoning, c.reasoning.is_null() ? "" : c.reasoning.get<std::string>()) << where;
      if (c.reasoning.is_null()) {
        EXPECT_FALSE(saw_reasoning) << where;
      }
      EXPECT_EQ(content, c.content.is_null() ? "" : c.content.get<std::string>()) << where;
    }
  }
  // Without a parser the message has no reasoning and keeps the tags.
  const json plain = ChatCompletionResponse({Chunks({"<think>x</think>y"}, v1::FINISH_REASON_EOS)}, id,
                                            CompletionFormat{.chat = true})["choices"][0]["message"];
  EXPECT_FALSE(plain.contains("reasoning"));
  EXPECT_EQ(plain["content"], "<think>x</think>y");
  // Tools are read from what follows the reasoning (a held hermes call here).
  CompletionFormat tools{.chat = true};
  tools.reasoning = qwen3;
  tools.tools.mode = ToolCallFormat::Mode::kAuto;
  tools.tools.parser = AutoToolParser::kHermes;
  tools.tools.call_schema = true;
  const json called = ChatCompletionResponse(
      {Chunks({"<think>I need the time. <tool_call> later</think>\n\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}"},
              v1::FINISH_REASON_EOS)},
      id, tools)["choices"][0];
  EXPECT_EQ(called["message"]["reasoning"], "I need the time. <tool_call> later");
  EXPECT_EQ(called["message"]["content"], "\n\n");
  EXPECT_EQ(called["message"]["tool_calls"][0]["function"], json({{"name", "now"}, {"arguments", "{}"}}));
  EXPECT_EQ(called["finish_reason"], "tool_calls");
  EXPECT_FALSE(ReasoningParserFromName("r1").ok());
  EXPECT_EQ(*ReasoningParserFromName(""), ReasoningParser::kNone);
}

TEST(OpenAiChatTest, AutoToolChoiceNeedsAParserAndShowsTheToolsWhereTheTemplateDoes) {
  const std::string body = std::string(kToolsBody).replace(std::string(kToolsBody).find("TOOL_CHOICE"), 11, R"("auto")");
  EXPECT_THAT(std::string(ParseChatCompletionRequest(body).status().message()),
              HasSubstr("\"auto\" (OpenAI's default once tools are given) needs a tool-call parser"));
  absl::StatusOr<CompletionCall> call =
      ParseChatCompletionRequest(body, ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->format.tools.mode, ToolCallFormat::Mode::kAuto);
  // A free answer, unless it begins a call (AutoToolCallsAreHeldToTheCallSchemaOnceBegun);
  // the tools in the prompt in the body's order.
  EXPECT_EQ(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA);
  const v1::ChatPrompt& chat = call->requests[0].chat();
  ASSERT_EQ(chat.tools_size(), 2);
  EXPECT_EQ(chat.tools(0),
            R"({"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":)"
            R"({"type":"object","properties":{"unit":{"enum":["c","f"]},"city":{"type":"string"}},)"
            R"("required":["city"]}}})");
  // Tools without tool_choice are "auto" too (OpenAI's default).
  std::string implicit = kToolsBody;
  const std::string choice_field = ",\n  \"tool_choice\": TOOL_CHOICE";
  implicit.replace(implicit.find(choice_field), choice_field.size(), "");
  call = ParseChatCompletionRequest(implicit, ToolSupport{.template_shows_tools = true, .auto_parser = kLlama3Json});
  ASSERT_TRUE(call.ok()) << call.status() << implicit;
  EXPECT_EQ(call->format.tools.mode, ToolCallFormat::Mode::kAuto);
  // A template without tools does not get them (named and required work as before).
  call = ParseChatCompletionRequest(std::string(kToolsBody).replace(std::string(kToolsBody).find("TOOL_CHOICE"), 11,
                                                                     R"("required")"));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->requests[0].chat().tools_size(), 0);

  // The answer: calls with finish_reason "tool_calls", or content (here
  // a request whose calls the model writes freely: its own response_format,
  // ignore_eos, min_tokens, or a schema JSON schema mode does not implement).
  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools = {ToolCallFormat::Mode::kAuto, ""};
  json j = ChatCompletionResponse(
      {Chunks({R"({"name": "get_time", )", R"("parameters": {}})"}, v1::FINISH_REASON_EOS)}, id, format);
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"], json({{"name", "get_time"}, {"arguments", "{}"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  j = ChatCompletionResponse({Chunks({"It is ", "sunny."}, v1::FINISH_REASON_EOS)}, id, format);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "It is sunny.");
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");

  // Streamed: a call is held back and sent whole at the end...
  ChatChoiceStream stream;
  std::vector<v1::GenerateResponse> chunks =
      Chunks({"<|python", R"(_tag|>{"name": "get_time", )", R"("arguments": {}})"}, v1::FINISH_REASON_EOS);
  EXPECT_EQ(ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"],
            json::object());
  EXPECT_EQ(ChatCompletionChunk(chunks[1], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"],
            json::object());
  json last = ChatCompletionChunk(chunks[2], id, format, 0, ChunkUsage::kNone, &stream);
  EXPECT_EQ(last["choices"][0]["delta"]["tool_calls"][0]["function"]["name"], "get_time");
  EXPECT_EQ(last["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "tool_calls");
  // ...and text streams as content from the first chunk that cannot be a call.
  stream = ChatChoiceStream();
  chunks = Chunks({"", "It", " is"}, v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"],
            json::object());
  EXPECT_EQ(ChatCompletionChunk(chunks[1], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"],
            json({{"content", "It"}}));
  last = ChatCompletionChunk(chunks[2], id, format, 0, ChunkUsage::kNone, &stream);
  EXPECT_EQ(last["choices"][0]["delta"], json({{"content", " is"}}));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  // A stream that looked like a call but is not one ends as content.
  stream = ChatChoiceStream();
  chunks = Chunks({"{oops", "}"}, v1::FINISH_REASON_EOS);
  ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream);
  last = ChatCompletionChunk(chunks[1], id, format, 0, ChunkUsage::kNone, &stream);
  EXPECT_EQ(last["choices"][0]["delta"], json({{"content", "{oops}"}}));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
}

// "auto" holds a call the model begins to one call's schema (the lazy
// format), unless something else decides the answer's form; such a call is
// read and streamed as "required" reads and streams one.
TEST(OpenAiChatTest, AutoToolCallsAreHeldToTheCallSchemaOnceBegun) {
  const ToolSupport support{.template_shows_tools = true, .auto_parser = AutoToolParser::kLlama3Json};
  auto parse = [&](const std::string& extra) {
    std::string body = kToolsBody;
    body.replace(body.find("TOOL_CHOICE"), 11, "\"auto\"" + extra);
    return ParseChatCompletionRequest(body, support);
  };
  absl::StatusOr<CompletionCall> call = parse("");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->format.tools.call_schema);
  EXPECT_EQ(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA);
  EXPECT_EQ(json::parse(call->requests[0].sampling().json_schema()),
            json::parse(R"({"anyOf": [
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_weather"]},
     "parameters": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "city": {"type": "string"}},
                    "required": ["city"]}}, "required": ["name", "parameters"]},
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_time"]},
     "parameters": {"type": "object", "properties": {}}}, "required": ["name", "parameters"]}]})"));
  for (const std::string extra : {R"(, "response_format": {"type": "json_object"})", R"(, "ignore_eos": true)",
                                  R"(, "min_tokens": 2)"}) {
    call = parse(extra);
    ASSERT_TRUE(call.ok()) << call.status() << extra;
    EXPECT_FALSE(call->format.tools.call_schema) << extra;
    EXPECT_NE(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA) << extra;
  }
  std::string unsupported = kToolsBody;
  unsupported.replace(unsupported.find(R"({"type": "string"})"), 18, R"({"type": "integer", "multipleOf": 3})");
  unsupported.replace(unsupported.find("TOOL_CHOICE"), 11, "\"auto\"");
  call = ParseChatCompletionRequest(unsupported, support);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_FALSE(call->format.tools.call_schema);
  EXPECT_EQ(call->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_TEXT);

  const CompletionIdentity id{"chatcmpl-9", 5, "m"};
  CompletionFormat format{.chat = true};
  format.tools = {ToolCallFormat::Mode::kAuto, "", /*call_schema=*/true};
  const json call_0 = {{"index", 0}, {"id", "call_chatcmpl-9_0_0"}, {"type", "function"}};
  // Streamed: the call's id and name once the name is whole, then its
  // arguments as they come; unstreamed, the same call.
  ChatChoiceStream stream;
  std::vector<v1::GenerateResponse> chunks =
      Chunks({R"({"name": "get_)", R"(weather", "parameters": {"city": )", R"("Oslo"}})"}, v1::FINISH_REASON_EOS);
  std::vector<json> deltas;
  for (const v1::GenerateResponse& c : chunks) {
    deltas.push_back(ChatCompletionChunk(c, id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]);
  }
  EXPECT_EQ(deltas[0]["delta"], json::object());
  json opened = call_0;
  opened["function"] = {{"name", "get_weather"}, {"arguments", R"({"city": )"}};
  EXPECT_EQ(deltas[1]["delta"], json({{"tool_calls", {opened}}}));
  EXPECT_EQ(deltas[2]["delta"], json({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", R"("Oslo"})"}}}}}}}));
  EXPECT_EQ(deltas[2]["finish_reason"], "tool_calls");
  json j = ChatCompletionResponse({chunks}, id, format);
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["id"], "call_chatcmpl-9_0_0");
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"],
            json({{"name", "get_weather"}, {"arguments", R"({"city": "Oslo"})"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  // Cut by the token limit: the call begun, its arguments cut short, with
  // "length", as "required" keeps one; cut before its name is whole, content.
  chunks = Chunks({R"({"name": "get_weather", "parameters": {"ci)"}, v1::FINISH_REASON_LENGTH);
  stream = ChatChoiceStream();
  json last = ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0];
  opened["function"]["arguments"] = R"({"ci)";
  EXPECT_EQ(last["delta"], json({{"tool_calls", {opened}}}));
  EXPECT_EQ(last["finish_reason"], "length");
  j = ChatCompletionResponse({chunks}, id, format);
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], R"({"ci)");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  chunks = Chunks({R"({"na)", R"(me": "get)"}, v1::FINISH_REASON_LENGTH);
  stream = ChatChoiceStream();
  EXPECT_EQ(ChatCompletionChunk(chunks[0], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0]["delta"],
            json::object());
  last = ChatCompletionChunk(chunks[1], id, format, 0, ChunkUsage::kNone, &stream)["choices"][0];
  EXPECT_EQ(last["delta"], json({{"content", R"({"name": "get)"}}));
  j = ChatCompletionResponse({chunks}, id, format);
  EXPECT_EQ(j["choices"][0]["message"]["content"], R"({"name": "get)");
  // Prose streams as content from its first byte.
  stream = ChatChoiceStream();
  EXPECT_EQ(ChatCompletionChunk(Chunks({"It"}, v1::FINISH_REASON_UNSPECIFIED)[0], id, format, 0, ChunkUsage::kNone,
                                &stream)["choices"][0]["delta"],
            json({{"content", "It"}}));
}

// Where the template has tool turns: an assistant's calls and a tool's
// result map onto the chat prompt; elsewhere they are refused by name.
TEST(OpenAiChatTest, ToolTurnsMapOntoTheChatPromptWhereTheTemplateHasThem) {
  const json body = {
      {"messages",
       {{{"role", "user"}, {"content", "Weather?"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Oslo"})"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}}}}};
  absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(body.dump(), ToolSupport{.template_shows_tools = true});
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->requests[0].chat();
  ASSERT_EQ(chat.messages_size(), 3);
  ASSERT_EQ(chat.messages(1).tool_calls_size(), 1);
  EXPECT_EQ(chat.messages(1).tool_calls(0).id(), "call_1");
  EXPECT_EQ(chat.messages(1).tool_calls(0).name(), "get_weather");
  EXPECT_EQ(chat.messages(1).tool_calls(0).arguments(), R"({"city": "Oslo"})");
  EXPECT_EQ(chat.messages(2).role(), "tool");
  EXPECT_EQ(chat.messages(2).tool_call_id(), "call_1");
  EXPECT_EQ(chat.messages(2).content(), "18 C");

  EXPECT_THAT(std::string(ParseChatCompletionRequest(body.dump()).status().message()),
              HasSubstr("messages[1].tool_calls: not supported (this chat template has no tool turns)"));
  json bad = body;
  bad["messages"][1]["tool_calls"][0]["function"]["arguments"] = "city=Oslo";
  EXPECT_THAT(std::string(ParseChatCompletionRequest(bad.dump(), ToolSupport{.template_shows_tools = true})
                              .status()
                              .message()),
              HasSubstr("messages[1].tool_calls[0].function.arguments: not a JSON object's text"));
  bad = body;
  bad["messages"][0]["tool_calls"] = body["messages"][1]["tool_calls"];
  EXPECT_THAT(std::string(ParseChatCompletionRequest(bad.dump(), ToolSupport{.template_shows_tools = true})
                              .status()
                              .message()),
              HasSubstr("messages[0].tool_calls: only an assistant's"));
}

}  // namespace
}  // namespace attnserve
