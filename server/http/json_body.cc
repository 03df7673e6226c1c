#include "server/http/json_body.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

using nlohmann::json;

// A SAX consumer that only tracks where in the document the parser is, so a
// syntax error can name the field it happened in.
class PathTracker {
 public:
  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(json::number_integer_t) { return Value(); }
  bool number_unsigned(json::number_unsigned_t) { return Value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return Value(); }
  bool string(json::string_t&) { return Value(); }
  bool binary(json::binary_t&) { return Value(); }
  bool start_object(std::size_t) {
    frames_.push_back(Frame{false, 0, ""});
    return true;
  }
  bool key(json::string_t& k) {
    frames_.back().key = k;
    return true;
  }
  bool end_object() { return Pop(); }
  bool start_array(std::size_t) {
    frames_.push_back(Frame{true, 0, ""});
    return true;
  }
  bool end_array() { return Pop(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error_position_ = position;
    error_ = ex.what();
    return false;
  }

  // "inputs[2].text", or "" at the top level.
  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.array) {
        absl::StrAppend(&path, "[", f.count, "]");
      } else if (!f.key.empty()) {
        absl::StrAppend(&path, path.empty() ? "" : ".", f.key);
      }
    }
    return path;
  }
  std::size_t error_position() const { return error_position_; }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool array;
    int64_t count;    // completed elements, for arrays
    std::string key;  // the current key, for objects
  };
  bool Value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    return true;
  }
  bool Pop() {
    frames_.pop_back();
    return Value();
  }

  std::vector<Frame> frames_;
  std::size_t error_position_ = 0;
  std::string error_;
};

// Length of the well-formed UTF-8 sequence at s[i], or 0 if it is not one.
int Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  int n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (int k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// What JSON type `value` must have for a singular value of `field`, or ""
// when it fits. protobuf 3.21's JSON parser is lenient (a string for a bool, a
// lone value for a list); the API is not, so a mismatch is a type error
// naming the field.
const char* TypeMismatch(const google::protobuf::FieldDescriptor* field, const json& value) {
  using FD = google::protobuf::FieldDescriptor;
  switch (field->cpp_type()) {
    case FD::CPPTYPE_BOOL: return value.is_boolean() ? "" : "a boolean";
    case FD::CPPTYPE_STRING: return value.is_string() ? "" : "a string";
    case FD::CPPTYPE_ENUM: return value.is_string() || value.is_number_integer() ? "" : "an enum name or number";
    case FD::CPPTYPE_MESSAGE: return value.is_object() ? "" : "an object";
    default:  // numbers; proto3 JSON also allows them as strings ("123", "NaN")
      return value.is_number() || value.is_string() ? "" : "a number";
  }
}

absl::Status CheckJsonShape(const json& object, const google::protobuf::Descriptor* descriptor,
                            const std::string& path) {
  for (const auto& [key, value] : object.items()) {
    const google::protobuf::FieldDescriptor* field = descriptor->FindFieldByName(key);
    if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(key);
    if (field == nullptr || value.is_null() || field->is_map()) continue;  // unknown: the proto parser names it
    const std::string field_path = path.empty() ? key : absl::StrCat(path, ".", key);
    const auto check = [&](const json& v, const std::string& where) -> absl::Status {
      if (const char* expected = TypeMismatch(field, v); expected[0] != '\0') {
        return absl::InvalidArgumentError(
            absl::StrCat(SanitizeUtf8(where), ": must be ", expected, ", got ", v.type_name()));
      }
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        return CheckJsonShape(v, field->message_type(), where);
      }
      return absl::OkStatus();
    };
    if (!field->is_repeated()) {
      if (absl::Status s = check(value, field_path); !s.ok()) return s;
      continue;
    }
    if (!value.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(SanitizeUtf8(field_path), ": must be a JSON array, got ", value.type_name()));
    }
    for (size_t i = 0; i < value.size(); ++i) {
      if (absl::Status s = check(value[i], absl::StrCat(field_path, "[", i, "]")); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string SanitizeUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int n = Utf8SequenceLength(s, i);
    if (n == 0) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02X", static_cast<unsigned char>(s[i])));
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

absl::StatusOr<json> ParseJsonObject(absl::string_view body) {
  if (body.empty()) return absl::InvalidArgumentError("request body is empty; expected a JSON object");
  PathTracker tracker;
  if (!json::sax_parse(body.begin(), body.end(), &tracker)) {
    const std::string path = tracker.Path();
    const std::string where = path.empty() ? "" : absl::StrCat(" in field '", SanitizeUtf8(path), "'");
    if (tracker.error().find("UTF-8") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("request body is not valid UTF-8", where, " (byte ",
                                                     tracker.error_position(), ")"));
    }
    return absl::InvalidArgumentError(absl::StrCat("request body is not valid JSON", where, " (byte ",
                                                   tracker.error_position(), "): ",
                                                   SanitizeUtf8(tracker.error())));
  }
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body must be a JSON object, not ", parsed.is_discarded() ? "invalid" : parsed.type_name()));
  }
  return parsed;
}

absl::StatusOr<nlohmann::ordered_json> ParseOrderedJsonObject(absl::string_view body) {
  RETURN_IF_ERROR(ParseJsonObject(body).status());  // its errors name the byte and the field
  return nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
}

absl::Status JsonToProto(absl::string_view body, google::protobuf::Message* message) {
  // nlohmann first: it names the field of a syntax or UTF-8 error, which
  // protobuf's parser does not.
  absl::StatusOr<json> shape = ParseJsonObject(body);
  if (!shape.ok()) return shape.status();
  if (absl::Status s = CheckJsonShape(*shape, message->GetDescriptor(), ""); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", message->GetDescriptor()->name(), ": ", s.message()));
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(body.data(), body.size()), message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", message->GetDescriptor()->name(), ": ",
                     SanitizeUtf8(std::string(status.message().data(), status.message().size()))));
  }
  return absl::OkStatus();
}

std::string ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  // Printing a valid message cannot fail; an empty object is the fallback.
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

}  // namespace attnserve
