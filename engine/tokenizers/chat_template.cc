#include "engine/tokenizers/chat_template.h"

#include <optional>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/tokenizers/chat_render_qwen25.h"
#include "engine/tokenizers/chat_render_qwen3.h"
#include "engine/tokenizers/chat_template_texts.h"
#include "engine/tokenizers/python_json.h"
#include "engine/tokenizers/unicode_util.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

// What Python's str.strip() (and so Jinja's trim) removes: Unicode
// whitespace and the separators U+001C..U+001F.
bool IsPythonSpace(char32_t c) { return IsUnicodeWhitespace(c) || (c >= 0x1C && c <= 0x1F); }

// Decodes the one code point at text[pos...] (nullopt if invalid).
std::optional<std::pair<char32_t, size_t>> CodePointAt(absl::string_view text, size_t pos) {
  const unsigned char lead = static_cast<unsigned char>(text[pos]);
  const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || pos + len > text.size()) return std::nullopt;
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  if (!DecodeUtf8(text.substr(pos, len), &cps, &offsets).ok() || cps.size() != 1) return std::nullopt;
  return std::make_pair(cps[0], len);
}

// Python's str.strip() (str.rstrip() with `left` false).
std::string PyStrip(absl::string_view text, bool left = true) {
  size_t begin = 0;
  while (left && begin < text.size()) {
    auto cp = CodePointAt(text, begin);
    if (!cp.has_value() || !IsPythonSpace(cp->first)) break;
    begin += cp->second;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;  // back to the lead byte of the last code point
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    auto cp = CodePointAt(text, start);
    if (!cp.has_value() || start + cp->second != end || !IsPythonSpace(cp->first)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

absl::Status Refusal(size_t index, absl::string_view what, ChatFormat format) {
  return absl::InvalidArgumentError(
      absl::StrCat("messages[", index, "]: ", what, " (the ", ChatFormatName(format), " chat template)"));
}

constexpr char kAlternate[] = "Conversation roles must alternate user/assistant/user/assistant/...";

// user at even places of `first..`, anything else at odd ones, as the
// templates' raise_exception tests it.
absl::Status CheckAlternation(absl::Span<const ChatMessage> m, size_t first, ChatFormat format) {
  for (size_t i = first; i < m.size(); ++i) {
    if ((m[i].role == "user") != ((i - first) % 2 == 0)) return Refusal(i, kAlternate, format);
  }
  return absl::OkStatus();
}

// Llama-3.1's template with its custom-tool branches (no builtin_tools,
// tools_in_user_message as its default true): the tools go, as JSON with an
// indent of 4, into the first message after the system one; a call is
// {"name": ..., "parameters": ...}; a tool's result is an "ipython" turn
// holding its content as a JSON string.
//
// Llama-3.2's is the same without built-in tools; the two differ in the
// date of the system block when the caller gives none (date_string):
// Llama-3.1's is its default, Llama-3.2's the clock's (strftime_now).
absl::StatusOr<std::string> RenderLlama3x(ChatFormat format, absl::Span<const ChatMessage> m, bool gen,
                                          const ChatRenderOptions& o) {
  constexpr absl::string_view kDefaultDate = "26 Jul 2024";
  std::string date(kDefaultDate);
  if (o.date_string.has_value()) {
    date = *o.date_string;
  } else if (format == ChatFormat::kLlama32 && !o.today.empty()) {
    date = o.today;
  }
  std::vector<nlohmann::ordered_json> tools;
  for (size_t t = 0; t < o.tools.size(); ++t) {
    nlohmann::ordered_json tool = nlohmann::ordered_json::parse(o.tools[t], nullptr, /*allow_exceptions=*/false);
    if (tool.is_discarded()) return absl::InvalidArgumentError(absl::StrCat("tools[", t, "]: not valid JSON"));
    tools.push_back(std::move(tool));
  }
  // The system block always comes, dated as the template's default; a
  // first system message's text (trimmed) goes at its end.
  size_t next = 0;
  std::string system;
  if (m[0].role == "system") {
    system = PyStrip(m[0].content);
    next = 1;
  }
  std::string out = o.bos_token;
  absl::StrAppend(&out, "<|start_header_id|>system<|end_header_id|>\n\n", tools.empty() ? "" : "Environment: ipython\n",
                  "Cutting Knowledge Date: December 2023\nToday Date: ", date, "\n\n", system, "<|eot_id|>");
  if (!tools.empty()) {
    // The first message after the system one, whatever its role, carries
    // the tools.
    if (next >= m.size()) {
      return Refusal(next, "Cannot put tools in the first user message when there's no first user message!", format);
    }
    absl::StrAppend(&out, "<|start_header_id|>user<|end_header_id|>\n\n",
                    "Given the following functions, please respond with a JSON for a function call with its proper "
                    "arguments that best answers the given prompt.\n\n",
                    "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and "
                    "its value}.Do not use variables.\n\n");
    for (const nlohmann::ordered_json& tool : tools) absl::StrAppend(&out, PythonJsonDumps(tool, 4), "\n\n");
    absl::StrAppend(&out, PyStrip(m[next].content), "<|eot_id|>");
    ++next;
  }
  for (size_t i = next; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (!msg.tool_calls.empty()) {
      if (msg.tool_calls.size() != 1) return Refusal(i, "This model only supports single tool-calls at once!", format);
      const ChatToolCall& call = msg.tool_calls[0];
      nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
      if (arguments.is_discarded()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", i, "].tool_calls[0].function.arguments: not valid JSON"));
      }
      absl::StrAppend(&out, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"", call.name,
                      "\", \"parameters\": ", PythonJsonDumps(arguments), "}<|eot_id|>");
    } else if (msg.role == "tool" || msg.role == "ipython") {
      absl::StrAppend(&out, "<|start_header_id|>ipython<|end_header_id|>\n\n",
                      PythonJsonDumps(nlohmann::ordered_json(msg.content)), "<|eot_id|>");
    } else {
      absl::StrAppend(&out, "<|start_header_id|>", msg.role, "<|end_header_id|>\n\n", PyStrip(msg.content),
                      "<|eot_id|>");
    }
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

absl::StatusOr<std::string> Render(ChatFormat format, absl::Span<const ChatMessage> m, bool gen,
                                   const ChatRenderOptions& o) {
  if (!ChatFormatHasTools(format)) {
    if (!o.tools.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tools: tools are rendered with the llama3.1, llama3.2, qwen2.5 and qwen3 chat templates "
                       "only, not with ", ChatFormatName(format), "'s"));
    }
    for (size_t i = 0; i < m.size(); ++i) {
      if (!m[i].tool_calls.empty()) return Refusal(i, "the template has no tool calls", format);
    }
  }
  std::string out;
  switch (format) {
    case ChatFormat::kChatMl:
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
      if (gen) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama2: {
      const bool system = m[0].role == "system";
      const size_t first = system ? 1 : 0;
      if (absl::Status s = CheckAlternation(m, first, format); !s.ok()) return s;
      for (size_t i = first; i < m.size(); ++i) {
        std::string content = m[i].content;
        if (i == first && system) content = absl::StrCat("<<SYS>>\n", m[0].content, "\n<</SYS>>\n\n", content);
        if (m[i].role == "user") {
          absl::StrAppend(&out, o.bos_token, "[INST] ", PyStrip(content), " [/INST]");
        } else if (m[i].role == "assistant") {
          absl::StrAppend(&out, " ", PyStrip(content), " ", o.eos_token);
        }
      }
      return out;  // the template has no generation prompt: [/INST] is it
    }
    case ChatFormat::kLlama3:
      for (size_t i = 0; i < m.size(); ++i) {
        if (i == 0) out += o.bos_token;
        absl::StrAppend(&out, "<|start_header_id|>", m[i].role, "<|end_header_id|>\n\n", PyStrip(m[i].content),
                        "<|eot_id|>");
      }
      if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::kZephyr:
      for (const ChatMessage& msg : m) {
        if (msg.role == "user" || msg.role == "system" || msg.role == "assistant") {
          absl::StrAppend(&out, "<|", msg.role, "|>\n", msg.content, o.eos_token, "\n");
        }
      }
      if (gen) out += "<|assistant|>\n";  // inside the loop, at loop.last
      return out;
    case ChatFormat::kGemma: {
      out += o.bos_token;
      if (m[0].role == "system") return Refusal(0, "System role not supported", format);
      if (absl::Status s = CheckAlternation(m, 0, format); !s.ok()) return s;
      for (const ChatMessage& msg : m) {
        absl::StrAppend(&out, "<start_of_turn>", msg.role == "assistant" ? "model" : msg.role, "\n",
                        PyStrip(msg.content), "<end_of_turn>\n");
      }
      if (gen) out += "<start_of_turn>model\n";
      return out;
    }
    case ChatFormat::kGemma3: {
      // The system message is not a turn: its text (untrimmed; of an array,
      // the first part) and a blank line open the first turn after it (a
      // user's: turns alternate from there). An array's parts are each
      // trimmed and joined with nothing.
      out += o.bos_token;
      const bool system = m[0].role == "system";
      const size_t first = system ? 1 : 0;
      if (absl::Status s = CheckAlternation(m, first, format); !s.ok()) return s;
      std::string system_text;
      if (system) system_text = m[0].content_parts.empty() ? m[0].content : m[0].content_parts[0];
      for (size_t i = first; i < m.size(); ++i) {
        std::string text;
        if (m[i].content_parts.empty()) text = PyStrip(m[i].content);
        for (const std::string& part : m[i].content_parts) text += PyStrip(part);
        absl::StrAppend(&out, "<start_of_turn>", m[i].role == "assistant" ? "model" : m[i].role, "\n",
                        i == first && system ? absl::StrCat(system_text, "\n\n") : "", text, "<end_of_turn>\n");
      }
      if (gen) out += "<start_of_turn>model\n";
      return out;
    }
    case ChatFormat::kMistral:
      out += o.bos_token;
      for (size_t i = 0; i < m.size(); ++i) {
        if ((m[i].role == "user") != (i % 2 == 0)) return Refusal(i, kAlternate, format);
        if (m[i].role == "user") {
          absl::StrAppend(&out, "[INST] ", m[i].content, " [/INST]");
        } else if (m[i].role == "assistant") {
          absl::StrAppend(&out, m[i].content, o.eos_token);
        } else {
          return Refusal(i, "Only user and assistant roles are supported!", format);
        }
      }
      return out;  // no generation prompt: [/INST] is it
    case ChatFormat::kQwen2:
      if (m[0].role != "system") out += "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n";
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
      if (gen) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return RenderLlama3x(format, m, gen, o);
    case ChatFormat::kQwen25: return RenderQwen25(m, gen, o);
    case ChatFormat::kQwen3: return RenderQwen3(m, gen, o);
    case ChatFormat::kPhi3:
      out += o.bos_token;
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|", msg.role, "|>\n", msg.content, "<|end|>\n");
      out += gen ? "<|assistant|>\n" : o.eos_token;
      return out;
    case ChatFormat::kPhi35:
      for (const ChatMessage& msg : m) {
        if ((msg.role == "system" && !msg.content.empty()) || msg.role == "user" || msg.role == "assistant") {
          absl::StrAppend(&out, "<|", msg.role, "|>\n", msg.content, "<|end|>\n");
        }
      }
      out += gen ? "<|assistant|>\n" : o.eos_token;
      return out;
    case ChatFormat::kPhi4Mini:
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|", msg.role, "|>", msg.content, "<|end|>");
      out += gen ? "<|assistant|>" : o.eos_token;
      return out;
    case ChatFormat::kPhi4:
      for (const ChatMessage& msg : m) {
        if (msg.role == "system") {
          absl::StrAppend(&out, "<|im_start|>system<|im_sep|>", msg.content, "<|im_end|>");
        } else if (msg.role == "user") {
          absl::StrAppend(&out, "<|im_start|>user<|im_sep|>", msg.content, "<|im_end|><|im_start|>assistant<|im_sep|>");
        } else if (msg.role == "assistant") {
          absl::StrAppend(&out, msg.content, "<|im_end|>");
        }
      }
      return out;  // no generation prompt: a user turn's end opens the answer
    case ChatFormat::kGranite3:
      // Roles other than these are not shown (tools are refused above).
      for (const ChatMessage& msg : m) {
        if (msg.role == "system" || msg.role == "user" || msg.role == "assistant" || msg.role == "tool_response") {
          absl::StrAppend(&out, "<|start_of_role|>", msg.role, "<|end_of_role|>", msg.content, "<|end_of_text|>\n");
        } else if (msg.role == "assistant_tool_call") {
          absl::StrAppend(&out, "<|start_of_role|>assistant<|end_of_role|><|tool_call|>", msg.content,
                          "<|end_of_text|>\n");
        }
      }
      if (gen) out += "<|start_of_role|>assistant<|end_of_role|>";  // inside the loop, at loop.last
      return out;
  }
  return absl::InternalError("unknown chat format");
}

}  // namespace

absl::string_view ChatFormatName(ChatFormat format) {
  for (const ChatTemplateText& e : PublishedChatTemplates()) {
    if (e.format == format) return e.name;
  }
  return "unknown";
}

bool ChatFormatHasTools(ChatFormat format) {
  return format == ChatFormat::kLlama31 || format == ChatFormat::kLlama32 || format == ChatFormat::kQwen25 ||
         format == ChatFormat::kQwen3;
}

absl::string_view ChatEndOfTurn(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatMl:
    case ChatFormat::kQwen2:
    case ChatFormat::kQwen25:
    case ChatFormat::kQwen3:
    case ChatFormat::kPhi4: return "<|im_end|>";
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return "<|eot_id|>";
    case ChatFormat::kGemma:
    case ChatFormat::kGemma3: return "<end_of_turn>";
    case ChatFormat::kPhi3:
    case ChatFormat::kPhi35:
    case ChatFormat::kPhi4Mini: return "<|end|>";
    case ChatFormat::kGranite3: return "<|end_of_text|>";
    default: return "";
  }
}

std::vector<absl::string_view> ChatMarkerTokens(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatMl:
    case ChatFormat::kQwen2:
    case ChatFormat::kQwen25:
    case ChatFormat::kQwen3: return {"<|im_start|>", "<|im_end|>"};
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    case ChatFormat::kGemma:
    case ChatFormat::kGemma3: return {"<start_of_turn>", "<end_of_turn>"};
    case ChatFormat::kPhi3:
    case ChatFormat::kPhi35:
    case ChatFormat::kPhi4Mini: return {"<|user|>", "<|assistant|>", "<|end|>"};
    case ChatFormat::kPhi4: return {"<|im_start|>", "<|im_sep|>", "<|im_end|>"};
    case ChatFormat::kGranite3: return {"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"};
    default: return {};
  }
}

std::string ChatFormatNamesWithTools() {
  std::vector<absl::string_view> names;
  for (const ChatTemplateText& e : PublishedChatTemplates()) {
    if (ChatFormatHasTools(e.format)) names.push_back(e.name);
  }
  return absl::StrJoin(names, ", ");
}

std::string ChatFormatNames() {
  std::vector<absl::string_view> names;
  for (const ChatTemplateText& e : PublishedChatTemplates()) names.push_back(e.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<ChatFormat> ChatFormatFromName(absl::string_view name) {
  for (const ChatTemplateText& e : PublishedChatTemplates()) {
    if (e.name == name) return e.format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("chat template '", name, "' is not one of: ", ChatFormatNames()));
}

std::optional<ChatFormat> KnownChatTemplate(absl::string_view jinja) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(jinja);
  for (const ChatTemplateText& e : PublishedChatTemplates()) {
    if (e.jinja == trimmed) return e.format;
  }
  for (const ChatTemplateText& e : OtherChatTemplateTexts()) {
    if (e.jinja == trimmed) return e.format;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> RenderChat(ChatFormat format, absl::Span<const ChatMessage> messages,
                                       const ChatRenderOptions& options) {
  if (messages.empty()) return absl::InvalidArgumentError("messages: the conversation is empty");
  if (!options.continue_final_message) return Render(format, messages, options.add_generation_prompt, options);
  if (options.add_generation_prompt) {
    return absl::InvalidArgumentError(
        "continue_final_message and add_generation_prompt: not both (one continues the last message, the other "
        "starts a new one)");
  }
  if (!messages.back().tool_calls.empty() || messages.back().role == "tool") {
    return absl::InvalidArgumentError(absl::StrCat("continue_final_message: the last message (messages[",
                                                   messages.size() - 1, "]) is a tool call or result, not text"));
  }
  // As transformers: mark the end of the last message, render, and cut at the
  // mark; where the template stripped the message (the mark's trailing space
  // is gone), the text before the mark loses its trailing space too.
  static constexpr absl::string_view kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  std::vector<ChatMessage> tagged(messages.begin(), messages.end());
  absl::StrAppend(&tagged.back().content, kTag);
  // Of an array, the last part is the text continued (transformers').
  if (!tagged.back().content_parts.empty()) absl::StrAppend(&tagged.back().content_parts.back(), kTag);
  const std::string& final_text =
      messages.back().content_parts.empty() ? messages.back().content : messages.back().content_parts.back();
  absl::StatusOr<std::string> rendered = Render(format, tagged, false, options);
  if (!rendered.ok()) return rendered.status();
  const absl::string_view bare = kTag.substr(0, kTag.size() - 1);
  const size_t at = absl::string_view(*rendered).rfind(bare);
  // Also as transformers: the message's text, stripped, must be in the
  // prompt (a template that rewrites it, as qwen3 does a <think> block,
  // would have the model continue something else).
  if (at == std::string::npos || rendered->find(PyStrip(final_text)) == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("continue_final_message: the ", ChatFormatName(format),
                                                   " chat template does not show the final message's content"));
  }
  const bool spacing_kept = absl::string_view(*rendered).substr(at, kTag.size()) == kTag;
  std::string out = rendered->substr(0, at);
  return spacing_kept ? out : PyStrip(out, /*left=*/false);
}

}  // namespace attnserve
