#include "engine/tokenizers/chat_template.h"

#include <fstream>
#include <string>
#include <vector>

#include "engine/formats/decoder_loader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

// Ordered: tools and call arguments are rendered in their key order.
using json = nlohmann::ordered_json;

// tools/golden/chat_templates.py: transformers' apply_chat_template on each
// format's published template.
json Golden() {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/chat_templates/renders.json");
  EXPECT_TRUE(in.good()) << "run tools/golden/chat_templates.py";
  json doc;
  in >> doc;
  return doc;
}

TEST(ChatTemplateTest, RecognisesEachPublishedTemplateAndNothingElse) {
  const json doc = Golden();
  ASSERT_EQ(doc["templates"].size(), 17u);
  for (const auto& [name, t] : doc["templates"].items()) {
    const std::string jinja = t["jinja"].get<std::string>();
    std::optional<ChatFormat> format = KnownChatTemplate(jinja);
    ASSERT_TRUE(format.has_value()) << name << " (" << t["model"] << ") not recognised";
    EXPECT_EQ(ChatFormatName(*format), name);
    EXPECT_EQ(KnownChatTemplate("\n  " + jinja + "\n"), format) << "surrounding whitespace";
    // One character changed (a default system prompt, another spacing) is
    // another template: not rendered as this one.
    std::string edited = jinja;
    edited.insert(edited.size() / 2, " ");
    EXPECT_FALSE(KnownChatTemplate(edited).has_value()) << name;
  }
  // Other models' copies of a format's template, typed differently: the
  // same format (RendersAsTransformersDoes renders their cases).
  ASSERT_GE(doc["variants"].size(), 1u);
  for (const auto& [name, t] : doc["variants"].items()) {
    const std::string jinja = t["jinja"].get<std::string>();
    ASSERT_NE(jinja, doc["templates"][t["format"].get<std::string>()]["jinja"].get<std::string>()) << name;
    std::optional<ChatFormat> format = KnownChatTemplate(jinja);
    ASSERT_TRUE(format.has_value()) << name << " (" << t["model"] << ") not recognised";
    EXPECT_EQ(ChatFormatName(*format), t["format"].get<std::string>()) << name;
  }
  EXPECT_FALSE(KnownChatTemplate("").has_value());
}

TEST(ChatTemplateTest, RendersAsTransformersDoes) {
  const json doc = Golden();
  ASSERT_GE(doc["cases"].size(), 396u);
  int with_tools = 0;
  for (const json& c : doc["cases"]) with_tools += c.contains("tools") && c.contains("text") ? 1 : 0;
  EXPECT_GE(with_tools, 10);
  int rendered = 0, refused = 0, want_refused = 0;
  for (const json& c : doc["cases"]) want_refused += c.contains("error") ? 1 : 0;
  for (const json& c : doc["cases"]) {
    const std::string name = c["format"].get<std::string>();
    absl::StatusOr<ChatFormat> format = ChatFormatFromName(name);
    ASSERT_TRUE(format.ok()) << format.status();
    std::vector<ChatMessage> messages;
    for (const json& m : c["messages"]) {
      ChatMessage message{m["role"], "", {}};
      if (m.contains("content") && m["content"].is_array()) {
        // Text parts, as the server gives them: joined with "\n", and as sent.
        for (const json& part : m["content"]) {
          if (!message.content_parts.empty()) message.content += "\n";
          message.content += part["text"].get<std::string>();
          message.content_parts.push_back(part["text"].get<std::string>());
        }
      } else {
        message.content = m.value("content", "");
      }
      for (const json& call : m.value("tool_calls", json::array())) {
        message.tool_calls.push_back({call["function"]["name"], call["function"]["arguments"].dump()});
      }
      if (m.contains("reasoning_content")) message.reasoning_content = m["reasoning_content"].get<std::string>();
      messages.push_back(std::move(message));
    }
    ChatRenderOptions options;
    for (const json& tool : c.value("tools", json::array())) options.tools.push_back(tool.dump());
    options.enable_thinking = c.value("enable_thinking", true);
    if (c.contains("date_string")) options.date_string = c["date_string"].get<std::string>();
    options.today = c.value("today", "");
    options.add_generation_prompt = c["add_generation_prompt"];
    options.continue_final_message = c["continue_final_message"];
    options.bos_token = doc["templates"][name]["bos_token"];
    options.eos_token = doc["templates"][name]["eos_token"];
    absl::StatusOr<std::string> text = RenderChat(*format, messages, options);
    const std::string where = name + (c.contains("template") ? " (" + c["template"].get<std::string>() + ")" : "") +
                              " / " + c["conversation"].get<std::string>() + " / add_generation_prompt " +
                              (options.add_generation_prompt ? "true" : "false") + " / continue_final_message " +
                              (options.continue_final_message ? "true" : "false") +
                              (c.contains("enable_thinking") ? " / enable_thinking " + c["enable_thinking"].dump() : "") +
                              (c.contains("date_string") ? " / date_string " + c["date_string"].dump() : "");
    if (c.contains("error")) {
      EXPECT_FALSE(text.ok()) << where << ": transformers refused (" << c["error"] << ") but got\n" << *text;
      if (!text.ok()) {
        EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << where;
        ++refused;
      }
      continue;
    }
    ASSERT_TRUE(text.ok()) << where << ": " << text.status();
    EXPECT_EQ(*text, c["text"].get<std::string>()) << where;
    ++rendered;
  }
  EXPECT_EQ(refused, want_refused);
  EXPECT_EQ(rendered + refused, static_cast<int>(doc["cases"].size()));
  EXPECT_GT(rendered, 150);  // most cases render: the comparison is not vacuous
}

// The whole chat prompt path on a real model: stories260K's GGUF tokenizer
// on the Llama-2 rendering gives sentencepiece's ids (each piece between
// <s> / </s> with its own dummy-prefix space, as llama.cpp and HF's Llama-2
// tokenizer do).
TEST(ChatTemplateTest, Stories260KPromptIdsAreSentencePieces) {
  const json doc = Golden();
  absl::StatusOr<LoadedDecoder> model =
      LoadDecoder(std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf", DType::kF32);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tokenizer& tokenizer = *model->tokenizer;
  ASSERT_EQ(doc["stories260K_llama2_ids"].size(), 5u);
  for (const json& c : doc["stories260K_llama2_ids"]) {
    std::vector<ChatMessage> messages;
    for (const json& m : c["messages"]) messages.push_back({m["role"], m["content"], {}});
    ChatRenderOptions options;
    options.add_generation_prompt = c["add_generation_prompt"];
    options.continue_final_message = c["continue_final_message"];
    options.bos_token = tokenizer.IdToPiece(tokenizer.special().bos);
    options.eos_token = tokenizer.IdToPiece(tokenizer.special().eos);
    absl::StatusOr<std::string> text = RenderChat(ChatFormat::kLlama2, messages, options);
    ASSERT_TRUE(text.ok()) << text.status();
    ASSERT_EQ(*text, c["text"].get<std::string>());
    TokenizeOptions no_bos;
    no_bos.add_bos = false;
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(*text, no_bos);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << c["conversation"];
  }
}

// The marker tokens and the end-of-turn token a format names are ones its
// rendered prompts contain.
TEST(ChatTemplateTest, MarkerAndEndOfTurnTokensAppearInTheRenders) {
  const json doc = Golden();
  for (const auto& [name, t] : doc["templates"].items()) {
    const ChatFormat format = *ChatFormatFromName(name);
    std::string all;
    for (const json& c : doc["cases"]) {
      if (c["format"] == name && c.contains("text")) all += c["text"].get<std::string>();
    }
    for (absl::string_view marker : ChatMarkerTokens(format)) {
      EXPECT_NE(all.find(std::string(marker)), std::string::npos) << name << ": " << marker;
    }
    const absl::string_view end = ChatEndOfTurn(format);
    if (!end.empty()) {
      EXPECT_NE(all.find(std::string(end)), std::string::npos) << name << ": " << end;
    }
  }
}

TEST(ChatTemplateTest, RefusalsNameTheMessageAndTheTemplate) {
  ChatRenderOptions options;
  const std::vector<ChatMessage> two_users = {{"user", "a"}, {"user", "b"}};
  absl::StatusOr<std::string> s = RenderChat(ChatFormat::kLlama2, two_users, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "messages[1]: Conversation roles must alternate user/assistant/user/assistant/... (the llama2 chat "
            "template)");
  s = RenderChat(ChatFormat::kGemma, std::vector<ChatMessage>{{"system", "x"}, {"user", "y"}}, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "messages[0]: System role not supported (the gemma chat template)");
  s = RenderChat(ChatFormat::kChatMl, {}, options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "messages: the conversation is empty");
}

TEST(ChatTemplateTest, NamesRoundTrip) {
  for (const char* name :
       {"chatml", "llama2", "llama3", "zephyr", "gemma", "phi3", "mistral", "qwen2", "llama3.1", "qwen2.5",
        "gemma3", "qwen3", "llama3.2", "phi3.5", "phi4-mini", "phi4", "granite3"}) {
    absl::StatusOr<ChatFormat> f = ChatFormatFromName(name);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(ChatFormatName(*f), name);
  }
  EXPECT_EQ(ChatFormatNamesWithTools(), "llama3.1, qwen2.5, qwen3, llama3.2");
  absl::StatusOr<ChatFormat> bad = ChatFormatFromName("vicuna");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "chat template 'vicuna' is not one of: chatml, llama2, llama3, zephyr, gemma, phi3, mistral, qwen2, "
            "llama3.1, qwen2.5, gemma3, qwen3, llama3.2, phi3.5, phi4-mini, phi4, granite3");
}

}  // namespace
}  // namespace attnserve
