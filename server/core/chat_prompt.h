// Chat prompts (GenerateRequest.chat): which chat template the server
// renders them with, decided once at start, and a conversation turned into
// prompt token ids.
#ifndef ATTNSERVE_SERVER_CORE_CHAT_PROMPT_H_
#define ATTNSERVE_SERVER_CORE_CHAT_PROMPT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "attnserve/v1/inference.pb.h"
#include "engine/tokenizers/chat_template.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

struct ChatSetup {
  std::optional<ChatFormat> format;  // nullopt: chat prompts are refused
  std::string bos_token, eos_token;  // the tokenizer's BOS / EOS text, for the template
  // The format's end-of-turn token where the tokenizer has it as one special
  // token and it is not EOS ("<|im_end|>" for ChatML on a model whose EOS is
  // "<|endoftext|>"): a chat's answer ends there, as llama.cpp's
  // end-of-generation tokens do.
  std::vector<int32_t> end_of_turn_ids;
  // Non-empty when the format's marker tokens are not special tokens of this
  // tokenizer (--chat-template naming a format the model was not trained
  // with): they are then tokenized as plain text. Logged at start.
  std::string warning;
  // Where the format came from, or why there is none (logged at start, and
  // the refusal's message).
  std::string origin;
};

// `flag`: --chat-template (a format name, already validated; empty = none).
// Else the model's own template (`model_template`, Jinja source) when it is
// exactly one attnserve reproduces.
ChatSetup ResolveChatSetup(const std::string& flag, const std::string& model_template, const Tokenizer& tokenizer);

// The conversation rendered and tokenized (special tokens' text parsed as
// those tokens, no BOS added: the template writes it). INVALID_ARGUMENT
// naming chat.messages[i] for a bad role or what the template refuses;
// FAILED_PRECONDITION when the server has no chat template.
absl::StatusOr<std::vector<int32_t>> ChatPromptIds(const v1::ChatPrompt& chat, const ChatSetup& setup,
                                                   const Tokenizer& tokenizer);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_CHAT_PROMPT_H_
