// JSON schema mode's compiler: a schema's JSON text to the tree of nodes
// JsonSchemaAcceptor reads (json_schema.cc), and a regex to its one-node
// "schema".
#include "engine/sampling/json_schema.h"

#include <algorithm>
#include <bitset>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <system_error>
#include <tuple>
#include <utility>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/core/status_macros.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

// ordered_json: a schema's "properties" order is the output's order.
using ojson = nlohmann::ordered_json;

// Keywords that say nothing about which values are valid.
bool IsAnnotation(const std::string& key) {
  static const std::set<std::string>* annotations = new std::set<std::string>{
      "title", "description", "$schema", "$id", "$comment", "default", "examples", "deprecated", "readOnly",
      "writeOnly", "$defs", "definitions"};
  return annotations->count(key) > 0;
}

const std::set<std::string>& SupportedKeywords() {
  static const std::set<std::string>* keywords = new std::set<std::string>{
      "type",      "properties", "required",  "additionalProperties", "items",   "enum",
      "const",     "$ref",       "anyOf",     "oneOf",                "allOf",   "minLength",
      "maxLength", "minItems",   "maxItems",  "minimum",              "maximum", "exclusiveMinimum",
      "exclusiveMaximum", "pattern", "format", "prefixItems"};
  return *keywords;
}

// Keywords that bound a string's length, an array's items or an integer.
constexpr const char* kBoundKeywords[] = {"minLength", "maxLength",        "minItems", "maxItems",        "minimum",
                                          "exclusiveMinimum", "maximum", "exclusiveMaximum", "pattern", "format"};

// The "format"s read as patterns, each the language of xgrammar's grammar
// for it (tools/golden/json_schema_documents.py checks them against
// xgrammar document by document): RFC 3339's full-date, full-time and
// date-time (an offset required), ISO 8601 durations, RFC 4122 UUIDs,
// dotted-quad IPv4, RFC 4291 IPv6 text forms, RFC 5321 email addresses
// (a quoted local part with its escapes as written in JSON), lowercase RFC
// 1123 hostnames, RFC 3986 URIs and URI references; and pydantic's
// "ipvanyaddress" as IPv4 or IPv6 (xgrammar does not read that one).
struct FormatPattern {
  std::string regex;
  bool escaped = false;  // written over the JSON string's bytes, escapes included
};

const FormatPattern* FormatRegex(const std::string& format) {
  static const auto* patterns = [] {
    const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
    const std::string time =
        R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
    const std::string octet = R"((25[0-5]|2[0-4]\d|[01]?\d\d?))";
    const std::string ipv4 = octet + R"(\.)" + octet + R"(\.)" + octet + R"(\.)" + octet;
    // IPv6's embedded IPv4 octets are written differently from ipv4's own
    // ("09" and "00" pass here too), as in xgrammar.
    const std::string h16 = "[0-9a-fA-F]{1,4}";
    const std::string v4 = R"(((25[0-5]|(2[0-4]|1?[0-9])?[0-9])\.){3}(25[0-5]|(2[0-4]|1?[0-9])?[0-9]))";
    const std::string ipv6 = absl::StrCat(                                                  //
        "(", h16, ":){7}", h16,                                                             //
        "|(", h16, ":){1,7}:",                                                              //
        "|(", h16, ":){1,6}:", h16,                                                         //
        "|(", h16, ":){1,5}(:", h16, "){1,2}",                                              //
        "|(", h16, ":){1,4}(:", h16, "){1,3}",                                              //
        "|(", h16, ":){1,3}(:", h16, "){1,4}",                                              //
        "|(", h16, ":){1,2}(:", h16, "){1,5}",                                              //
        "|", h16, ":(:", h16, "){1,6}",                                                     //
        "|:((:", h16, "){1,7}|:)",                                                          //
        "|::(ffff(:0{1,4})?:)?", v4,                                                        //
        "|(", h16, ":){1,4}:", v4);
    const std::string pct = "%[0-9A-Fa-f]{2}";
    const std::string user = "([a-zA-Z0-9_.~!$&'()*+,;=:-]|" + pct + ")";
    const std::string host = "([a-zA-Z0-9_.~!$&'()*+,;=-]|" + pct + ")";
    const std::string pchar = "([a-zA-Z0-9_.~!$&'()*+,;=:@-]|" + pct + ")";
    const std::string pchar_nc = "([a-zA-Z0-9_.~!$&'()*+,;=@-]|" + pct + ")";  // no ':'
    const std::string qchar = "([a-zA-Z0-9_.~!$&'()*+,;=:@/?-]|" + pct + ")";
    const std::string authority = "//(" + user + "*@)?" + host + "*(:[0-9]*)?(/" + pchar + "*)*";
    const std::string tail = R"((\?)" + qchar + "*)?(#" + qchar + "*)?";
    const std::string atom = "[a-zA-Z0-9_!#$%&'*+/=?^`{|}~-]+";
    const std::string quoted_text = R"([ !#-\[\]-~])";
    const std::string email =
        absl::StrCat("(", atom, R"((\.)", atom, ")*", R"(|\\"(\\\\()", quoted_text, R"(|\\"|\\\\)|)", quoted_text,
                     R"()*\\"))", R"(@[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9][-A-Za-z0-9]*[A-Za-z0-9])*)");
    const std::string d = "[0-9]+";
    const std::string clock = absl::StrCat(d, "S|", d, "M(", d, "S)?|", d, "H(", d, "M(", d, "S)?)?");
    return new std::map<std::string, FormatPattern>{
        {"date", {date}},
        {"time", {time}},
        {"date-time", {date + "T" + time}},
        {"duration", {absl::StrCat("P((", d, "D|", d, "M(", d, "D)?|", d, "Y(", d, "M(", d, "D)?)?)(T(", clock,
                                   "))?|T(", clock, ")|", d, "W)")}},
        {"uuid", {R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"}},
        {"ipv4", {ipv4}},
        {"ipv6", {ipv6}},
        {"ipvanyaddress", {ipv4 + "|" + ipv6}},
        {"email", {email, /*escaped=*/true}},
        {"hostname", {R"([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)"}},
        {"uri", {"[a-zA-Z][a-zA-Z+.-]*:(" + authority + "|/?(" + pchar + "+(/" + pchar + "*)*)?)" + tail}},
        {"uri-reference", {"(" + authority + "|/(" + pchar + "+(/" + pchar + "*)*)?|" + pchar_nc + "+(/" + pchar +
                           "*)*)?" + tail}},
    };
  }();
  const auto it = patterns->find(format);
  return it == patterns->end() ? nullptr : &it->second;
}

// OpenAPI's integer formats, as the ranges they name.
const std::pair<int64_t, int64_t>* IntegerFormatRange(const std::string& format) {
  static constexpr std::pair<int64_t, int64_t> kInt32{std::numeric_limits<int32_t>::min(),
                                                      std::numeric_limits<int32_t>::max()};
  static constexpr std::pair<int64_t, int64_t> kInt64{std::numeric_limits<int64_t>::min(),
                                                      std::numeric_limits<int64_t>::max()};
  return format == "int32" ? &kInt32 : format == "int64" ? &kInt64 : nullptr;
}

std::string Where(const std::string& path) { return path.empty() ? "schema" : path; }

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

absl::Status Unsupported(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(
      Where(path), ": ", what,
      " (supported: type, properties, required, additionalProperties, items, enum, const, "
      "local $ref, any value ({}), "
      "anyOf/oneOf whose alternatives begin differently or are tagged objects, allOf of one schema, "
      "minLength/maxLength, pattern, format, "
      "minItems/maxItems, minimum/maximum, and annotations)"));
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

// Whether a literal's text (json.dumps form) is also read by this node, so
// that a union holding both needs only the node. Exact: a literal the node
// would refuse (out of its bounds, not matching its pattern) stays an
// alternative of its own.
bool NodeReadsLiteral(const SchemaNode& n, const std::string& text) {
  const bool number = text[0] == '-' || json_lexer_internal::IsDigit(static_cast<uint8_t>(text[0]));
  switch (n.kind) {
    case SchemaNode::Kind::kString: {
      if (text[0] != '"') return false;
      if (!n.pattern && n.min_length == 0 && n.max_length < 0) return true;
      // The text between the quotes as the acceptor reads it: through the
      // pattern's automaton as written, characters counted.
      const std::string_view inner = std::string_view(text).substr(1, text.size() - 2);
      if (!n.pattern && inner.find('\\') != std::string_view::npos) return false;  // bounded: no escapes
      int state = n.pattern ? n.pattern->start : 0, chars = 0;
      for (const char c : inner) {
        const uint8_t byte = static_cast<uint8_t>(c);
        if (byte < 0x80 || byte >= 0xC0) ++chars;
        if (n.pattern && (state = n.pattern->Step(state, byte)) < 0) return false;
      }
      return (!n.pattern || n.pattern->accepting[state]) && chars >= n.min_length &&
             (n.max_length < 0 || chars <= n.max_length);
    }
    case SchemaNode::Kind::kNumber:
      return number && (!n.range.bounded() || NumberRangeTakes(n.range, text));
    case SchemaNode::Kind::kInteger:
      return number && text.find_first_of(".eE") == std::string::npos && text != "-0" &&
             (!n.range.bounded() || NumberRangeTakes(n.range, text));
    default: return false;
  }
}

// A value in a range's units as decimal text (a number's: 10^-6 units).
std::string UnitsText(__int128 units, bool decimal) {
  const bool negative = units < 0;
  unsigned __int128 m = negative ? -static_cast<unsigned __int128>(units) : units;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m > 0);
  if (decimal) {
    if (digits.size() <= static_cast<size_t>(kMaxFractionDigits)) {
      digits.insert(0, kMaxFractionDigits + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - kMaxFractionDigits, ".");
    while (digits.back() == '0') digits.pop_back();
    if (digits.back() == '.') digits.pop_back();
  }
  return negative ? "-" + digits : digits;
}

// Whether a number node reads every value an integer node does (so a union
// of both needs only the number).
bool NumberReadsIntegers(const NumberRange& number, const NumberRange& integer) {
  if (!number.bounded()) return true;
  const __int128 unit = kNumberGridUnit;
  return (!number.has_min || (integer.has_min && integer.min * unit >= number.min)) &&
         (!number.has_max || (integer.has_max && integer.max * unit <= number.max));
}

// The bytes a value of this node can begin with.
std::bitset<256> FirstBytes(const CompiledJsonSchema& schema, int id) {
  const SchemaNode& n = schema.nodes[id];
  std::bitset<256> first;
  switch (n.kind) {
    case SchemaNode::Kind::kObject:
    case SchemaNode::Kind::kMap:
    case SchemaNode::Kind::kTagged: first.set('{'); break;
    case SchemaNode::Kind::kAny:
      for (const char c : std::string("{[\"-0123456789tfn")) first.set(static_cast<uint8_t>(c));
      break;
    case SchemaNode::Kind::kArray: first.set('['); break;
    case SchemaNode::Kind::kString: first.set('"'); break;
    case SchemaNode::Kind::kNumber:
    case SchemaNode::Kind::kInteger:
      first.set('-');
      for (int d = '0'; d <= '9'; ++d) first.set(d);
      break;
    case SchemaNode::Kind::kLiterals:
      for (const std::string& l : n.literals) first.set(static_cast<uint8_t>(l[0]));
      break;
    case SchemaNode::Kind::kUnion:
      for (int c : n.children) first |= FirstBytes(schema, c);
      break;
    case SchemaNode::Kind::kText: break;  // never an alternative
  }
  return first;
}

std::string ByteName(int b) {
  return b >= 0x20 && b < 0x7f ? absl::StrCat("'", std::string(1, static_cast<char>(b)), "'") : absl::StrCat(b);
}

// What Node gives for a value with no instance within the recursion depth
// (a $ref opened more than the depth allows, or an object that requires
// one): its parent leaves it out, or is itself kNever.
constexpr int kNever = -1;

class Compiler {
 public:
  // `recursion_depth`: how many times a $ref target may be open at once
  // (the root counts as open), so a recursive schema is read unrolled to
  // that depth.
  Compiler(CompiledJsonSchema& out, const ojson& root, int recursion_depth)
      : out_(out), root_(root), recursion_depth_(recursion_depth), expanding_{&root} {}

  // Whether a $ref reached a schema already open (the schema is recursive).
  bool unrolled() const { return unrolled_; }

  absl::StatusOr<int> Node(const ojson& s, const std::string& path, int parent, int index, int depth) {
    if (depth > kMaxSchemaDepth) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": nested deeper than ", kMaxSchemaDepth));
    }
    if (static_cast<int>(out_.nodes.size()) >= kMaxSchemaNodes) {
      return absl::InvalidArgumentError(absl::StrCat("schema: more than ", kMaxSchemaNodes, " nodes"));
    }
    if (!s.is_object()) return Unsupported(path, "a schema must be an object");
    for (const auto& [key, value] : s.items()) {
      if (SupportedKeywords().count(key) == 0 && !IsAnnotation(key)) {
        return Unsupported(path, absl::StrCat("'", key, "' is not supported"));
      }
    }
    for (const char* applicator : {"$ref", "allOf", "anyOf", "oneOf"}) {
      if (!s.contains(applicator)) continue;
      for (const auto& [key, value] : s.items()) {
        if (key != applicator && !IsAnnotation(key)) {
          return Unsupported(path, absl::StrCat("'", key, "' beside '", applicator, "' is not supported"));
        }
      }
      if (std::string(applicator) == "$ref") return Ref(s["$ref"], path, parent, index, depth);
      const ojson& list = s[applicator];
      if (!list.is_array() || list.empty()) {
        return Unsupported(path, absl::StrCat("'", applicator, "' must be a non-empty list of schemas"));
      }
      if (std::string(applicator) == "allOf") {
        if (list.size() != 1) return Unsupported(path, "'allOf' of more than one schema is not supported");
        return Node(list[0], Join(path, "allOf[0]"), parent, index, depth + 1);
      }
      // anyOf and oneOf: the alternatives must begin differently (checked
      // in Union), so no value is taken by two of them and "one of" is
      // "any of". An alternative past the recursion depth is left out.
      const int id = Add(SchemaNode::Kind::kUnion, parent, index);
      for (size_t i = 0; i < list.size(); ++i) {
        absl::StatusOr<int> c = Child(list[i], absl::StrCat(Join(path, applicator), "[", i, "]"), id,
                                      static_cast<int>(i), depth + 1);
        if (!c.ok()) return c.status();
        if (*c != kNever) out_.nodes[id].children.push_back(*c);
      }
      if (out_.nodes[id].children.empty()) return kNever;
      return Union(id, path, absl::StrCat("'", applicator, "' alternatives"),
                   /*disjoint=*/std::string(applicator) == "oneOf");
    }
    // A format this compiler does not read is refused whatever the type. A
    // string format holds strings and an integer format (OpenAPI's int32,
    // int64: ranges) integers; either leaves other types alone, as JSON
    // Schema has it.
    if (const auto f = s.find("format");
        f != s.end() && (!f->is_string() || (FormatRegex(f->get<std::string>()) == nullptr &&
                                             IntegerFormatRange(f->get<std::string>()) == nullptr))) {
      return Unsupported(path, absl::StrCat("'format' ", Canonical(*f),
                                            " is not supported (date, time, date-time, duration, uuid, ipv4, "
                                            "ipv6, ipvanyaddress, email, hostname, uri, uri-reference, int32 and "
                                            "int64 are)"));
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
      for (const char* bound : kBoundKeywords) {
        if (s.contains(bound)) {
          return Unsupported(path, absl::StrCat("'", bound, "' beside '", has_enum ? "enum" : "const",
                                                "' is not supported"));
        }
      }
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
    if (types.empty()) {
      // {} (annotations at most): any value, as xgrammar reads it
      // (pydantic's Any). With other keywords but no type, refused.
      for (const auto& [key, value] : s.items()) {
        if (!IsAnnotation(key)) return Unsupported(path, "a schema without 'type', 'enum' or 'const'");
      }
      return Add(SchemaNode::Kind::kAny, parent, index);
    }
    if (types.size() == 1) return Typed(s, types[0], path, parent, index, depth);
    // A list of types: a union of one node per type.
    const int id = Add(SchemaNode::Kind::kUnion, parent, index);
    for (const std::string& type : types) {
      const int mark = static_cast<int>(out_.nodes.size());
      absl::StatusOr<int> c = Typed(s, type, path, id, static_cast<int>(out_.nodes[id].children.size()), depth);
      if (!c.ok()) return c.status();
      if (*c == kNever) {
        Drop(mark);
      } else {
        out_.nodes[id].children.push_back(*c);
      }
    }
    if (out_.nodes[id].children.empty()) return kNever;
    return Union(id, path, "types", /*disjoint=*/false);
  }

 private:
  // Node, with the nodes it added dropped where it gives kNever.
  absl::StatusOr<int> Child(const ojson& s, const std::string& path, int parent, int index, int depth) {
    const int mark = static_cast<int>(out_.nodes.size());
    absl::StatusOr<int> c = Node(s, path, parent, index, depth);
    if (c.ok() && *c == kNever) Drop(mark);
    return c;
  }

  // Drops the nodes from `mark` on (a value left out: the last ones added).
  void Drop(int mark) {
    out_.nodes.resize(mark);
    bounded_arrays_.erase(std::remove_if(bounded_arrays_.begin(), bounded_arrays_.end(),
                                         [&](const auto& a) { return a.first >= mark; }),
                          bounded_arrays_.end());
  }

  // A container that can only be empty: its text as a literal.
  int Empty(const char* text, int parent, int index) {
    const int id = Add(SchemaNode::Kind::kLiterals, parent, index);
    out_.nodes[id].literals = {text};
    return id;
  }

  int Add(SchemaNode::Kind kind, int parent, int index) {
    SchemaNode n;
    n.kind = kind;
    n.parent = parent;
    n.index_in_parent = index;
    out_.nodes.push_back(std::move(n));
    return static_cast<int>(out_.nodes.size()) - 1;
  }

  // A local reference ("#", "#/$defs/Name", any JSON pointer into this
  // schema), read in place of the schema that holds it. A reference back
  // into one being read (a recursive schema) is read again, a copy of its
  // nodes per level, up to the recursion depth; past it, kNever. The
  // acceptor's state is a node of a tree, so recursion is unrolled rather
  // than followed (as outlines unrolls it).
  absl::StatusOr<int> Ref(const ojson& ref, const std::string& path, int parent, int index, int depth) {
    if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) {
      return Unsupported(path, "'$ref' must be a local reference (\"#/$defs/Name\")");
    }
    const std::string pointer = ref.get<std::string>().substr(1);
    const ojson* target = &root_;
    std::string target_path;
    if (!pointer.empty()) {
      if (pointer[0] != '/') return Unsupported(path, absl::StrCat("'$ref' ", Canonical(ref), " is not a JSON pointer"));
      for (const absl::string_view part : absl::StrSplit(absl::string_view(pointer).substr(1), '/')) {
        std::string name = absl::StrReplaceAll(part, {{"~1", "/"}, {"~0", "~"}});
        if (!target->is_object() || !target->contains(name)) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(path), ": '$ref' ", Canonical(ref), " points at nothing in the schema"));
        }
        target = &(*target)[name];
        target_path = Join(target_path, name);
      }
    }
    const int open = static_cast<int>(std::count(expanding_.begin(), expanding_.end(), target));
    if (open > 0) unrolled_ = true;
    if (open >= recursion_depth_) return kNever;
    expanding_.push_back(target);
    absl::StatusOr<int> id = Node(*target, target_path, parent, index, depth + 1);
    expanding_.pop_back();
    return id;
  }

  // Union `id`'s alternatives made deterministic: nested unions flattened,
  // literal alternatives merged, and whatever a sibling already reads
  // (integers under number, a string literal under string) left to it. Then
  // every alternative must begin with different bytes, so the first byte of
  // a value picks its alternative. One alternative left: that node itself.
  // `disjoint` (oneOf): a value two alternatives take is invalid, so any
  // overlap, which the merging would hide, is refused instead.
  absl::StatusOr<int> Union(int id, const std::string& path, const std::string& what, bool disjoint) {
    auto overlap = [&]() {
      return Unsupported(path, absl::StrCat(what, " that overlap are not supported (a value both take is "
                                            "invalid under 'oneOf'; 'anyOf' reads it)"));
    };
    std::vector<int> alts;
    for (int c : out_.nodes[id].children) {
      if (out_.nodes[c].kind == SchemaNode::Kind::kUnion) {
        alts.insert(alts.end(), out_.nodes[c].children.begin(), out_.nodes[c].children.end());
      } else {
        alts.push_back(c);
      }
    }
    auto has_kind = [&](SchemaNode::Kind k) {
      return std::any_of(alts.begin(), alts.end(), [&](int c) { return out_.nodes[c].kind == k; });
    };
    // Any value beside other alternatives reads all of theirs too.
    if (const auto any = std::find_if(alts.begin(), alts.end(),
                                      [&](int c) { return out_.nodes[c].kind == SchemaNode::Kind::kAny; });
        any != alts.end()) {
      if (disjoint && alts.size() > 1) return overlap();
      alts = {*any};
    }
    if (const auto number = std::find_if(alts.begin(), alts.end(),
                                         [&](int c) { return out_.nodes[c].kind == SchemaNode::Kind::kNumber; });
        number != alts.end()) {
      if (disjoint && has_kind(SchemaNode::Kind::kInteger)) return overlap();
      // An integer alternative the number takes whole is left to it; one it
      // does not (a bounded number) stays, and is refused below as
      // beginning like the number.
      const NumberRange range = out_.nodes[*number].range;
      alts.erase(std::remove_if(alts.begin(), alts.end(),
                                [&](int c) {
                                  return out_.nodes[c].kind == SchemaNode::Kind::kInteger &&
                                         NumberReadsIntegers(range, out_.nodes[c].range);
                                }),
                 alts.end());
    }
    int literals = -1;
    std::vector<int> kept;
    for (int c : alts) {
      if (out_.nodes[c].kind != SchemaNode::Kind::kLiterals) {
        kept.push_back(c);
        continue;
      }
      if (literals < 0) {
        literals = c;
        kept.push_back(c);
        continue;
      }
      for (std::string& l : out_.nodes[c].literals) {
        std::vector<std::string>& into = out_.nodes[literals].literals;
        if (std::find(into.begin(), into.end(), l) == into.end()) {
          into.push_back(std::move(l));
        } else if (disjoint) {
          return overlap();
        }
      }
    }
    alts = std::move(kept);
    std::vector<int> objects;
    for (int c : alts) {
      if (out_.nodes[c].kind == SchemaNode::Kind::kObject) objects.push_back(c);
    }
    if (objects.size() > 1) {
      absl::StatusOr<int> tagged = Tagged(id, objects, path, what);
      if (!tagged.ok()) return tagged.status();
      alts.erase(std::remove_if(alts.begin(), alts.end(),
                                [&](int c) { return out_.nodes[c].kind == SchemaNode::Kind::kObject; }),
                 alts.end());
      alts.push_back(*tagged);
    }
    if (literals >= 0) {
      std::vector<std::string>& lits = out_.nodes[literals].literals;
      const size_t before = lits.size();
      lits.erase(std::remove_if(lits.begin(), lits.end(),
                                [&](const std::string& l) {
                                  return std::any_of(alts.begin(), alts.end(), [&](int c) {
                                    return NodeReadsLiteral(out_.nodes[c], l);
                                  });
                                }),
                 lits.end());
      if (disjoint && lits.size() != before) return overlap();
      if (lits.empty()) alts.erase(std::find(alts.begin(), alts.end(), literals));
      if (lits.size() > static_cast<size_t>(kMaxSchemaMembers)) {
        return Unsupported(path, absl::StrCat("more than ", kMaxSchemaMembers, " literal values in ", what));
      }
    }
    std::bitset<256> seen;
    for (int c : alts) {
      const std::bitset<256> first = FirstBytes(out_, c);
      if ((seen & first).any()) {
        int b = 0;
        while (!(seen & first).test(b)) ++b;
        return Unsupported(path, absl::StrCat(what, " that can both begin with ", ByteName(b),
                                              " are not supported (each must begin differently: object, array, "
                                              "string, number, or distinct literals)"));
      }
      seen |= first;
    }
    SchemaNode& u = out_.nodes[id];
    if (alts.size() == 1) {  // the union node stays behind, empty and unreachable
      out_.nodes[alts[0]].parent = u.parent;
      out_.nodes[alts[0]].index_in_parent = u.index_in_parent;
      u.children.clear();
      return alts[0];
    }
    u.children = alts;
    for (size_t i = 0; i < alts.size(); ++i) {
      out_.nodes[alts[i]].parent = id;
      out_.nodes[alts[i]].index_in_parent = static_cast<int>(i);
    }
    return id;
  }

  // Object alternatives of union `id` as one kTagged node, if their first
  // properties tell them apart (see SchemaNode::Kind::kTagged).
  absl::StatusOr<int> Tagged(int id, const std::vector<int>& objects, const std::string& path,
                             const std::string& what) {
    auto refuse = [&](const std::string& why) {
      return Unsupported(path, absl::StrCat(what, " that are objects need a tag (", why,
                                            "): each object's first property required, under the same key in "
                                            "all, a string const or enum that no other has"));
    };
    const int tagged = Add(SchemaNode::Kind::kTagged, id, 0);
    std::vector<std::string> tags;
    for (size_t a = 0; a < objects.size(); ++a) {
      SchemaNode& o = out_.nodes[objects[a]];
      if (o.keys.empty() || !o.required[0]) return refuse("an object without a required first property");
      if (o.keys[0] != out_.nodes[objects[0]].keys[0]) {
        return refuse(absl::StrCat("first properties ", o.keys[0].substr(0, o.keys[0].size() - 2), " and ",
                                   out_.nodes[objects[0]].keys[0].substr(0, out_.nodes[objects[0]].keys[0].size() - 2)));
      }
      const SchemaNode& tag = out_.nodes[o.children[0]];
      if (tag.kind != SchemaNode::Kind::kLiterals ||
          std::any_of(tag.literals.begin(), tag.literals.end(), [](const std::string& l) { return l[0] != '"'; })) {
        return refuse(absl::StrCat("the first property ", o.keys[0].substr(0, o.keys[0].size() - 2),
                                   " is not a string const or enum"));
      }
      for (const std::string& value : tag.literals) {
        if (std::find(tags.begin(), tags.end(), value) != tags.end()) {
          return refuse(absl::StrCat("two objects share the tag ", value));
        }
        tags.push_back(value);
        out_.nodes[tagged].literals.push_back(absl::StrCat("{", o.keys[0], value));
        out_.nodes[tagged].literal_owner.push_back(static_cast<int>(a));
      }
      o.parent = tagged;
      o.index_in_parent = static_cast<int>(a);
      out_.nodes[tagged].children.push_back(objects[a]);
    }
    if (tags.size() > static_cast<size_t>(kMaxSchemaMembers)) {
      return Unsupported(path, absl::StrCat("more than ", kMaxSchemaMembers, " tags in ", what));
    }
    return tagged;
  }

  // minLength / maxLength beside a pattern: a bound every match meets is
  // dropped (pydantic's HttpUrl has minLength 1); one no match meets is
  // refused; both at once only where the pattern's lengths have no gaps
  // (RegexDfa::lengths_are_intervals), so the reader's checks stay exact.
  // Characters are counted as written: in email's quoted local part an
  // escape (\" or \\) counts as two, which can only refuse a string at the
  // bound, never let a longer one through.
  absl::Status PatternLengths(const RegexDfa& dfa, const char* keyword, const std::string& path, SchemaNode& n) {
    const int shortest = dfa.min_chars[dfa.start], longest = dfa.max_chars[dfa.start];  // longest -1: no bound
    if (n.max_length >= 0 && n.max_length < shortest) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": 'maxLength' ", n.max_length,
                                                     ": no string of the '", keyword,
                                                     "' is that short (the shortest has ", shortest, " characters)"));
    }
    if (longest >= 0 && n.min_length > longest) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": 'minLength' ", n.min_length,
                                                     ": no string of the '", keyword,
                                                     "' is that long (the longest has ", longest, " characters)"));
    }
    if (n.min_length <= shortest) n.min_length = 0;
    if (longest >= 0 && n.max_length >= longest) n.max_length = -1;
    if (n.min_length > 0 && n.max_length >= 0 && !dfa.lengths_are_intervals) {
      return Unsupported(path, absl::StrCat("'minLength' with 'maxLength' beside this '", keyword,
                                            "' (its strings' lengths have gaps) is not supported"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int> Typed(const ojson& s, const std::string& type, const std::string& path, int parent, int index,
                            int depth) {
    if (static_cast<int>(out_.nodes.size()) >= kMaxSchemaNodes) {
      return absl::InvalidArgumentError(absl::StrCat("schema: more than ", kMaxSchemaNodes, " nodes"));
    }
    if (type == "string") {
      absl::StatusOr<std::pair<int, int>> length = CountBounds(s, "minLength", "maxLength", path);
      if (!length.ok()) return length.status();
      const int id = Add(SchemaNode::Kind::kString, parent, index);
      std::tie(out_.nodes[id].min_length, out_.nodes[id].max_length) = *length;
      // A format is a pattern of its own (the regexes xgrammar uses for
      // them, checked against it document by document).
      std::string pattern;
      bool escaped = false;
      const char* keyword = nullptr;
      if (const auto p = s.find("pattern"); p != s.end()) {
        if (!p->is_string()) return Unsupported(path, "'pattern' must be a string");
        pattern = p->get<std::string>();
        keyword = "pattern";
      }
      const auto f = s.find("format");
      if (const FormatPattern* format = f != s.end() ? FormatRegex(f->get<std::string>()) : nullptr) {
        if (keyword != nullptr) return Unsupported(path, "'format' beside 'pattern' is not supported");
        pattern = format->regex;
        escaped = format->escaped;
        keyword = "format";
      }
      if (keyword != nullptr) {
        // One automaton per distinct pattern: a format or a definition used
        // by many fields is compiled and counted once.
        std::shared_ptr<const RegexDfa>& shared = automata_[{pattern, escaped}];
        if (shared == nullptr) {
          absl::StatusOr<RegexDfa> dfa =
              escaped ? CompileEscapedJsonStringRegex(pattern) : CompileJsonStringRegex(pattern);
          if (!dfa.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat(Where(path), ": 'pattern' ", Canonical(ojson(pattern)), ": ", dfa.status().message()));
          }
          out_.pattern_bytes += dfa->bytes();
          if (out_.pattern_bytes > kMaxSchemaPatternBytes) {
            return Unsupported(path, absl::StrCat("'", keyword, "': the schema's patterns need ", out_.pattern_bytes,
                                                  " bytes of automata, more than ", kMaxSchemaPatternBytes));
          }
          shared = std::make_shared<const RegexDfa>(std::move(*dfa));
        }
        out_.nodes[id].pattern = shared;
        absl::Status lengths = PatternLengths(*shared, keyword, path, out_.nodes[id]);
        if (!lengths.ok()) return lengths;
      }
      return id;
    }
    if (type == "number" || type == "integer") {
      const int id = Add(type == "number" ? SchemaNode::Kind::kNumber : SchemaNode::Kind::kInteger, parent, index);
      return ValueBounds(s, path, id);
    }
    if (type == "boolean" || type == "null") {
      const int id = Add(SchemaNode::Kind::kLiterals, parent, index);
      out_.nodes[id].literals = type == "null" ? std::vector<std::string>{"null"}
                                               : std::vector<std::string>{"true", "false"};
      return id;
    }
    if (type == "array") return Array(s, path, parent, index, depth);
    // object
    const auto props = s.find("properties");
    const auto extra = s.find("additionalProperties");
    const bool no_properties = props == s.end() || (props->is_object() && props->empty());
    const bool extra_false = extra != s.end() && extra->is_boolean() && !extra->get<bool>();
    // Keys of its own choosing: additionalProperties true or a schema with
    // no properties beside (pydantic's dict[str, X]), and an object with
    // neither (xgrammar reads {"type": "object"} as any object).
    if (no_properties && !extra_false && (extra != s.end() || props == s.end()) && !s.contains("required")) {
      const int id = Add(SchemaNode::Kind::kMap, parent, index);
      if (extra == s.end() || extra->is_boolean()) {
        const int any = Add(SchemaNode::Kind::kAny, id, 0);  // before indexing: Add may move the nodes
        out_.nodes[id].children.push_back(any);
        return id;
      }
      absl::StatusOr<int> child = Child(*extra, Join(path, "additionalProperties"), id, 0, depth + 1);
      if (!child.ok()) return child.status();
      if (*child == kNever) {  // values past the recursion depth: only "{}"
        Drop(id);
        return Empty("{}", parent, index);
      }
      out_.nodes[id].children.push_back(*child);
      return id;
    }
    if (extra != s.end() && !extra->is_boolean() && !extra->is_object()) {
      return Unsupported(path, "'additionalProperties' must be a schema or a boolean");
    }
    const int id = Add(SchemaNode::Kind::kObject, parent, index);
    if (props != s.end()) {
      if (!props->is_object()) return Unsupported(path, "'properties' must be an object");
      if (props->size() > static_cast<size_t>(kMaxSchemaMembers)) {
        return Unsupported(path, absl::StrCat("more than ", kMaxSchemaMembers, " properties"));
      }
    }
    std::set<std::string> required;
    if (const auto req = s.find("required"); req != s.end()) {
      if (!req->is_array()) return Unsupported(path, "'required' must be a list of property names");
      for (const ojson& r : *req) {
        if (!r.is_string() || props == s.end() || !props->contains(r.get<std::string>())) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(path), ": required ", Canonical(r), " is not one of its properties"));
        }
        required.insert(r.get<std::string>());
      }
    }
    if (props == s.end()) return id;
    for (const auto& [name, sub] : props->items()) {
      const int k = static_cast<int>(out_.nodes[id].keys.size());
      absl::StatusOr<int> child = Child(sub, Join(path, absl::StrCat("properties.", name)), id, k, depth + 1);
      if (!child.ok()) return child.status();
      // Past the recursion depth: an optional property is left out; a
      // required one leaves the object without an instance.
      if (*child == kNever) {
        if (required.count(name) > 0) return kNever;
        continue;
      }
      out_.nodes[id].keys.push_back(Canonical(ojson(name)) + ": ");
      out_.nodes[id].required.push_back(required.count(name) > 0);
      out_.nodes[id].children.push_back(*child);
    }
    // additionalProperties true or a schema beside properties: keys of its
    // own choosing after the declared ones (as xgrammar orders them), their
    // values its last child.
    if (extra != s.end() && !extra_false) {
      const int k = static_cast<int>(out_.nodes[id].keys.size());
      if (k > kMaxPropertiesBesideExtra) {
        return Unsupported(path, absl::StrCat("more than ", kMaxPropertiesBesideExtra,
                                              " properties beside 'additionalProperties'"));
      }
      absl::StatusOr<int> child = extra->is_boolean() ? absl::StatusOr<int>(Add(SchemaNode::Kind::kAny, id, k))
                                                      : Child(*extra, Join(path, "additionalProperties"), id, k,
                                                              depth + 1);
      if (!child.ok()) return child.status();
      if (*child != kNever) {  // past the recursion depth: the declared keys only
        out_.nodes[id].children.push_back(*child);
        out_.nodes[id].has_extra = true;
      }
    }
    return id;
  }

  // An array: its items (any value where "items" is absent and no count is
  // bounded, as xgrammar reads it), or a tuple: "prefixItems", one schema
  // for each leading position, then "items" for the rest (none where absent
  // or false), as pydantic writes tuple[X, Y].
  absl::StatusOr<int> Array(const ojson& s, const std::string& path, int parent, int index, int depth) {
    absl::StatusOr<std::pair<int, int>> items_count = CountBounds(s, "minItems", "maxItems", path);
    if (!items_count.ok()) return items_count.status();
    auto [min_items, max_items] = *items_count;
    const auto items = s.find("items");
    const auto prefix = s.find("prefixItems");
    if (prefix != s.end() && (!prefix->is_array() || prefix->size() > static_cast<size_t>(kMaxSchemaMembers))) {
      return Unsupported(path, absl::StrCat("'prefixItems' must be a list of at most ", kMaxSchemaMembers, " schemas"));
    }
    if (items != s.end() && !items->is_object() && !(items->is_boolean() && !items->get<bool>())) {
      return Unsupported(path, "'items' must be a schema or false");
    }
    if (items == s.end() && prefix == s.end() && (min_items > 0 || max_items >= 0)) {
      // xgrammar reads counts without items as an empty array.
      if (min_items > 0) return Unsupported(path, "'minItems' without 'items' is not supported");
      return Empty("[]", parent, index);
    }
    const int id = Add(SchemaNode::Kind::kArray, parent, index);
    // Listed before the arrays inside it, so a refusal names the outermost.
    bounded_arrays_.push_back({id, path});
    int positions = 0;
    if (prefix != s.end()) {
      for (size_t i = 0; i < prefix->size(); ++i) {
        absl::StatusOr<int> child =
            Child((*prefix)[i], absl::StrCat(Join(path, "prefixItems"), "[", i, "]"), id, static_cast<int>(i), depth + 1);
        if (!child.ok()) return child.status();
        if (*child == kNever) {  // past the recursion depth: the tuple ends before it
          if (static_cast<int>(i) < min_items) return kNever;
          max_items = static_cast<int>(i);
          break;
        }
        out_.nodes[id].children.push_back(*child);
        ++positions;
      }
    }
    bool rest = positions == static_cast<int>(prefix == s.end() ? 0 : prefix->size()) &&
                (prefix == s.end() || (items != s.end() && items->is_object()));
    if (rest) {
      const int k = positions;
      absl::StatusOr<int> child = items == s.end() ? absl::StatusOr<int>(Add(SchemaNode::Kind::kAny, id, k))
                                                   : Child(*items, Join(path, "items"), id, k, depth + 1);
      if (!child.ok()) return child.status();
      if (*child == kNever) {  // items past the recursion depth: none beyond the prefix
        rest = false;
      } else {
        out_.nodes[id].children.push_back(*child);
      }
    }
    if (!rest) max_items = max_items < 0 ? positions : std::min(max_items, positions);
    if (min_items > max_items && max_items >= 0) {
      if (positions == 0 && prefix == s.end()) return kNever;  // items past the recursion depth, some required
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": 'minItems' ", min_items, " is more than the ",
                                                     max_items, " items the tuple can hold"));
    }
    SchemaNode& a = out_.nodes[id];
    a.min_items = min_items;
    a.max_items = max_items;
    a.prefix_items = positions;
    if (max_items == 0) {  // only "[]" (a tuple of none, or items past the recursion depth)
      Drop(id);
      return Empty("[]", parent, index);
    }
    // A tuple without rest items counts by position; other bounded arrays
    // take one of the acceptor's count slots.
    if (!rest) {
      bounded_arrays_.erase(std::find_if(bounded_arrays_.begin(), bounded_arrays_.end(),
                                         [&](const auto& b) { return b.first == id; }));
    }
    return id;
  }

  // A count keyword (minLength, maxItems, ...): a whole number from 0 to
  // kMaxSchemaCount, or `absent`.
  static absl::StatusOr<int> Count(const ojson& s, const char* key, int absent, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return absent;
    if (!it->is_number() || it->get<double>() < 0 || it->get<double>() != std::floor(it->get<double>())) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": '", key, "' must be a whole number >= 0"));
    }
    if (it->get<double>() > kMaxSchemaCount) {
      return Unsupported(path, absl::StrCat("'", key, "' above ", kMaxSchemaCount, " is not supported"));
    }
    return static_cast<int>(it->get<double>());
  }

  // A pair of count keywords (minLength / maxLength, minItems / maxItems):
  // {min, max}, min 0 and max -1 where absent.
  static absl::StatusOr<std::pair<int, int>> CountBounds(const ojson& s, const char* min_key, const char* max_key,
                                                         const std::string& path) {
    absl::StatusOr<int> min = Count(s, min_key, 0, path), max = Count(s, max_key, -1, path);
    if (!min.ok()) return min.status();
    if (!max.ok()) return max.status();
    if (*max >= 0 && *min > *max) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(path), ": '", min_key, "' ", *min, " is above '", max_key, "' ", *max));
    }
    return std::make_pair(*min, *max);
  }

  // Integer or number node `id`'s bounds from minimum, maximum and the
  // exclusive ones, rounded inwards to its units (number_range.h). A bound
  // is read from its JSON text (a double's shortest text, as Python writes
  // it): 0.1 is one tenth, not the double nearest it.
  absl::StatusOr<int> ValueBounds(const ojson& s, const std::string& path, int id) {
    NumberRange& r = out_.nodes[id].range;
    r.decimal = out_.nodes[id].kind == SchemaNode::Kind::kNumber;
    const char* what = r.decimal ? "number" : "integer";
    const __int128 lowest = r.decimal ? -__int128{kMaxNumberBound} * kNumberGridUnit
                                      : __int128{std::numeric_limits<int64_t>::min()};
    const __int128 highest = r.decimal ? __int128{kMaxNumberBound} * kNumberGridUnit
                                       : __int128{std::numeric_limits<int64_t>::max()};
    __int128 lo = lowest, hi = highest;
    for (const std::string key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_number()) return Unsupported(path, absl::StrCat("'", key, "' must be a number"));
      const bool lower = key == "minimum" || key == "exclusiveMinimum";
      std::string text;
      if (it->is_number_float()) {
        char buffer[32];
        const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, it->get<double>());
        text.assign(buffer, ec == std::errc() ? end : buffer);
      } else {
        text = it->dump();
      }
      const int scale = r.decimal ? kMaxFractionDigits : 0;
      const std::optional<__int128> down = ScaledDecimal(text, scale, false), up = ScaledDecimal(text, scale, true);
      // The first unit within the bound: an exclusive bound on a unit steps
      // past it, one between units rounds inwards as an inclusive one does.
      std::optional<__int128> bound;
      if (down.has_value() && up.has_value()) {
        if (key == "minimum") bound = *up;
        if (key == "exclusiveMinimum") bound = *down + 1;
        if (key == "maximum") bound = *down;
        if (key == "exclusiveMaximum") bound = *up - 1;
      }
      if (!bound.has_value() || *bound > highest || *bound < lowest) {
        return Unsupported(path, absl::StrCat("'", key, "' ", text,
                                              r.decimal ? " of a number beyond ±10^12" : " outside 64-bit integers",
                                              " is not supported"));
      }
      if (lower) {
        lo = std::max(lo, *bound);
        r.has_min = true;
        // A '-' may begin the text only below a negative lower bound; -1e-9
        // rounds to zero on the grid and still lets "-0.0" through, as in
        // xgrammar.
        r.negative_sign = r.negative_sign && text[0] == '-' && text.find_first_of("123456789") < text.find_first_of("eE");
      } else {
        hi = std::min(hi, *bound);
        r.has_max = true;
      }
    }
    if (const auto f = s.find("format"); f != s.end() && !r.decimal) {
      if (const std::pair<int64_t, int64_t>* range = IntegerFormatRange(f->get<std::string>())) {
        lo = std::max(lo, __int128{range->first});
        hi = std::min(hi, __int128{range->second});
        r.has_min = r.has_max = true;
        r.negative_sign = r.negative_sign && lo < 0;
      }
    }
    if (!r.decimal && r.has_min) r.negative_sign = lo < 0;
    if (lo > hi) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": no ", what, " lies within its bounds (",
                                                     UnitsText(lo, r.decimal), " to ", UnitsText(hi, r.decimal),
                                                     r.decimal ? ", with at most 6 fractional digits)" : ")"));
    }
    r.min = static_cast<int64_t>(lo);
    r.max = static_cast<int64_t>(hi);
    return id;
  }

 public:
  // Each bounded array's count slot: how many bounded arrays hold it.
  absl::Status AssignCountSlots() {
    for (const auto& [id, path] : bounded_arrays_) {
      SchemaNode& a = out_.nodes[id];
      if (a.min_items == 0 && a.max_items < 0) continue;
      int slot = 0;
      for (int p = a.parent; p >= 0; p = out_.nodes[p].parent) {
        const SchemaNode& up = out_.nodes[p];
        slot += up.kind == SchemaNode::Kind::kArray && (up.min_items > 0 || up.max_items >= 0);
      }
      if (slot >= kMaxBoundedArrayDepth) {
        return Unsupported(path, absl::StrCat("'minItems'/'maxItems' on arrays nested more than ",
                                              kMaxBoundedArrayDepth, " deep are not supported"));
      }
      a.count_slot = slot;
    }
    return absl::OkStatus();
  }

 private:
  CompiledJsonSchema& out_;
  const ojson& root_;
  const int recursion_depth_;
  std::vector<std::pair<int, std::string>> bounded_arrays_;  // every array node and its path
  std::map<std::pair<std::string, bool>, std::shared_ptr<const RegexDfa>> automata_;  // by pattern, escaped
  std::vector<const ojson*> expanding_;  // the schemas being read (the root, $ref targets), innermost last
  bool unrolled_ = false;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileJsonSchema(std::string_view schema_json) {
  if (schema_json.size() > kMaxSchemaBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema: ", schema_json.size(), " bytes, at most ", kMaxSchemaBytes));
  }
  const ojson schema = ojson::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return absl::InvalidArgumentError("schema: not valid JSON");
  const absl::Status not_object = absl::InvalidArgumentError(
      "schema: the top level must be an object or an array ({\"type\": \"object\", ...})");
  if (!schema.is_object()) return not_object;
  // A recursive schema is unrolled as deep as it fits the limits on nodes,
  // nesting and bounded arrays, from kMaxRecursionDepth down to 2 levels.
  absl::Status last;
  for (int depth = kMaxRecursionDepth; depth >= 2; --depth) {
    auto out = std::make_shared<CompiledJsonSchema>();
    Compiler compiler(*out, schema, depth);
    absl::StatusOr<int> root = compiler.Node(schema, "", -1, 0, 0);
    absl::Status status = root.status();
    if (root.ok() && *root == kNever) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schema: no value of it ends within ", depth,
          " levels of recursion (a recursive '$ref' is required at every level, or its arrays need items)"));
    }
    if (root.ok()) {
      // Containers only: their last byte ends the answer, where a number's
      // end would need the end of output to read.
      const SchemaNode::Kind top = out->nodes[*root].kind;
      if (top != SchemaNode::Kind::kObject && top != SchemaNode::Kind::kArray && top != SchemaNode::Kind::kTagged &&
          top != SchemaNode::Kind::kMap) {
        return not_object;
      }
      status = compiler.AssignCountSlots();
      if (status.ok()) {
        out->root = *root;
        out->recursion_depth = compiler.unrolled() ? depth : 0;
        return std::shared_ptr<const CompiledJsonSchema>(std::move(out));
      }
    }
    if (!compiler.unrolled()) return status;
    last = absl::Status(status.code(), absl::StrCat(status.message(), " (its recursive references unrolled to ",
                                                    depth, " levels)"));
  }
  return last;
}

absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileRegexConstraint(std::string_view regex) {
  absl::StatusOr<RegexDfa> dfa = CompileTextRegex(regex);
  if (!dfa.ok()) return absl::InvalidArgumentError(absl::StrCat("regex: ", dfa.status().message()));
  auto out = std::make_shared<CompiledJsonSchema>();
  SchemaNode n;
  n.kind = SchemaNode::Kind::kText;
  out->pattern_bytes = dfa->bytes();
  if (out->pattern_bytes > kMaxSchemaPatternBytes) {
    return absl::InvalidArgumentError(absl::StrCat("regex: its automaton needs ", out->pattern_bytes,
                                                   " bytes, more than ", kMaxSchemaPatternBytes));
  }
  n.pattern = std::make_shared<const RegexDfa>(*std::move(dfa));
  out->nodes.push_back(std::move(n));
  return std::shared_ptr<const CompiledJsonSchema>(std::move(out));
}

}  // namespace attnserve
