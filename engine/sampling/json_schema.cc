#include "engine/sampling/json_schema.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

// ordered_json: a schema's "properties" order is the output's order.
using ojson = nlohmann::ordered_json;

const std::set<std::string>& SupportedKeywords() {
  static const std::set<std::string>* keywords = new std::set<std::string>{
      "type",  "properties", "required", "additionalProperties", "items", "enum", "const",
      "title", "description", "$schema", "$id", "default", "examples"};
  return *keywords;
}

std::string Where(const std::string& path) { return path.empty() ? "schema" : path; }

absl::Status Unsupported(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(
      Where(path), ": ", what,
      " (supported: type, properties, required, additionalProperties: false, items, enum, const, "
      "and annotations)"));
}

// The value as json.dumps writes it (", " / ": " separators; strings with
// their non-ASCII characters as they are).
std::string Canonical(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::strict); }

bool LiteralHasType(const ojson& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

class Compiler {
 public:
  explicit Compiler(CompiledJsonSchema& out) : out_(out) {}

  absl::StatusOr<int> Node(const ojson& s, const std::string& path, int parent, int index, int depth) {
    if (depth > kMaxSchemaDepth) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": nested deeper than ", kMaxSchemaDepth));
    }
    if (!s.is_object()) return Unsupported(path, "a schema must be an object");
    for (const auto& [key, value] : s.items()) {
      if (SupportedKeywords().count(key) == 0) return Unsupported(path, absl::StrCat("'", key, "' is not supported"));
    }
    std::vector<std::string> types;
    if (const auto t = s.find("type"); t != s.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array() && !t->empty()) {
        for (const ojson& x : *t) {
          if (!x.is_string()) return Unsupported(path, "'type' must be a string or a list of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        return Unsupported(path, "'type' must be a string or a list of strings");
      }
      for (const std::string& type : types) {
        if (type != "object" && type != "array" && type != "string" && type != "number" && type != "integer" &&
            type != "boolean" && type != "null") {
          return Unsupported(path, absl::StrCat("type '", type, "' is not supported"));
        }
      }
    }
    const bool has_enum = s.contains("enum"), has_const = s.contains("const");
    if (has_enum || has_const) {
      if (has_enum && has_const) return Unsupported(path, "'enum' and 'const' together are not supported");
      std::vector<ojson> values;
      if (has_const) {
        values.push_back(s["const"]);
      } else {
        if (!s["enum"].is_array() || s["enum"].empty()) return Unsupported(path, "'enum' must be a non-empty list");
        for (const ojson& v : s["enum"]) values.push_back(v);
      }
      if (values.size() > static_cast<size_t>(kMaxSchemaMembers)) {
        return Unsupported(path, absl::StrCat("more than ", kMaxSchemaMembers, " enum values"));
      }
      std::vector<std::string> literals;
      for (const ojson& v : values) {
        if (v.is_object() || v.is_array()) return Unsupported(path, "enum or const values that are objects or arrays");
        if (!types.empty() && std::none_of(types.begin(), types.end(),
                                           [&](const std::string& t) { return LiteralHasType(v, t); })) {
          return absl::InvalidArgumentError(absl::StrCat(Where(path), ": the value ", Canonical(v),
                                                         " is not of the type the schema gives"));
        }
        std::string text = Canonical(v);
        if (std::find(literals.begin(), literals.end(), text) == literals.end()) literals.push_back(std::move(text));
      }
      const int id = Add(SchemaNode::Kind::kLiterals, parent, index);
      out_.nodes[id].literals = std::move(literals);
      return id;
    }
    if (types.empty()) return Unsupported(path, "a schema without 'type', 'enum' or 'const'");
    if (types.size() == 1) return Typed(s, types[0], path, parent, index, depth);
    // A list of types: one alternative per first byte. number covers
    // integer; boolean and null are literals read together.
    const bool number = std::count(types.begin(), types.end(), "number") > 0;
    std::vector<std::string> alternatives;
    bool literals_added = false;
    for (const std::string& type : types) {
      if (type == "integer" && number) continue;
      if (type == "boolean" || type == "null") {
        if (literals_added) continue;
        literals_added = true;
        alternatives.push_back("literals");
        continue;
      }
      if (std::find(alternatives.begin(), alternatives.end(), type) == alternatives.end()) alternatives.push_back(type);
    }
    if (alternatives.size() == 1 && alternatives[0] != "literals") {
      return Typed(s, alternatives[0], path, parent, index, depth);
    }
    const int id = Add(SchemaNode::Kind::kUnion, parent, index);
    for (const std::string& alt : alternatives) {
      int child;
      if (alt == "literals") {
        child = Add(SchemaNode::Kind::kLiterals, id, static_cast<int>(out_.nodes[id].children.size()));
        for (const char* t : {"boolean", "null"}) {
          if (std::count(types.begin(), types.end(), t) == 0) continue;
          for (const char* lit : std::string(t) == "boolean" ? std::vector<const char*>{"true", "false"}
                                                              : std::vector<const char*>{"null"}) {
            out_.nodes[child].literals.push_back(lit);
          }
        }
      } else {
        absl::StatusOr<int> c = Typed(s, alt, path, id, static_cast<int>(out_.nodes[id].children.size()), depth);
        if (!c.ok()) return c.status();
        child = *c;
      }
      out_.nodes[id].children.push_back(child);
    }
    return id;
  }

 private:
  int Add(SchemaNode::Kind kind, int parent, int index) {
    SchemaNode n;
    n.kind = kind;
    n.parent = parent;
    n.index_in_parent = index;
    out_.nodes.push_back(std::move(n));
    return static_cast<int>(out_.nodes.size()) - 1;
  }

  absl::StatusOr<int> Typed(const ojson& s, const std::string& type, const std::string& path, int parent, int index,
                            int depth) {
    if (static_cast<int>(out_.nodes.size()) >= kMaxSchemaNodes) {
      return absl::InvalidArgumentError(absl::StrCat("schema: more than ", kMaxSchemaNodes, " nodes"));
    }
    if (type == "string") return Add(SchemaNode::Kind::kString, parent, index);
    if (type == "number") return Add(SchemaNode::Kind::kNumber, parent, index);
    if (type == "integer") return Add(SchemaNode::Kind::kInteger, parent, index);
    if (type == "boolean" || type == "null") {
      const int id = Add(SchemaNode::Kind::kLiterals, parent, index);
      out_.nodes[id].literals = type == "null" ? std::vector<std::string>{"null"}
                                               : std::vector<std::string>{"true", "false"};
      return id;
    }
    if (type == "array") {
      const auto items = s.find("items");
      if (items == s.end()) return Unsupported(path, "an array needs 'items'");
      const int id = Add(SchemaNode::Kind::kArray, parent, index);
      absl::StatusOr<int> child = Node(*items, absl::StrCat(path, path.empty() ? "" : ".", "items"), id, 0, depth + 1);
      if (!child.ok()) return child.status();
      out_.nodes[id].children.push_back(*child);
      return id;
    }
    // object
    if (const auto extra = s.find("additionalProperties");
        extra != s.end() && !(extra->is_boolean() && !extra->get<bool>())) {
      return Unsupported(path, "'additionalProperties' other than false is not supported");
    }
    const int id = Add(SchemaNode::Kind::kObject, parent, index);
    std::vector<std::string> names;
    if (const auto props = s.find("properties"); props != s.end()) {
      if (!props->is_object()) return Unsupported(path, "'properties' must be an object");
      if (props->size() > static_cast<size_t>(kMaxSchemaMembers)) {
        return Unsupported(path, absl::StrCat("more than ", kMaxSchemaMembers, " properties"));
      }
      for (const auto& [name, sub] : props->items()) {
        const int k = static_cast<int>(names.size());
        names.push_back(name);
        out_.nodes[id].keys.push_back(Canonical(ojson(name)) + ": ");
        out_.nodes[id].required.push_back(false);
        absl::StatusOr<int> child =
            Node(sub, absl::StrCat(path, path.empty() ? "" : ".", "properties.", name), id, k, depth + 1);
        if (!child.ok()) return child.status();
        out_.nodes[id].children.push_back(*child);
      }
    }
    if (const auto req = s.find("required"); req != s.end()) {
      if (!req->is_array()) return Unsupported(path, "'required' must be a list of property names");
      for (const ojson& r : *req) {
        const auto it = r.is_string() ? std::find(names.begin(), names.end(), r.get<std::string>()) : names.end();
        if (it == names.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(path), ": required ", Canonical(r), " is not one of its properties"));
        }
        out_.nodes[id].required[it - names.begin()] = true;
      }
    }
    return id;
  }

  CompiledJsonSchema& out_;
};


}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileJsonSchema(std::string_view schema_json) {
  if (schema_json.size() > kMaxSchemaBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema: ", schema_json.size(), " bytes, at most ", kMaxSchemaBytes));
  }
  const ojson schema = ojson::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return absl::InvalidArgumentError("schema: not valid JSON");
  if (!schema.is_object() || schema.value("type", ojson()) != "object") {
    return absl::InvalidArgumentError("schema: the top level must be {\"type\": \"object\", ...}");
  }
  auto out = std::make_shared<CompiledJsonSchema>();
  Compiler compiler(*out);
  absl::StatusOr<int> root = compiler.Node(schema, "", -1, 0, 0);
  if (!root.ok()) return root.status();
  return std::shared_ptr<const CompiledJsonSchema>(std::move(out));
}

// ---- JsonSchemaAcceptor ----

void JsonSchemaAcceptor::EnterMembers(int next, bool written) {
  const SchemaNode& n = node();
  phase_ = Phase::kMembers;
  next_ = static_cast<uint8_t>(next);
  written_ = written;
  offset_ = 0;
  cand_ = 0;
  // Any property up to and including the next required one may come next;
  // "}" only when no required one is left.
  const int count = static_cast<int>(n.keys.size());
  bool required_left = false;
  for (int j = next; j < count; ++j) {
    cand_ |= uint64_t{1} << j;
    if (n.required[j]) {
      required_left = true;
      break;
    }
  }
  if (!required_left) cand_ |= uint64_t{1} << kCloseBrace;
}

int JsonSchemaAcceptor::MemberByte(int j, int k) const {
  if (j == kCloseBrace) return k == 0 ? '}' : -1;
  if (written_) {
    if (k < 2) return ", "[k];
    k -= 2;
  }
  const std::string& key = node().keys[j];
  return k < static_cast<int>(key.size()) ? static_cast<uint8_t>(key[k]) : -1;
}

bool JsonSchemaAcceptor::FeedMembers(uint8_t byte) {
  uint64_t next_cand = 0;
  for (uint64_t c = cand_; c != 0; c &= c - 1) {
    const int j = __builtin_ctzll(c);
    if (MemberByte(j, offset_) == byte) next_cand |= uint64_t{1} << j;
  }
  if (next_cand == 0) return false;
  cand_ = next_cand;
  ++offset_;
  // No candidate's text begins another's (each key's ends in ": ", "}" is
  // alone), so a whole one is the only one left.
  const int j = __builtin_ctzll(cand_);
  if (MemberByte(j, offset_) != -1) return true;
  if (j == kCloseBrace) return EndValue();
  node_ = static_cast<uint16_t>(node().children[j]);
  phase_ = Phase::kStart;
  offset_ = 0;
  cand_ = 0;
  return true;
}

bool JsonSchemaAcceptor::FeedLiteral(uint8_t byte) {
  const std::vector<std::string>& lits = node().literals;
  uint64_t next_cand = 0;
  bool whole = false;  // a literal already ended before this byte
  for (uint64_t c = cand_; c != 0; c &= c - 1) {
    const int i = __builtin_ctzll(c);
    if (lits[i].size() == offset_) {
      whole = true;
    } else if (static_cast<uint8_t>(lits[i][offset_]) == byte) {
      next_cand |= uint64_t{1} << i;
    }
  }
  if (next_cand == 0) {
    // "1" of {1, 10} followed by "," is the value 1, then the ",".
    if (whole && EndValue()) return Feed(byte);
    return false;
  }
  cand_ = next_cand;
  ++offset_;
  // A literal that is whole now ends the value at once unless a longer one
  // goes on from it (then the next byte decides).
  bool now_whole = false, longer = false;
  for (uint64_t c = cand_; c != 0; c &= c - 1) {
    if (lits[__builtin_ctzll(c)].size() == offset_) {
      now_whole = true;
    } else {
      longer = true;
    }
  }
  if (now_whole && !longer) return EndValue();
  return true;
}

bool JsonSchemaAcceptor::EndValue() {
  const SchemaNode& n = node();
  if (n.parent < 0) {
    phase_ = Phase::kDone;
    return true;
  }
  const int index = n.index_in_parent;
  node_ = static_cast<uint16_t>(n.parent);
  switch (node().kind) {
    case SchemaNode::Kind::kUnion:
      return EndValue();
    case SchemaNode::Kind::kObject:
      EnterMembers(index + 1, true);
      return true;
    case SchemaNode::Kind::kArray:
      phase_ = Phase::kAfterItem;
      offset_ = 0;
      cand_ = 0;
      return true;
    default:
      return false;  // only containers have children
  }
}

bool JsonSchemaAcceptor::StartValue(uint8_t byte) {
  const SchemaNode& n = node();
  switch (n.kind) {
    case SchemaNode::Kind::kObject:
      if (byte != '{') return false;
      EnterMembers(0, false);
      return true;
    case SchemaNode::Kind::kArray:
      if (byte != '[') return false;
      phase_ = Phase::kArrayOpen;
      return true;
    case SchemaNode::Kind::kString:
      if (byte != '"') return false;
      phase_ = Phase::kString;
      string_ = JsonStringLexer();
      return true;
    case SchemaNode::Kind::kNumber:
    case SchemaNode::Kind::kInteger:
      number_ = JsonNumberLexer(n.kind == SchemaNode::Kind::kInteger);
      if (number_.Start(byte) == LexStep::kRefused) return false;
      phase_ = Phase::kNumber;
      return true;
    case SchemaNode::Kind::kLiterals:
      phase_ = Phase::kLiteral;
      offset_ = 0;
      cand_ = n.literals.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << n.literals.size()) - 1;
      return FeedLiteral(byte);
    case SchemaNode::Kind::kUnion:
      for (int child : n.children) {
        const SchemaNode& alt = schema_->nodes[child];
        bool starts = false;
        switch (alt.kind) {
          case SchemaNode::Kind::kObject: starts = byte == '{'; break;
          case SchemaNode::Kind::kArray: starts = byte == '['; break;
          case SchemaNode::Kind::kString: starts = byte == '"'; break;
          case SchemaNode::Kind::kNumber:
          case SchemaNode::Kind::kInteger: starts = byte == '-' || json_lexer_internal::IsDigit(byte); break;
          case SchemaNode::Kind::kLiterals:
            for (const std::string& l : alt.literals) starts |= static_cast<uint8_t>(l[0]) == byte;
            break;
          case SchemaNode::Kind::kUnion: break;
        }
        if (starts) {
          node_ = static_cast<uint16_t>(child);
          phase_ = Phase::kStart;
          return StartValue(byte);
        }
      }
      return false;
  }
  return false;
}

bool JsonSchemaAcceptor::Feed(uint8_t byte) {
  switch (phase_) {
    case Phase::kStart:
      return StartValue(byte);
    case Phase::kMembers:
      return FeedMembers(byte);
    case Phase::kArrayOpen:
      if (byte == ']') return EndValue();
      node_ = static_cast<uint16_t>(node().children[0]);
      phase_ = Phase::kStart;
      return StartValue(byte);
    case Phase::kAfterItem:
      if (offset_ == 0) {
        if (byte == ']') return EndValue();
        if (byte != ',') return false;
        offset_ = 1;
        return true;
      }
      if (byte != ' ') return false;
      node_ = static_cast<uint16_t>(node().children[0]);
      phase_ = Phase::kStart;
      offset_ = 0;
      return true;
    case Phase::kString:
      switch (string_.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone: return EndValue();
      }
      return false;
    case Phase::kNumber:
      switch (number_.Feed(byte)) {
        case LexStep::kMore: return true;
        case LexStep::kRefused: return false;
        case LexStep::kDone: return EndValue() && Feed(byte);  // the byte is the parent's
      }
      return false;
    case Phase::kLiteral:
      return FeedLiteral(byte);
    case Phase::kDone:
      return false;
  }
  return false;
}

std::pair<uint64_t, uint64_t> JsonSchemaAcceptor::StateKey() const {
  uint64_t lexer = 0, members = 0, offset = 0, cand = 0;
  switch (phase_) {
    case Phase::kString:
      lexer = string_.Key();
      break;
    case Phase::kNumber:
      lexer = number_.Key();
      break;
    case Phase::kMembers:
      members = uint64_t{next_} | uint64_t{written_} << 6;
      offset = offset_;
      cand = cand_;
      break;
    case Phase::kLiteral:
      offset = offset_;
      cand = cand_;
      break;
    case Phase::kAfterItem:
      offset = offset_;
      break;
    default:
      break;
  }
  // The lexers' state and the candidates never go with the same phase.
  return {uint64_t{node_} | static_cast<uint64_t>(phase_) << 16 | members << 21 | offset << 28, cand | lexer};
}

}  // namespace attnserve
