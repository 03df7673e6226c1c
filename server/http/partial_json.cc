// A cut JSON text's value as jiter's partial mode reads it (partial_json.h).
#include "server/http/partial_json.h"

#include <string>

namespace attnserve {
namespace {

using ojson = nlohmann::ordered_json;

class PartialReader {
 public:
  explicit PartialReader(absl::string_view text) : s_(text) {}

  // The value at the current position: nullopt when the text ends before
  // it is whole (a container is whole once opened: it closes at the end).
  // Sets malformed_ where the text cannot begin any JSON text.
  std::optional<ojson> Value() {
    SkipSpace();
    if (AtEnd()) return std::nullopt;
    switch (s_[i_]) {
      case '{': return Object();
      case '[': return Array();
      case '"': return String();
      case 't': return Literal("true", ojson(true));
      case 'f': return Literal("false", ojson(false));
      case 'n': return Literal("null", ojson(nullptr));
      default: return Number();
    }
  }

  bool AtEnd() const { return i_ >= s_.size(); }
  bool malformed() const { return malformed_; }
  void SkipSpace() {
    while (!AtEnd() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

 private:
  std::optional<ojson> Fail() {
    malformed_ = true;
    i_ = s_.size();
    return std::nullopt;
  }

  std::optional<ojson> Object() {
    ++i_;
    ojson object = ojson::object();
    for (bool first = true;; first = false) {
      SkipSpace();
      if (AtEnd()) return object;
      if (s_[i_] == '}') {
        ++i_;
        return object;
      }
      if (!first) {
        if (s_[i_] != ',') return Fail();
        ++i_;
        SkipSpace();
        if (AtEnd()) return object;
      }
      if (s_[i_] != '"') return Fail();
      std::optional<ojson> key = String();
      if (!key.has_value()) return malformed_ ? std::nullopt : std::optional<ojson>(object);
      SkipSpace();
      if (AtEnd()) return object;
      if (s_[i_] != ':') return Fail();
      ++i_;
      std::optional<ojson> value = Value();
      if (malformed_) return std::nullopt;
      if (!value.has_value()) return object;  // the key goes with its unfinished value
      object[key->get<std::string>()] = std::move(*value);
    }
  }

  std::optional<ojson> Array() {
    ++i_;
    ojson array = ojson::array();
    for (bool first = true;; first = false) {
      SkipSpace();
      if (AtEnd()) return array;
      if (s_[i_] == ']') {
        ++i_;
        return array;
      }
      if (!first) {
        if (s_[i_] != ',') return Fail();
        ++i_;
      }
      std::optional<ojson> value = Value();
      if (malformed_) return std::nullopt;
      if (!value.has_value()) return array;
      array.push_back(std::move(*value));
    }
  }

  // A whole string decoded, or nullopt when the text ends inside it.
  std::optional<ojson> String() {
    const size_t begin = i_++;
    for (bool escaped = false; !AtEnd(); ++i_) {
      if (escaped) {
        escaped = false;
      } else if (s_[i_] == '\\') {
        escaped = true;
      } else if (s_[i_] == '"') {
        ++i_;
        ojson value = ojson::parse(s_.substr(begin, i_ - begin), nullptr, /*allow_exceptions=*/false);
        return value.is_string() ? std::optional<ojson>(std::move(value)) : Fail();
      }
    }
    return std::nullopt;
  }

  std::optional<ojson> Literal(absl::string_view word, ojson value) {
    const absl::string_view rest = s_.substr(i_, word.size());
    if (word.substr(0, rest.size()) != rest) return Fail();
    i_ += rest.size();
    if (rest.size() < word.size()) return std::nullopt;  // cut inside the word
    return value;
  }

  // A number: kept where it ends the text only if what was written is a
  // whole number ("12", not "1." or "-" or "1e").
  std::optional<ojson> Number() {
    const size_t begin = i_;
    while (!AtEnd() && (absl::string_view("0123456789+-.eE").find(s_[i_]) != absl::string_view::npos)) ++i_;
    if (i_ == begin) return Fail();
    ojson value = ojson::parse(s_.substr(begin, i_ - begin), nullptr, /*allow_exceptions=*/false);
    if (value.is_number()) return value;
    return AtEnd() ? std::nullopt : Fail();
  }

  absl::string_view s_;
  size_t i_ = 0;
  bool malformed_ = false;
};

}  // namespace

std::optional<ojson> PartialJsonValue(absl::string_view text) {
  PartialReader reader(text);
  std::optional<ojson> value = reader.Value();
  reader.SkipSpace();
  if (reader.malformed() || !reader.AtEnd()) return std::nullopt;
  return value;
}

}  // namespace attnserve
