#include "server/http/openai_tools.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"

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

// A value as Python's json.dumps(ensure_ascii=False) writes it, which is
// how JSON schema mode writes answers (", " and ": ").
void Dumps(const ojson& v, std::string* out) {
  if (v.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += ojson(key).dump();
      *out += ": ";
      Dumps(value, out);
    }
    *out += '}';
  } else if (v.is_array()) {
    *out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) *out += ", ";
      Dumps(v[i], out);
    }
    *out += ']';
  } else {
    *out += v.dump();
  }
}

json Call(const std::string& id, const std::string& name, std::string arguments) {
  return json{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", std::move(arguments)}}}};
}

}  // namespace

absl::Status ParseToolChoice(const json& root, absl::string_view body, ToolCallFormat* format, std::string* schema) {
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
  if (choice == nullptr) {
    if (!have_tools) return absl::OkStatus();
    return Unsupported("tool_choice",
                       "tools given with tool_choice \"auto\" (OpenAI's default): this server has no tool-call "
                       "parser for its models; send \"required\", a named function or \"none\"");
  }
  if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "none") return absl::OkStatus();
    if (c == "auto") {
      return Unsupported("tool_choice",
                         "\"auto\": this server has no tool-call parser for its models; send \"required\", a named "
                         "function or \"none\"");
    }
    if (c != "required") {
      return absl::InvalidArgumentError("tool_choice: must be \"none\", \"auto\", \"required\" or "
                                        "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    format->mode = ToolCallFormat::Mode::kRequired;
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
  // references now point.
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
    alternatives.push_back(ojson{{"type", "object"},
                                 {"properties", {{"name", {{"type", "string"}, {"enum", {names[i]}}}},
                                                 {"parameters", std::move(p)}}},
                                 {"required", {"name", "parameters"}}});
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

std::optional<json> ToolCalls(const ToolCallFormat& format, const std::string& text, const std::string& id_prefix) {
  if (format.mode == ToolCallFormat::Mode::kNamed) {
    return json::array({Call(id_prefix + "0", format.function, text)});
  }
  if (format.mode != ToolCallFormat::Mode::kRequired) return std::nullopt;
  const ojson calls = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!calls.is_array() || calls.empty()) return std::nullopt;
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const ojson& c = calls[i];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("parameters")) {
      return std::nullopt;
    }
    std::string arguments;
    Dumps(c["parameters"], &arguments);
    out.push_back(Call(absl::StrCat(id_prefix, i), c["name"].get<std::string>(), std::move(arguments)));
  }
  return out;
}

}  // namespace attnserve
