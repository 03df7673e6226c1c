#include "server/http/chat_rewrite.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/http/gateway_util.h"
#include "server/http/json_fields.h"

namespace attnserve {

std::string NameChatMessage(const std::string& message, const std::vector<std::string>& fields) {
  constexpr char kMessages[] = "messages[";
  size_t at = message.find(kMessages);
  if (at == std::string::npos) return message;
  const size_t digits = at + sizeof(kMessages) - 1;
  if (at >= 5 && message.compare(at - 5, 5, "chat.") == 0) at -= 5;
  const size_t close = message.find(']', digits);
  int k = -1;
  if (close == std::string::npos || !absl::SimpleAtoi(message.substr(digits, close - digits), &k) || k < 0 ||
      k >= static_cast<int>(fields.size())) {
    return message;
  }
  return absl::StrCat(message.substr(0, at), fields[k], message.substr(close + 1));
}

std::string NameResponseSchema(const std::string& message, const ToolCallFormat& tools,
                               absl::string_view schema_field) {
  if (tools.mode == ToolCallFormat::Mode::kNamed || tools.mode == ToolCallFormat::Mode::kRequired ||
      tools.call_schema) {
    return message;
  }
  for (absl::string_view prefix : {"sampling: json_schema: ", "json_schema: "}) {
    if (absl::StartsWith(message, prefix)) return absl::StrCat(schema_field, ": ", message.substr(prefix.size()));
  }
  return message;
}

absl::StatusOr<nlohmann::ordered_json> ChatFunctionTools(
    const nlohmann::ordered_json& tools,
    const std::function<absl::StatusOr<nlohmann::ordered_json>(const nlohmann::ordered_json&, const std::string&)>&
        function) {
  using ojson = nlohmann::ordered_json;
  if (!tools.is_array()) return TypeError("tools", "an array of tools", tools);
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string field = absl::StrCat("tools[", i, "]");
    if (!tools[i].is_object()) return TypeError(field, "a tool object", tools[i]);
    ASSIGN_OR_RETURN(ojson f, function(tools[i], field));
    out.push_back(ojson{{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

std::string TypedSseEvent(const nlohmann::ordered_json& event) {
  return SseEvent(event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                  event["type"].get<std::string>());
}

}  // namespace attnserve
