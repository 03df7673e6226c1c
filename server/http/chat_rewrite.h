// What the APIs rewritten onto the chat path (openai_responses.h,
// anthropic_messages.h) share: their tools in chat's shape, and chat's
// errors put back in their own field names.
#ifndef ATTNSERVE_SERVER_HTTP_CHAT_REWRITE_H_
#define ATTNSERVE_SERVER_HTTP_CHAT_REWRITE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_tools.h"

namespace attnserve {

// The first "messages[k]" (or the core's "chat.messages[k]") of `message`
// becomes fields[k], the client's name for chat message k; out of range or
// absent: unchanged.
std::string NameChatMessage(const std::string& message, const std::vector<std::string>& fields);

// A JSON schema's own error ("json_schema: ..." or the core's "sampling:
// json_schema: ...") named `schema_field` instead, unless the schema is a
// tool choice's (named, "required", or "auto"'s call schema), whose path
// already says which tool.
std::string NameResponseSchema(const std::string& message, const ToolCallFormat& tools,
                               absl::string_view schema_field);

// `tools` (an array of objects; errors name "tools[i]") as chat's tools
// [{"type": "function", "function": function(tool, "tools[i]")}].
absl::StatusOr<nlohmann::ordered_json> ChatFunctionTools(
    const nlohmann::ordered_json& tools,
    const std::function<absl::StatusOr<nlohmann::ordered_json>(const nlohmann::ordered_json&, const std::string&)>&
        function);

// A typed event, "event: <its type>\ndata: <it>\n\n" (gateway_util.h's
// SseEvent), as the Responses and Messages streams send them.
std::string TypedSseEvent(const nlohmann::ordered_json& event);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_CHAT_REWRITE_H_
