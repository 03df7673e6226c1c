#include "server/http/json_body.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"

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

// protobuf 3.21's JSON parser takes a lone value where a list is expected
// ("inputs": {...} as a list of one); the API promises a list, so a
// non-array there is a type error naming the field. Recurses into messages.
absl::Status CheckRepeatedAreArrays(const json& object, const google::protobuf::Descriptor* descriptor,
                                    const std::string& path) {
  if (!object.is_object()) return absl::OkStatus();  // the proto parser reports the type
  for (const auto& [key, value] : object.items()) {
    const google::protobuf::FieldDescriptor* field = descriptor->FindFieldByName(key);
    if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(key);
    if (field == nullptr || value.is_null()) continue;  // unknown: the proto parser names it
    const std::string field_path = path.empty() ? key : absl::StrCat(path, ".", key);
    const bool is_message = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE;
    if (field->is_map()) continue;
    if (field->is_repeated()) {
      if (!value.is_array()) {
        return absl::InvalidArgumentError(
            absl::StrCat(SanitizeUtf8(field_path), ": must be a JSON array, got ", value.type_name()));
      }
      if (!is_message) continue;
      for (size_t i = 0; i < value.size(); ++i) {
        absl::Status s = CheckRepeatedAreArrays(value[i], field->message_type(), absl::StrCat(field_path, "[", i, "]"));
        if (!s.ok()) return s;
      }
    } else if (is_message) {
      absl::Status s = CheckRepeatedAreArrays(value, field->message_type(), field_path);
      if (!s.ok()) return s;
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

absl::Status JsonToProto(absl::string_view body, google::protobuf::Message* message) {
  // nlohmann first: it names the field of a syntax or UTF-8 error, which
  // protobuf's parser does not.
  absl::StatusOr<json> shape = ParseJsonObject(body);
  if (!shape.ok()) return shape.status();
  if (absl::Status s = CheckRepeatedAreArrays(*shape, message->GetDescriptor(), ""); !s.ok()) {
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
