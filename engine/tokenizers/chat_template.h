// Chat templates: a conversation (role + content messages) turned into the
// prompt text a chat model was trained on.
//
// Hugging Face models carry their template as Jinja (tokenizer_config.json's
// "chat_template", GGUF's tokenizer.chat_template). There is no Jinja
// interpreter here. Instead each ChatFormat is one published template
// written out in C++, and a model's template is recognised only when it is
// one of those texts (KnownChatTemplate), so a model whose template adds a
// default system prompt or tool handling is never silently rendered as a
// plainer relative. The operator may name a format for a model whose
// template is not recognised, or that has none (the server's
// --chat-template).
//
// Each format reproduces transformers' apply_chat_template on its template
// character for character (tools/golden/chat_templates.py renders the
// references; tests/engine/tokenizers/chat_template_test.cc compares),
// including the template's own refusals (raise_exception) and
// continue_final_message as transformers does it.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace attnserve {

enum class ChatFormat {
  kChatMl,  // <|im_start|>role\n...<|im_end|>\n (OpenHermes, Dolphin, many fine-tunes)
  kLlama2,  // <s>[INST] <<SYS>>..<</SYS>> user [/INST] answer </s> (Llama-2-chat)
  kLlama3,  // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> (Llama-3-Instruct)
  kZephyr,  // <|user|>\n...</s>\n (zephyr-7b-beta, TinyLlama-1.1B-Chat)
  kGemma,   // <start_of_turn>user\n...<end_of_turn>\n (gemma-it, gemma-2-it)
  kPhi3,    // <s><|user|>\n...<|end|>\n (Phi-3-mini-4k-instruct)
  kMistral,  // <s>[INST] user [/INST]answer</s> (Mistral-7B-Instruct-v0.2, Mixtral-8x7B-Instruct)
  kQwen2,    // ChatML with a default system message (Qwen2-Instruct)
  kLlama31,  // Llama-3's turns after a dated system block; tools, calls and results (Llama-3.1-Instruct)
  kQwen25,   // ChatML, Qwen's default system message; tools, <tool_call> calls and results (Qwen2.5-Instruct)
  kGemma3,   // Gemma's turns, a system message folded into the first user turn (gemma-3-it, gemma-3n)
  kQwen3,    // ChatML; tools, calls and results as qwen2.5; <think> blocks, enable_thinking (Qwen3 0.6B-32B)
  kLlama32,  // llama3.1's turns and tools, the system block dated today (Llama-3.2-1B/3B-Instruct)
  kPhi35,    // <|user|>\n...<|end|>\n without BOS; an empty system message not shown (Phi-3.5-mini-instruct)
  kPhi4Mini,  // <|user|>...<|end|> without newlines (Phi-4-mini-instruct)
  kPhi4,      // <|im_start|>user<|im_sep|>...<|im_end|>, the answer opened after each user turn (phi-4)
  kGranite3,  // <|start_of_role|>user<|end_of_role|>...<|end_of_text|>\n (granite-3.0-instruct)
};

// "chatml", "llama2", "llama3", "zephyr", "gemma", "phi3", "mistral", "qwen2",
// "llama3.1", "qwen2.5", "gemma3", "qwen3", "llama3.2", "phi3.5", "phi4-mini", "phi4", "granite3".
absl::string_view ChatFormatName(ChatFormat format);
// The format of that name; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<ChatFormat> ChatFormatFromName(absl::string_view name);
// Every format's name, comma-separated (for messages and --help).
std::string ChatFormatNames();

// The text of the token that ends a turn in `format` ("<|im_end|>",
// "<|eot_id|>", "<end_of_turn>", "<|end|>"); "" where a turn ends with EOS
// (llama2, zephyr, mistral).
absl::string_view ChatEndOfTurn(ChatFormat format);

// The special tokens a format's turns are built from, which its models have
// as single tokens ("<|im_start|>", "<|im_end|>" for ChatML); empty for
// formats built from plain text and BOS/EOS (llama2, mistral, zephyr).
std::vector<absl::string_view> ChatMarkerTokens(ChatFormat format);

// The format whose published template `jinja` is (compared with surrounding
// whitespace removed); nullopt when it is none of them.
std::optional<ChatFormat> KnownChatTemplate(absl::string_view jinja);

// True where the format's template shows tools and has turns for tool calls
// and their results (llama3.1, llama3.2, qwen2.5, qwen3).
bool ChatFormatHasTools(ChatFormat format);
// Those formats' names, comma-separated (for messages).
std::string ChatFormatNamesWithTools();

// One function call an assistant made.
struct ChatToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool" (what each format does with others: as its template)
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // an assistant's calls (formats with tools only)
  // An assistant's thinking given apart from its content (vLLM's
  // "reasoning_content" / "reasoning"); only qwen3's template shows it,
  // and only in the turns after the last user query.
  std::optional<std::string> reasoning_content = std::nullopt;
  // The text parts of an OpenAI content array as sent (content holds them
  // joined with "\n", what templates that take a string are given, as in
  // vLLM); empty for a string. gemma3's template reads the parts, as vLLM
  // hands them to it: each trimmed, joined with nothing (a system message:
  // its first part).
  std::vector<std::string> content_parts = {};
};

struct ChatRenderOptions {
  // Append the header that starts the assistant's answer (Llama-2's template
  // has none and ignores it).
  bool add_generation_prompt = true;
  // End the prompt inside the last message, so the model continues it
  // (transformers' and vLLM's continue_final_message; not with
  // add_generation_prompt).
  bool continue_final_message = false;
  std::string bos_token;  // the text of the model's BOS / EOS tokens ("<s>", "</s>")
  std::string eos_token;
  // The tools shown to the model, each as a JSON object's text (OpenAI's
  // {"type": "function", "function": {...}}, as the client sent it); only
  // formats with tools take any.
  std::vector<std::string> tools;
  // Qwen3's thinking switch (chat_template_kwargs' enable_thinking): false
  // ends qwen3's generation prompt with an empty <think></think> block, so
  // the model answers without thinking. No other format reads it (as their
  // templates do not).
  bool enable_thinking = true;
  // The date Llama-3.1's and Llama-3.2's system block shows ("07 Dec 2026";
  // chat_template_kwargs' date_string); unset, Llama-3.1's template shows
  // its default, "26 Jul 2024", and Llama-3.2's `today`.
  std::optional<std::string> date_string;
  // Today's date as "%d %b %Y" (what transformers' strftime_now gives
  // Llama-3.2's template; the caller's clock: the engine reads none); empty,
  // Llama-3.2's template falls back to "26 Jul 2024" as without strftime_now.
  std::string today;
};

// The prompt text. INVALID_ARGUMENT, naming the message, where the template
// would raise (roles out of turn, a system message the format refuses, more
// than one call in a turn), for an empty conversation, for tools or tool
// calls given to a format without them, and for continue_final_message
// after a tool call or result.
absl::StatusOr<std::string> RenderChat(ChatFormat format, absl::Span<const ChatMessage> messages,
                                       const ChatRenderOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_H_
