#include "server/core/chat_prompt.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/formats/decoder_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ChatPromptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<LoadedDecoder> loaded =
        LoadDecoder(std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf", DType::kF32);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    model_ = new LoadedDecoder(std::move(*loaded));
  }
  static const Tokenizer& tokenizer() { return *model_->tokenizer; }
  static LoadedDecoder* model_;
};
LoadedDecoder* ChatPromptTest::model_ = nullptr;

// The Llama-2 template text as tokenizer_config.json carries it (the same
// as engine/tokenizers/chat_template.cc's).
const char kLlama2[] =
    R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})";

TEST_F(ChatPromptTest, TheFlagWinsThenTheModelsOwnKnownTemplateElseNone) {
  ChatSetup flag = ResolveChatSetup("chatml", kLlama2, tokenizer());
  ASSERT_TRUE(flag.format.has_value());
  EXPECT_EQ(*flag.format, ChatFormat::kChatMl);
  EXPECT_EQ(flag.origin, "--chat-template=chatml");
  EXPECT_EQ(flag.bos_token, "<s>");
  EXPECT_EQ(flag.eos_token, "</s>");

  ChatSetup own = ResolveChatSetup("", kLlama2, tokenizer());
  ASSERT_TRUE(own.format.has_value());
  EXPECT_EQ(*own.format, ChatFormat::kLlama2);
  EXPECT_EQ(own.origin, "the model's own");

  ChatSetup unknown = ResolveChatSetup("", "{{ messages | tojson }}", tokenizer());
  EXPECT_FALSE(unknown.format.has_value());
  EXPECT_THAT(unknown.origin, HasSubstr("not one attnserve reproduces exactly"));
  ChatSetup none = ResolveChatSetup("", "", tokenizer());
  EXPECT_FALSE(none.format.has_value());
  EXPECT_THAT(none.origin, HasSubstr("the model has no chat template; start the server with --chat-template="));
}

TEST_F(ChatPromptTest, TheEndOfTurnTokenEndsAChatWhereItIsNotEos) {
  // qwen2_tiny's vocabulary has <|im_end|> (id 2) as a special token; its EOS
  // is <|endoftext|>.
  absl::StatusOr<LoadedDecoder> qwen =
      LoadDecoder(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/qwen2_tiny", DType::kF32);
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  const Tokenizer& t = *qwen->tokenizer;
  ASSERT_EQ(t.PieceToId("<|im_end|>"), 2);
  ASSERT_NE(t.special().eos, 2);
  EXPECT_THAT(ResolveChatSetup("qwen2", "", t).end_of_turn_ids, ElementsAre(2));
  EXPECT_THAT(ResolveChatSetup("chatml", "", t).end_of_turn_ids, ElementsAre(2));
  EXPECT_TRUE(ResolveChatSetup("llama3", "", t).end_of_turn_ids.empty());  // no <|eot_id|> there
  EXPECT_TRUE(ResolveChatSetup("chatml", "", tokenizer()).end_of_turn_ids.empty());  // stories260K has none
  EXPECT_TRUE(ResolveChatSetup("llama2", "", tokenizer()).end_of_turn_ids.empty());  // a turn ends with EOS
  // A format whose marker tokens the model lacks is served, with a warning.
  EXPECT_EQ(ResolveChatSetup("chatml", "", t).warning, "");
  EXPECT_EQ(ResolveChatSetup("chatml", "", tokenizer()).warning,
            "the chatml chat format's <|im_start|> <|im_end|> are not special tokens of this model's tokenizer: "
            "they are tokenized as plain text (was the model trained with it?)");
  EXPECT_EQ(ResolveChatSetup("llama2", "", tokenizer()).warning, "");  // plain text and BOS/EOS
}

v1::ChatPrompt Chat(const std::vector<std::pair<std::string, std::string>>& messages) {
  v1::ChatPrompt chat;
  for (const auto& [role, content] : messages) {
    v1::ChatMessage* m = chat.add_messages();
    m->set_role(role);
    m->set_content(content);
  }
  return chat;
}

TEST_F(ChatPromptTest, RendersWithoutAddingABosOfItsOwn) {
  const ChatSetup setup = ResolveChatSetup("llama2", "", tokenizer());
  absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(Chat({{"user", "Hi"}}), setup, tokenizer());
  ASSERT_TRUE(ids.ok()) << ids.status();
  // "<s>[INST] Hi [/INST]": one BOS (the template's), then "▁[INST]..."
  TokenizeOptions plain;
  plain.add_bos = false;
  EXPECT_EQ(*ids, *tokenizer().Encode("<s>[INST] Hi [/INST]", plain));
  EXPECT_EQ((*ids)[0], 1);
  EXPECT_NE((*ids)[1], 1);
}

// Qwen3's thinking switch and an answer's thinking given back reach the
// template from the proto (gRPC's door): the prompt is the template's text
// tokenized, ending in an empty think block with thinking off.
TEST_F(ChatPromptTest, Qwen3ThinkingSwitchAndReasoningGivenBack) {
  absl::StatusOr<LoadedDecoder> qwen =
      LoadDecoder(std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/qwen3_tiny", DType::kF32);
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  const Tokenizer& t = *qwen->tokenizer;
  const ChatSetup setup = ResolveChatSetup("qwen3", "", t);
  EXPECT_EQ(setup.warning, "");  // <|im_start|> and <|im_end|> are special tokens there
  v1::ChatPrompt chat = Chat({{"user", "Hi"}, {"assistant", "Hello"}});
  chat.mutable_messages(1)->set_reasoning_content("\nGreet back.\n");
  chat.set_enable_thinking(false);
  absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(chat, setup, t);
  ASSERT_TRUE(ids.ok()) << ids.status();
  TokenizeOptions plain;
  plain.add_bos = false;
  EXPECT_EQ(*ids, *t.Encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nGreet back.\n</think>\n\n"
                            "Hello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
                            plain));
  chat.clear_enable_thinking();  // unset: thinking on, the prompt ends at the header
  ids = ChatPromptIds(chat, setup, t);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, *t.Encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nGreet back.\n</think>\n\n"
                            "Hello<|im_end|>\n<|im_start|>assistant\n",
                            plain));
  chat.mutable_messages(0)->set_reasoning_content("x");
  ids = ChatPromptIds(chat, setup, t);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().message(), "chat.messages[0].reasoning_content: only an assistant's");
}

// Llama-3.2's system block shows today's date by the server's clock, as
// transformers' strftime_now gives it, unless the request gives one
// (date_string); Llama-3.1's shows its template's default date.
TEST_F(ChatPromptTest, Llama32IsDatedTodayUnlessTheRequestGivesADate) {
  auto system_block = [this](const std::string& format, const v1::ChatPrompt& chat) -> std::string {
    absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(chat, ResolveChatSetup(format, "", tokenizer()), tokenizer());
    EXPECT_TRUE(ids.ok()) << ids.status();
    if (!ids.ok()) return "";
    absl::StatusOr<std::string> text = tokenizer().Decode(*ids);  // stories260K: plain text round-trips
    EXPECT_TRUE(text.ok()) << text.status();
    const size_t at = text->find("Today Date: ");
    return at == std::string::npos ? *text : text->substr(at, text->find('\n', at) - at);
  };
  auto today = [] { return absl::FormatTime("%d %b %Y", absl::Now(), absl::LocalTimeZone()); };
  const std::string before = today();
  const std::string shown = system_block("llama3.2", Chat({{"user", "Hi"}}));
  const std::string after = today();  // a render across midnight shows either
  EXPECT_TRUE(shown == "Today Date: " + before || shown == "Today Date: " + after) << shown;
  EXPECT_EQ(system_block("llama3.1", Chat({{"user", "Hi"}})), "Today Date: 26 Jul 2024");
  v1::ChatPrompt dated = Chat({{"user", "Hi"}});
  dated.set_date_string("01 Feb 2030");
  EXPECT_EQ(system_block("llama3.2", dated), "Today Date: 01 Feb 2030");
  EXPECT_EQ(system_block("llama3.1", dated), "Today Date: 01 Feb 2030");
}

TEST_F(ChatPromptTest, RefusalsNameTheField) {
  const ChatSetup setup = ResolveChatSetup("llama2", "", tokenizer());
  absl::StatusOr<std::vector<int32_t>> ids = ChatPromptIds(Chat({{"tool", "42"}}), setup, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ids.status().message(),
            "chat.messages[0].role: 'tool' is not one of system, user, assistant (the chat template has no tool "
            "turns)");
  // Tools for a template without them (gRPC's door reaches here directly).
  v1::ChatPrompt with_tools = Chat({{"user", "a"}});
  with_tools.add_tools(R"({"type": "function", "function": {"name": "f"}})");
  ids = ChatPromptIds(with_tools, setup, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().message(), "chat.tools: tools are rendered with the llama3.1, llama3.2, qwen2.5 and qwen3 "
            "chat templates only, not with llama2's");
  // Where the template has tool turns, a tool's result is taken; calls
  // only from an assistant.
  const ChatSetup llama31 = ResolveChatSetup("llama3.1", "", tokenizer());
  EXPECT_TRUE(ChatPromptIds(Chat({{"user", "a"}, {"tool", "42"}}), llama31, tokenizer()).ok());
  v1::ChatPrompt user_call = Chat({{"user", "a"}});
  user_call.mutable_messages(0)->add_tool_calls()->set_name("f");
  ids = ChatPromptIds(user_call, llama31, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().message(), "chat.messages[0].tool_calls: only an assistant's");
  ids = ChatPromptIds(Chat({{"user", "a"}, {"user", "b"}}), setup, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("chat.messages[1]: Conversation roles must alternate"));
  ids = ChatPromptIds(Chat({}), setup, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().message(), "chat.messages: the conversation is empty");
  v1::ChatPrompt both = Chat({{"user", "a"}});
  both.set_add_generation_prompt(true);
  both.set_continue_final_message(true);
  ids = ChatPromptIds(both, setup, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("continue_final_message and add_generation_prompt"));
  const ChatSetup none = ResolveChatSetup("", "", tokenizer());
  ids = ChatPromptIds(Chat({{"user", "a"}}), none, tokenizer());
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("chat: the model has no chat template"));
}

}  // namespace
}  // namespace attnserve
