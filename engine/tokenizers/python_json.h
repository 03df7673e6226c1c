// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it, the
// form Jinja's tojson filter gives in transformers' chat templates: ", " and
// ": " between items (with an indent, "," at line ends and that many spaces
// per level), keys in the order given, non-ASCII characters as themselves,
// floats as Python's repr. For the chat templates that show tools and tool
// calls to the model (chat_template.cc).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_PYTHON_JSON_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_PYTHON_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// indent < 0: all on one line (json.dumps' default); else json.dumps(...,
// indent=indent).
std::string PythonJsonDumps(const nlohmann::ordered_json& value, int indent = -1);

// `text` (a JSON value's text: a tool, a call's arguments) parsed and written
// as above: the template's `tojson` of the value a server parsed from the
// client's text. INVALID_ARGUMENT naming `field` where it is not JSON.
absl::StatusOr<std::string> PythonJsonDumpsText(absl::string_view text, absl::string_view field);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_PYTHON_JSON_H_
