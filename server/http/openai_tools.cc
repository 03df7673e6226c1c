#include "server/http/openai_tools.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/tokenizers/python_json.h"
#include "server/http/hermes_calls_reader.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/json_value_end.h"
#include "server/http/partial_tag.h"
#include "server/http/tool_calls_reader.h"

namespace attnserve {
namespace {

using nlohmann::json;
// ordered: a parameters schema's property order is the answer's.
using ojson = nlohmann::ordered_json;

// OpenAI's rule for function names.
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

json Call(const std::string& id, const std::string& name, std::string arguments) {
  return json{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", std::move(arguments)}}}};
}

}  // namespace

absl::StatusOr<AutoToolParser> AutoToolParserFromName(absl::string_view name) {
  if (name.empty()) return AutoToolParser::kNone;
  if (name == "llama3_json") return AutoToolParser::kLlama3Json;
  if (name == "hermes") return AutoToolParser::kHermes;
  return absl::InvalidArgumentError(
      absl::StrCat("--tool-call-parser=", name, ": must be llama3_json, hermes or empty"));
}

absl::Status ParseToolChoice(const json& root, absl::string_view body, const ToolSupport& support,
                             ToolCallFormat* format, std::string* schema) {
  const json* tools = Field(root, "tools");
  if (tools != nullptr && !tools->is_array()) return TypeError("tools", "an array of tools", *tools);
  const bool have_tools = tools != nullptr && !tools->empty();
  if (have_tools && tools->size() > kMaxTools) {
    return absl::InvalidArgumentError(absl::StrCat("tools: ", tools->size(), " tools, at most ", kMaxTools));
  }
  std::vector<std::string> names;
  if (have_tools) {
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string field = absl::StrCat("tools[", i, "]");
      if (!t.is_object()) return TypeError(field, "an object", t);
      const json* type = Field(t, "type");
      if (type == nullptr || *type != "function") {
        return absl::InvalidArgumentError(absl::StrCat(field, ".type: must be \"function\""));
      }
      const json* function = Field(t, "function");
      if (function == nullptr || !function->is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".function: required, an object"));
      }
      const json* name = Field(*function, "name");
      if (name == nullptr || !name->is_string() || !ValidFunctionName(name->get<std::string>())) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".function.name: required, 1 to 64 of a-z, A-Z, 0-9, _ and -"));
      }
      if (std::find(names.begin(), names.end(), name->get<std::string>()) != names.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".function.name: \"", name->get<std::string>(), "\" names two tools"));
      }
      names.push_back(name->get<std::string>());
      const json* params = Field(*function, "parameters");
      if (params != nullptr && !params->is_object()) {
        return TypeError(absl::StrCat(field, ".function.parameters"), "an object (a JSON schema)", *params);
      }
    }
  }
  const json* choice = Field(root, "tool_choice");
  format->mode = ToolCallFormat::Mode::kNone;
  // "auto", OpenAI's default once tools are given: the model answers
  // freely and --tool-call-parser reads any calls out of the answer.
  auto choose_auto = [&]() -> absl::Status {
    if (support.auto_parser == AutoToolParser::kNone) {
      return Unsupported("tool_choice",
                         "\"auto\" (OpenAI's default once tools are given) needs a tool-call parser: start the server "
                         "with --tool-call-parser (and a chat template that shows tools), or send \"required\", a "
                         "named function or \"none\"");
    }
    if (have_tools) {
      format->mode = ToolCallFormat::Mode::kAuto;
      format->parser = support.auto_parser;
    }
    return absl::OkStatus();
  };
  if (choice == nullptr) {
    if (!have_tools) return absl::OkStatus();
    RETURN_IF_ERROR(choose_auto());
  } else if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "none") return absl::OkStatus();
    if (c == "auto") {
      RETURN_IF_ERROR(choose_auto());
      if (!have_tools) return absl::OkStatus();
    } else if (c != "required") {
      return absl::InvalidArgumentError("tool_choice: must be \"none\", \"auto\", \"required\" or "
                                        "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else {
      format->mode = ToolCallFormat::Mode::kRequired;
    }
  } else if (choice->is_object()) {
    const json* function = Field(*choice, "function");
    const json* name = function != nullptr && function->is_object() ? Field(*function, "name") : nullptr;
    if (Field(*choice, "type") == nullptr || (*choice)["type"] != "function" || name == nullptr ||
        !name->is_string()) {
      return absl::InvalidArgumentError(
          "tool_choice: a named choice is {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    format->mode = ToolCallFormat::Mode::kNamed;
    format->function = name->get<std::string>();
    if (std::find(names.begin(), names.end(), format->function) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("tool_choice.function.name: \"",
                                                     SanitizeUtf8(format->function.substr(0, 64)),
                                                     "\" is not one of the tools"));
    }
  } else {
    return TypeError("tool_choice", "a string or an object", *choice);
  }
  if (!have_tools) {
    return absl::InvalidArgumentError(absl::StrCat("tool_choice: \"", format->mode == ToolCallFormat::Mode::kNamed
                                                                          ? "function"
                                                                          : "required",
                                                   "\" needs tools"));
  }
  // The tools again, in the body's order.
  const ojson ordered = ojson::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  const ojson& otools = ordered["tools"];
  auto parameters = [&](size_t i) {
    const ojson& f = otools[i]["function"];
    const auto p = f.find("parameters");
    return p != f.end() && p->is_object() ? *p : ojson{{"type", "object"}, {"properties", ojson::object()}};
  };
  if (format->mode == ToolCallFormat::Mode::kNamed) {
    const size_t i = std::find(names.begin(), names.end(), format->function) - names.begin();
    *schema = parameters(i).dump();
    return absl::OkStatus();
  }
  // vLLM's schema for "required": a list of one or more {"name",
  // "parameters"}; each tool's $defs moved to the top, where its "#/$defs/.."
  // references now point. "auto": one such call (the llama3.1 template
  // renders one call a turn; llama.cpp's grammar for Llama 3 likewise).
  ojson alternatives = ojson::array(), defs = ojson::object();
  for (size_t i = 0; i < names.size(); ++i) {
    ojson p = parameters(i);
    if (const auto d = p.find("$defs"); d != p.end() && d->is_object()) {
      for (const auto& [key, value] : d->items()) {
        if (defs.contains(key) && defs[key] != value) {
          return absl::InvalidArgumentError(absl::StrCat("tools[", i, "].function.parameters.$defs.", key,
                                                         ": defined differently by another tool"));
        }
        defs[key] = value;
      }
      p.erase("$defs");
    }
    // hermes' calls say "arguments" (Qwen2.5's template asks for them so).
    const char* arguments =
        format->mode == ToolCallFormat::Mode::kAuto && format->parser == AutoToolParser::kHermes ? "arguments"
                                                                                                   : "parameters";
    alternatives.push_back(ojson{{"type", "object"},
                                 {"properties", {{"name", {{"type", "string"}, {"enum", {names[i]}}}},
                                                 {arguments, std::move(p)}}},
                                 {"required", {"name", arguments}}});
  }
  if (format->mode == ToolCallFormat::Mode::kAuto) {
    ojson call{{"anyOf", std::move(alternatives)}};
    if (!defs.empty()) call["$defs"] = std::move(defs);
    *schema = call.dump();
    return absl::OkStatus();
  }
  ojson s{{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", std::move(alternatives)}}}};
  // OpenAI's parallel_tool_calls: false, at most one call.
  if (const json* parallel = Field(root, "parallel_tool_calls"); parallel != nullptr) {
    if (!parallel->is_boolean()) return TypeError("parallel_tool_calls", "a boolean", *parallel);
    if (!parallel->get<bool>()) s["maxItems"] = 1;
  }
  if (!defs.empty()) s["$defs"] = std::move(defs);
  *schema = s.dump();
  return absl::OkStatus();
}

// What Llama 3.1 may write before a call (vLLM's llama3_json bot_token).
constexpr absl::string_view kPythonTag = "<|python_tag|>";

std::optional<json> Llama3JsonToolCalls(const std::string& text, const std::string& id_prefix) {
  size_t at = absl::StartsWith(text, kPythonTag) ? kPythonTag.size() : 0;
  if (at == 0 && !absl::StartsWith(text, "{")) return std::nullopt;
  json out = json::array();
  while (at < text.size()) {
    // Python's raw_decode of one object from `at`: its end is where its
    // braces close (strings and escapes skipped), then the text must parse.
    if (text[at] != '{') return std::nullopt;
    JsonValueEnd scan;
    size_t end = at;
    while (end < text.size() && !scan.Feed(text[end])) ++end;
    if (end >= text.size()) return std::nullopt;
    const ojson call = ojson::parse(text.substr(at, end + 1 - at), nullptr, /*allow_exceptions=*/false);
    if (!call.is_object()) return std::nullopt;
    const auto name = call.find("name");
    auto arguments = call.find("arguments");
    if (arguments == call.end()) arguments = call.find("parameters");
    if (name == call.end() || !name->is_string() || arguments == call.end()) return std::nullopt;
    out.push_back(Call(absl::StrCat(id_prefix, out.size()), name->get<std::string>(), PythonJsonDumps(*arguments)));
    at = end + 1 + 2;  // vLLM steps over "; " (two characters, whatever they are)
  }
  return out;
}

constexpr absl::string_view kToolCallOpen = "<tool_call>";
constexpr absl::string_view kToolCallClose = "</tool_call>";

std::optional<json> HermesToolCalls(const std::string& text, const std::string& id_prefix, std::string* content) {
  const absl::string_view all(text);
  const size_t first = all.find(kToolCallOpen);
  if (first == std::string::npos) return std::nullopt;
  json out = json::array();
  // As vLLM's regex <tool_call>(.*?)</tool_call>|<tool_call>(.*) finds
  // them: each tag to the next close, the last open one to the end.
  for (size_t at = first; at != std::string::npos;) {
    const size_t body = at + kToolCallOpen.size();
    const size_t close = all.find(kToolCallClose, body);
    const absl::string_view inner = all.substr(body, close == std::string::npos ? std::string::npos : close - body);
    const ojson call = ojson::parse(inner.begin(), inner.end(), nullptr, /*allow_exceptions=*/false);
    if (!call.is_object()) return std::nullopt;
    const auto name = call.find("name");
    const auto arguments = call.find("arguments");
    if (name == call.end() || !name->is_string() || arguments == call.end()) return std::nullopt;
    out.push_back(Call(absl::StrCat(id_prefix, out.size()), name->get<std::string>(), PythonJsonDumps(*arguments)));
    if (close == std::string::npos) break;
    at = all.find(kToolCallOpen, close + kToolCallClose.size());
  }
  if (content != nullptr) *content = text.substr(0, first);
  return out;
}

size_t HermesContentBeforeCalls(absl::string_view text) {
  const size_t open = text.find(kToolCallOpen);
  if (open != absl::string_view::npos) return open;
  return text.size() - TagStartAtEnd(text, kToolCallOpen);
}

bool MayBecomeLlama3JsonToolCall(const std::string& text) {
  return text.empty() || absl::StartsWith(text, "{") || absl::StartsWith(text, kPythonTag) ||
         absl::StartsWith(kPythonTag, text);
}

namespace {

// OpenAI's calls from a reader's pieces of a whole answer (fed at once:
// one piece a call).
json CallsFromPieces(const std::vector<ToolCallsReader::Piece>& pieces, const std::string& id_prefix) {
  json out = json::array();
  for (const ToolCallsReader::Piece& p : pieces) {
    out.push_back(Call(absl::StrCat(id_prefix, p.index), p.name, p.arguments));
  }
  return out;
}

// The calls JSON schema mode wrote, their arguments as written (json.dumps'
// ", " and ": "), the same text a stream sends.
std::optional<json> SchemaToolCalls(const std::string& text, ToolCallsReader::Form form,
                                    const std::string& id_prefix, bool* whole) {
  ToolCallsReader reader(form);
  std::vector<ToolCallsReader::Piece> pieces;
  reader.Feed(text, &pieces);
  if (reader.broken() || reader.calls() == 0) return std::nullopt;
  if (whole != nullptr) *whole = reader.complete();
  return CallsFromPieces(pieces, id_prefix);
}

// Hermes calls held by the lazy format, read as a stream reads them
// (hermes_calls_reader.h), their arguments as written; nullopt when no held
// call opened.
std::optional<json> HeldHermesToolCalls(const std::string& text, const std::string& id_prefix, bool* whole,
                                        std::string* content) {
  HermesCallsReader reader;
  HermesCallsReader::Output out;
  reader.Feed(text, &out);
  if (reader.calls() == 0) return std::nullopt;
  if (whole != nullptr) *whole = reader.complete();
  if (content != nullptr) *content = std::move(out.content);
  return CallsFromPieces(out.pieces, id_prefix);
}

}  // namespace

bool BeginsSchemaToolCall(const ToolCallFormat& format, const std::string& text) {
  return format.mode == ToolCallFormat::Mode::kAuto && format.call_schema && absl::StartsWith(text, "{");
}

std::optional<json> ToolCalls(const ToolCallFormat& format, const std::string& text, const std::string& id_prefix,
                              bool* whole, std::string* content) {
  if (whole != nullptr) *whole = true;
  if (content != nullptr) content->clear();
  if (format.mode == ToolCallFormat::Mode::kAuto && format.parser == AutoToolParser::kHermes) {
    if (format.call_schema) {
      if (std::optional<json> calls = HeldHermesToolCalls(text, id_prefix, whole, content)) return calls;
    }
    return HermesToolCalls(text, id_prefix, content);
  }
  if (format.mode == ToolCallFormat::Mode::kAuto) {
    if (BeginsSchemaToolCall(format, text)) {
      // Held to the call schema from its "{" on: read as written, a call
      // the token limit cut kept as "required" keeps one. The fallback
      // serves a free answer that began with "{" all the same (a first
      // token after a lone BOS: engine/runtime/decoder_engine.cc).
      if (std::optional<json> calls = SchemaToolCalls(text, ToolCallsReader::Form::kOneCall, id_prefix, whole)) {
        return calls;
      }
    }
    return Llama3JsonToolCalls(text, id_prefix);
  }
  if (format.mode == ToolCallFormat::Mode::kNamed) {
    return json::array({Call(id_prefix + "0", format.function, text)});
  }
  if (format.mode != ToolCallFormat::Mode::kRequired) return std::nullopt;
  return SchemaToolCalls(text, ToolCallsReader::Form::kList, id_prefix, whole);
}

}  // namespace attnserve
