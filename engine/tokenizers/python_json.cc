#include "engine/tokenizers/python_json.h"

#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

// json.dumps' string escapes with ensure_ascii=False are nlohmann's: '"',
// '\\', \b \f \n \r \t and \u00xx for the other control characters;
// everything else as itself. (Text here comes from parsed JSON or proto
// strings, so it is valid UTF-8; anything else would become U+FFFD.)
void AppendString(const std::string& s, std::string& out) {
  out += nlohmann::ordered_json(s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// Python's float repr: the shortest text that reads back, with ".0" where
// it would look like an integer, and Infinity / NaN as json.dumps writes them.
void AppendFloat(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[64];
  // Python switches to exponent form below 1e-4 and from 1e16 on.
  const double a = std::fabs(v);
  const bool scientific = a != 0.0 && (a < 1e-4 || a >= 1e16);
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v,
                                       scientific ? std::chars_format::scientific : std::chars_format::fixed);
  std::string text(buf, ec == std::errc() ? end : buf);
  if (scientific) {
    // C++ writes "1e-07" / "1.5e+16" like Python, but a one-digit exponent
    // as "e+5": Python pads to two digits.
    const size_t e = text.find('e');
    if (e != std::string::npos && text.size() - e == 3) text.insert(e + 2, "0");
  } else if (text.find('.') == std::string::npos) {
    text += ".0";
  }
  out += text;
}

void Append(const nlohmann::ordered_json& v, int indent, int level, std::string& out) {
  const auto newline = [&](int depth) {
    out += '\n';
    out.append(static_cast<size_t>(indent * depth), ' ');
  };
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::object:
    case nlohmann::ordered_json::value_t::array: {
      const bool object = v.is_object();
      if (v.empty()) {
        out += object ? "{}" : "[]";
        return;
      }
      out += object ? '{' : '[';
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (it != v.begin()) out += indent < 0 ? ", " : ",";
        if (indent >= 0) newline(level + 1);
        if (object) {
          AppendString(it.key(), out);
          out += ": ";
        }
        Append(it.value(), indent, level + 1, out);
      }
      if (indent >= 0) newline(level);
      out += object ? '}' : ']';
      return;
    }
    case nlohmann::ordered_json::value_t::string: AppendString(v.get_ref<const std::string&>(), out); return;
    case nlohmann::ordered_json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case nlohmann::ordered_json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); return;
    case nlohmann::ordered_json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); return;
    case nlohmann::ordered_json::value_t::number_float: AppendFloat(v.get<double>(), out); return;
    default: out += "null"; return;
  }
}

}  // namespace

std::string PythonJsonDumps(const nlohmann::ordered_json& value, int indent) {
  std::string out;
  Append(value, indent, 0, out);
  return out;
}

absl::StatusOr<std::string> PythonJsonDumpsText(absl::string_view text, absl::string_view field) {
  const nlohmann::ordered_json value = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(field, ": not valid JSON"));
  return PythonJsonDumps(value);
}

}  // namespace attnserve
