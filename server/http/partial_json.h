// The value of a JSON text cut short, as jiter's partial mode reads it
// (jiter.from_json(text, partial_mode=True)): containers still open are
// closed where the text ends, and a string, literal or number the cut left
// unfinished is dropped with its key (a number that ends the text is kept
// when what was written is a whole number). The anthropic SDK builds a
// streamed tool_use block's input so; the unstreamed Messages answer
// gives a call cut by max_tokens the same input (anthropic_messages.cc).
// Checked against jiter on every prefix of several documents
// (tools/golden/partial_json_jiter.py).
#ifndef ATTNSERVE_SERVER_HTTP_PARTIAL_JSON_H_
#define ATTNSERVE_SERVER_HTTP_PARTIAL_JSON_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// nullopt when `text` is not the beginning of a JSON text, or nothing of a
// value is left (an empty text, a lone unfinished string).
std::optional<nlohmann::ordered_json> PartialJsonValue(absl::string_view text);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_PARTIAL_JSON_H_
