// vLLM's /tokenize and /detokenize bodies onto Tokenize / Detokenize
// (server/http/vllm_tokenize.h) and their answers. Against transformers'
// tokenizer through the real binary: tests/integration/test_http_vllm_tokenize.py.
#include "server/http/vllm_tokenize.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

constexpr ToolSupport kLlama31{.template_shows_tools = true};

TEST(VllmTokenizeTest, APromptOrAChatsMessages) {
  absl::StatusOr<VllmTokenizeCall> call =
      ParseVllmTokenizeRequest(R"({"model": "m", "prompt": "Hi there"})", v1::MODEL_KIND_DECODER, kLlama31);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->request.model(), v1::MODEL_KIND_DECODER);
  EXPECT_EQ(call->request.text(), "Hi there");
  EXPECT_TRUE(call->request.add_special_tokens());  // vLLM's default for a prompt
  EXPECT_FALSE(call->return_token_strs);
  call = ParseVllmTokenizeRequest(R"({"prompt": "x", "add_special_tokens": false, "return_token_strs": true})",
                                  v1::MODEL_KIND_ENCODER, kLlama31);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->request.model(), v1::MODEL_KIND_ENCODER);
  EXPECT_FALSE(call->request.add_special_tokens());
  EXPECT_TRUE(call->return_token_strs);

  // Messages as chat reads them: tools shown (no call asked for, so no
  // tool-call parser is needed), generation prompt by default.
  call = ParseVllmTokenizeRequest(
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
          "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
          "continue_final_message": false})",
      v1::MODEL_KIND_DECODER, kLlama31);
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::ChatPrompt& chat = call->request.chat();
  ASSERT_EQ(chat.messages_size(), 2);
  EXPECT_EQ(chat.messages(1).content(), "Hi");
  ASSERT_EQ(chat.tools_size(), 1);
  EXPECT_EQ(json::parse(chat.tools(0))["function"]["name"], "f");
  EXPECT_FALSE(chat.has_add_generation_prompt() && !chat.add_generation_prompt());
  call = ParseVllmTokenizeRequest(R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})",
                                  v1::MODEL_KIND_DECODER, kLlama31);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_FALSE(call->request.chat().add_generation_prompt());
}

TEST(VllmTokenizeTest, RefusalsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "prompt, messages: exactly one is required"},
      {R"({"prompt": "a", "messages": [{"role": "user", "content": "b"}]})", "exactly one is required"},
      {R"({"prompt": ["a"]})", "prompt: must be a string"},
      {R"({"prompt": "a", "add_special_tokens": 1})", "add_special_tokens: must be a boolean"},
      {R"({"prompt": "a", "model": 3})", "model: must be a string"},
      {R"({"messages": [{"role": "user", "content": "b"}], "add_special_tokens": true})",
       "add_special_tokens: not supported (with messages the chat template writes the prompt's special tokens"},
      {R"({"messages": [{"role": "user", "content": "b"}], "chat_template": "{{ x }}"})", "chat_template"},
      {R"({"messages": "hi"})", "messages"},
      {R"([1, 2])", "object"},
  };
  for (const auto& [body, message] : cases) {
    absl::StatusOr<VllmTokenizeCall> call = ParseVllmTokenizeRequest(body, v1::MODEL_KIND_DECODER, kLlama31);
    ASSERT_FALSE(call.ok()) << body;
    EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(call.status().message()), HasSubstr(message)) << body;
  }
  absl::StatusOr<VllmTokenizeCall> encoder_chat = ParseVllmTokenizeRequest(
      R"({"messages": [{"role": "user", "content": "b"}]})", v1::MODEL_KIND_ENCODER, kLlama31);
  EXPECT_THAT(std::string(encoder_chat.status().message()), HasSubstr("messages: a chat needs a decoder model"));
}

TEST(VllmTokenizeTest, Answers) {
  v1::TokenizeResponse tokens;
  for (int id : {1, 346, 306}) tokens.add_token_ids(id);
  for (const char* piece : {"<s>", "\xe2\x96\x81He", "ll"}) tokens.add_tokens(piece);
  VllmTokenizeCall call;
  EXPECT_EQ(VllmTokenizeResponse(call, tokens, 512),
            json({{"count", 3}, {"max_model_len", 512}, {"tokens", {1, 346, 306}}, {"token_strs", nullptr}}));
  call.return_token_strs = true;
  EXPECT_EQ(VllmTokenizeResponse(call, tokens, 512)["token_strs"], json({"<s>", "\xe2\x96\x81He", "ll"}));

  absl::StatusOr<v1::DetokenizeRequest> detok =
      ParseVllmDetokenizeRequest(R"({"model": "m", "tokens": [1, 346]})", v1::MODEL_KIND_DECODER);
  ASSERT_TRUE(detok.ok()) << detok.status();
  EXPECT_EQ(detok->token_ids_size(), 2);
  EXPECT_FALSE(detok->skip_special_tokens());  // transformers' decode keeps them
  for (const auto& [body, message] : {std::pair<const char*, const char*>{R"({})", "tokens: required"},
                                      {R"({"tokens": "1 2"})", "tokens: must be an array of token ids"},
                                      {R"({"tokens": [1, 2.5]})", "tokens[1]"}}) {
    EXPECT_THAT(std::string(ParseVllmDetokenizeRequest(body, v1::MODEL_KIND_DECODER).status().message()),
                HasSubstr(message))
        << body;
  }
  v1::DetokenizeResponse text;
  text.set_text("<s> Hello");
  EXPECT_EQ(VllmDetokenizeResponse(text), json({{"prompt", "<s> Hello"}}));
}

}  // namespace
}  // namespace attnserve
