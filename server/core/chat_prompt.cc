#include "server/core/chat_prompt.h"

#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace attnserve {

ChatSetup ResolveChatSetup(const std::string& flag, const std::string& model_template, const Tokenizer& tokenizer) {
  ChatSetup setup;
  const SpecialTokens& special = tokenizer.special();
  if (special.bos >= 0) setup.bos_token = tokenizer.IdToPiece(special.bos);
  if (special.eos >= 0) setup.eos_token = tokenizer.IdToPiece(special.eos);
  if (!flag.empty()) {
    if (absl::StatusOr<ChatFormat> f = ChatFormatFromName(flag); f.ok()) setup.format = *f;
    setup.origin = absl::StrCat("--chat-template=", flag);
  } else if (model_template.empty()) {
    setup.origin = absl::StrCat("the model has no chat template; start the server with --chat-template=<",
                                ChatFormatNames(), "> to serve chat prompts");
  } else {
    setup.format = KnownChatTemplate(model_template);
    setup.origin = setup.format.has_value()
                       ? "the model's own"
                       : absl::StrCat("the model's chat template is not one attnserve reproduces exactly (",
                                      ChatFormatNames(), "); start the server with --chat-template=<one of them> "
                                                         "to serve chat prompts in that format");
  }
  if (!setup.format.has_value()) return setup;
  auto special_id = [&tokenizer](absl::string_view text) -> std::optional<int32_t> {
    std::optional<int32_t> id = tokenizer.PieceToId(std::string_view(text.data(), text.size()));
    return id.has_value() && tokenizer.IsControl(*id) ? id : std::nullopt;
  };
  std::vector<std::string> missing;
  for (absl::string_view marker : ChatMarkerTokens(*setup.format)) {
    if (!special_id(marker).has_value()) missing.emplace_back(marker);
  }
  if (!missing.empty()) {
    setup.warning = absl::StrCat("the ", ChatFormatName(*setup.format), " chat format's ",
                                 absl::StrJoin(missing, " "), " are not special tokens of this model's "
                                 "tokenizer: they are tokenized as plain text (was the model trained with it?)");
  }
  const absl::string_view end = ChatEndOfTurn(*setup.format);
  std::optional<int32_t> end_id = end.empty() ? std::nullopt : special_id(end);
  if (end_id.has_value() && *end_id != special.eos) setup.end_of_turn_ids.push_back(*end_id);
  return setup;
}

absl::StatusOr<std::vector<int32_t>> ChatPromptIds(const v1::ChatPrompt& chat, const ChatSetup& setup,
                                                   const Tokenizer& tokenizer) {
  if (!setup.format.has_value()) return absl::FailedPreconditionError(absl::StrCat("chat: ", setup.origin));
  std::vector<ChatMessage> messages;
  messages.reserve(chat.messages_size());
  const bool tools = ChatFormatHasTools(*setup.format);
  for (int i = 0; i < chat.messages_size(); ++i) {
    const v1::ChatMessage& m = chat.messages(i);
    if (m.role() != "system" && m.role() != "user" && m.role() != "assistant" && !(tools && m.role() == "tool")) {
      return absl::InvalidArgumentError(absl::StrCat("chat.messages[", i, "].role: '", m.role().substr(0, 32),
                                                     "' is not one of system, user, assistant",
                                                     tools ? ", tool" : " (the chat template has no tool turns)"));
    }
    if (m.tool_calls_size() > 0 && m.role() != "assistant") {
      return absl::InvalidArgumentError(absl::StrCat("chat.messages[", i, "].tool_calls: only an assistant's"));
    }
    ChatMessage message{m.role(), m.content(), {}};
    for (const v1::ChatToolCall& call : m.tool_calls()) message.tool_calls.push_back({call.name(), call.arguments()});
    message.content_parts.assign(m.content_parts().begin(), m.content_parts().end());
    if (m.has_reasoning_content()) {
      if (m.role() != "assistant") {
        return absl::InvalidArgumentError(absl::StrCat("chat.messages[", i, "].reasoning_content: only an assistant's"));
      }
      message.reasoning_content = m.reasoning_content();
    }
    messages.push_back(std::move(message));
  }
  ChatRenderOptions options;
  options.tools.assign(chat.tools().begin(), chat.tools().end());
  options.add_generation_prompt = chat.has_add_generation_prompt() ? chat.add_generation_prompt() : true;
  options.continue_final_message = chat.continue_final_message();
  options.enable_thinking = chat.has_enable_thinking() ? chat.enable_thinking() : true;
  if (chat.has_date_string()) options.date_string = chat.date_string();
  // What transformers' strftime_now("%d %b %Y") gives Llama-3.2's template:
  // the server's local date (UTC in a container without TZ).
  options.today = absl::FormatTime("%d %b %Y", absl::Now(), absl::LocalTimeZone());
  options.bos_token = setup.bos_token;
  options.eos_token = setup.eos_token;
  absl::StatusOr<std::string> text = RenderChat(*setup.format, messages, options);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("chat.", text.status().message()));
  TokenizeOptions tokenize;
  tokenize.add_bos = false;
  tokenize.add_eos = false;
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(*text, tokenize);
  if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat("chat: ", ids.status().message()));
  return ids;
}

}  // namespace attnserve
