// JSON schema mode (OpenAI's response_format {"type": "json_schema"}, vLLM's
// guided_json): the output is one JSON value that a schema accepts, written
// the one way xgrammar writes it when whitespace is not free
// (compile_json_schema(any_whitespace=False)) and Python's json.dumps writes
// it: ", " between items and members, ": " after a key, no other
// whitespace, the object's properties in the schema's order (a property not
// in "required" may be left out), no properties beyond the schema's. The
// top level must be an object (as OpenAI requires) or an array (vLLM's
// schema for tool_choice "required").
//
// Supported keywords (anything else is refused at compile time, naming the
// keyword and where it is, so a constraint is never silently dropped):
//   type (one type or a list of them), properties, required,
//   additionalProperties (false, or absent: taken as false, beside
//   properties; true or a schema: keys of the output's own choosing after
//   the declared ones, never a declared name, whose values follow it;
//   {"type": "object"} alone is any object, as xgrammar reads it), {} (any value, in json.dumps' form, nested up to
//   64 deep), items (absent: any items, or with a count bound only []),
//   prefixItems (a tuple: a schema per leading position, then items for
//   the rest, none where absent or false; counted by position),
//   enum and const (of strings, numbers, booleans and null);
//   $ref to a JSON pointer inside the schema ("#/$defs/Name", as pydantic
//   and the openai client write nested models), recursive ones unrolled
//   kMaxRecursionDepth levels deep (fewer where the schema's nodes would
//   pass kMaxSchemaNodes; a value nested deeper is refused, where xgrammar
//   follows recursion without end);
//   anyOf and oneOf whose alternatives begin with different bytes (object,
//   array, string, number, or distinct literals: pydantic's Optional[X] is
//   anyOf [X, null]), so the first byte picks the alternative and "one of"
//   equals "any of"; objects among the alternatives may share the "{" when
//   they form a tagged union (each one's first property required, under the
//   same key in all, a string const or enum no other one has: OpenAI's
//   tool calls, pydantic's discriminated unions); allOf of a single schema;
//   minLength / maxLength of strings (in characters; such a string is
//   written without escapes, as xgrammar writes it), minItems / maxItems of
//   arrays (at most 3 bounded arrays nested), minimum, maximum,
//   exclusiveMinimum and exclusiveMaximum of integers and numbers (counts
//   and lengths up to 65535; an integer's bounds within 64-bit integers, a
//   number's within ±10^12; not beside enum or const; a bounded number is
//   written as xgrammar writes one, without an exponent and with at most
//   six fractional digits: number_range.h);
//   pattern (the string's text matches it whole, as xgrammar reads a
//   pattern, and is written without escapes; the syntax in regex_dfa.h;
//   not beside enum or const); format date, time, date-time, duration,
//   uuid, ipv4, ipv6, email, hostname, uri and uri-reference, read as the
//   patterns xgrammar uses, pydantic's ipvanyaddress, and OpenAPI's int32
//   and int64 as integer ranges (any other format is refused, whatever the
//   type; a format leaves values of other types alone); minLength /
//   maxLength beside a pattern
//   or format (exact: a bound every match meets is dropped, one none meets
//   refused, both at once only without gaps in the match lengths);
//   the annotations title, description, $schema, $id, $comment, default,
//   examples, deprecated, readOnly, writeOnly, $defs and definitions.
// Integers are "0" or an optional "-" then [1-9][0-9]* (as xgrammar).
//
// CompileJsonSchema (json_schema_compile.cc) builds a tree of nodes;
// JsonSchemaAcceptor (json_schema.cc) reads the output a byte at a time
// against it. Because the schema is a tree, the node being read and its
// phase determine everything above it (the object a value belongs to
// resumes after that value's property), so the state is a small value that
// SortedVocabulary::Walk can copy per byte.
#ifndef ATTNSERVE_ENGINE_SAMPLING_JSON_SCHEMA_H_
#define ATTNSERVE_ENGINE_SAMPLING_JSON_SCHEMA_H_

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sampling/json_lexer.h"
#include "engine/sampling/number_range.h"
#include "engine/sampling/regex_dfa.h"

namespace attnserve {

inline constexpr int kMaxSchemaNodes = 1024;
inline constexpr int kMaxSchemaDepth = 32;
// A recursive $ref is unrolled this many levels deep where the limits allow,
// else fewer (at least 2).
inline constexpr int kMaxRecursionDepth = 8;
inline constexpr int kMaxSchemaMembers = 63;  // properties of an object, values of an enum
// Properties of an object that also takes keys of its own choosing
// (additionalProperties): one candidate bit fewer.
inline constexpr int kMaxPropertiesBesideExtra = 62;
inline constexpr size_t kMaxSchemaBytes = 64 * 1024;
inline constexpr int kMaxBoundedArrayDepth = 3;  // arrays with minItems/maxItems inside one another
inline constexpr int kMaxSchemaCount = 65535;    // minLength, maxLength, minItems, maxItems
// The tables of a schema's pattern automata, all of its patterns together.
inline constexpr int64_t kMaxSchemaPatternBytes = 64 * 1024;

struct SchemaNode {
  // kTagged: objects told apart by their first property (a tag), as in a
  // discriminated union: its literals are each alternative's opening text
  // through its tag value ("{\"type\": \"dog\""), read like kLiterals.
  // kText: a whole output held to a regex (CompileRegexConstraint), the
  // only node of its "schema".
  // kAny: any JSON value (the schema {}), in json.dumps' form. kMap: an
  // object of any keys whose values are its child (additionalProperties
  // with no properties: pydantic's dict[str, X]; {"type": "object"} alone is
  // one of kAny values).
  enum class Kind : uint8_t { kObject, kArray, kString, kNumber, kInteger, kLiterals, kUnion, kTagged, kText, kAny, kMap };
  Kind kind = Kind::kString;
  int parent = -1;
  int index_in_parent = 0;  // which property (object parent) or alternative (union parent)
  // kObject: each property's text from the quote to ": " ("\"name\": "),
  // its value's node and whether it is required.
  std::vector<std::string> keys;
  // kObject: whether keys of its own choosing may follow the declared ones
  // (additionalProperties true or a schema beside properties); their
  // values' node is the last child, after one per key.
  bool has_extra = false;
  // kObject: one per key; kArray: the items; kUnion, kTagged: the alternatives.
  std::vector<int> children;
  std::vector<bool> required;
  // kString: length bounds in characters (code points); max -1: none. Or
  // a pattern its text must match whole (regex_dfa.h); kText: the regex.
  int min_length = 0, max_length = -1;
  std::shared_ptr<const RegexDfa> pattern;
  // kArray: item count bounds (max -1: none), and which of the acceptor's
  // count slots holds its count (the number of bounded arrays above it; -1
  // when unbounded, or a tuple counted by position). A tuple's first
  // `prefix_items` children are its positions' schemas; the child after
  // them, if any, is the rest's (an array's only child is its items').
  int min_items = 0, max_items = -1, count_slot = -1, prefix_items = 0;
  // kInteger, kNumber: bounds, where it has them (number_range.h).
  NumberRange range;
  // kLiterals (enum, const, boolean, null): each value as json.dumps writes it.
  // kTagged: each alternative's opening text through one of its tag values,
  // and which alternative (index into children) it opens.
  std::vector<std::string> literals;
  std::vector<int> literal_owner;
};

struct CompiledJsonSchema {
  std::vector<SchemaNode> nodes;  // some may be unreachable (alternatives merged into a sibling)
  int root = 0;                   // the top-level object
  int64_t pattern_bytes = 0;      // its pattern automata (RegexDfa::bytes), at most kMaxSchemaPatternBytes
  // A recursive schema: how many levels deep it was unrolled (0: not
  // recursive). A value nested deeper is refused.
  int recursion_depth = 0;
};

// The schema's JSON text. INVALID_ARGUMENT names what is unsupported and
// where ("properties.age: 'minimum' is not supported ...").
absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileJsonSchema(std::string_view schema_json);

// A whole output held to a regex (vLLM's guided_regex, TGI's regex grammar;
// the syntax in regex_dfa.h, over any text): a "schema" of one kText node,
// read by JsonSchemaAcceptor like the others, so the engine's per-schema
// mask cache serves it as well.
absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileRegexConstraint(std::string_view regex);

class JsonSchemaAcceptor {
 public:
  explicit JsonSchemaAcceptor(const CompiledJsonSchema* schema);

  // False: no text the schema accepts continues with this byte (the state is
  // then unusable; callers test on a copy).
  bool Feed(uint8_t byte);
  // The output is whole: the end of output may follow.
  bool complete() const;
  // Some byte may follow (after a whole JSON value none can; after a regex
  // match, more may).
  bool can_continue() const;

  // Equal only when every byte string of at most `horizon` bytes gets the
  // same answer (for caching token masks: the horizon is the longest
  // token; the schema itself is not part of the key). Inside a string with
  // a maxLength, a length that no `horizon` bytes can take to the bound
  // counts as far, so a long bound does not make every length a new mask;
  // a bounded number whose bounds refuse nothing more (its fractional
  // digits well inside the range) keys without its value. With no horizon
  // (the default) neither is merged: a key per length and per value.
  using Key = std::array<uint64_t, 4>;
  Key StateKey(int horizon = std::numeric_limits<int>::max()) const;

 private:
  enum class Phase : uint8_t {
    kStart,       // node_'s value not begun
    kMembers,     // in node_ (an object) between members: matching the candidate texts
    kArrayOpen,   // after node_'s "["
    kAfterItem,   // after an item of node_: ", " or "]"
    kString,      // inside a string value (string_)
    kNumber,      // inside a number (number_)
    kLiteral,     // matching node_'s literals (cand_, offset_)
    kText,        // a kText node's regex (its DFA state in cand_)
    kAny,         // inside a kAny value (FeedAny)
    kMapNext,     // in node_ (a kMap) after "{" or a value: a key, ", " or "}" (offset_)
    kMapKey,      // inside a kMap's key (string_)
    kMapColon,    // after a kMap's key: ": " (offset_)
    kDone,
  };
  // kAny: the mode (flags_'s low 4 bits), kAnyBit (a string being read is
  // a key; ':' or ',' read, the space next), a literal's index (bits 5-6);
  // cand_ the open containers (bit d: level d + 1 is an object); offset_
  // the depth (low byte) and a literal's letters matched (high byte).
  enum AnyMode : uint8_t {
    kAnyValue, kAnyObjectOpen, kAnyKey, kAnyColon, kAnyArrayOpen, kAnyAfter, kAnyString, kAnyNumber, kAnyLiteral
  };
  static constexpr uint8_t kAnyModeMask = 15, kAnyBit = 16, kAnyLiteralShift = 5;
  static constexpr int kMaxAnyDepth = 64;
  bool FeedAny(uint8_t byte);
  bool AnyStart(uint8_t byte);  // a value's first byte
  bool AnyValueDone();          // a value ended: the container goes on, or the kAny node ends
  int AnyDepth() const { return offset_ & 0xFF; }
  bool AnyInObject() const { return AnyDepth() > 0 && ((cand_ >> (AnyDepth() - 1)) & 1u) != 0; }
  void SetAnyMode(uint8_t mode) { flags_ = mode; }

  const SchemaNode& node() const { return schema_->nodes[node_]; }
  bool StartValue(uint8_t byte);
  bool EndValue();                 // node_'s value is whole: resume its parent
  void EnterMembers(int next, bool written);
  bool FeedMembers(uint8_t byte);
  bool FeedLiteral(uint8_t byte);
  bool FeedString(uint8_t byte);
  uint16_t& ItemCount() { return items_[node().count_slot]; }
  // Byte k of member candidate j of the current object (-1 past its end);
  // j == kCloseBrace is "}".
  int MemberByte(int j, int k) const;

  static constexpr int kCloseBrace = 63;
  static constexpr int kFreeKey = kMaxPropertiesBesideExtra;  // a key of its own choosing (additionalProperties)
  // The members that may come at this point: declared keys from the next
  // through the next required one, "}", a free key.
  uint64_t AllowedMembers() const;

  // The state is copied for every byte of every token a mask walk tries,
  // so it is kept to 32 bytes: past that GCC copies it through memory and a
  // first (uncached) walk took 2.4 times as long (a schema's first request,
  // docs/benchmarks.md). Hence fields that serve two phases, and the union.
  const CompiledJsonSchema* schema_;
  // kMembers / kLiteral: candidates still matching; kNumber of a bounded
  // integer or number: its value so far (number_range.h); kString with a
  // pattern: the pattern's DFA state.
  uint64_t cand_ = 0;
  uint16_t node_;
  // kMembers / kLiteral / kAfterItem: bytes matched; kString of a bounded
  // string: characters so far (saturating).
  uint16_t offset_ = 0;
  Phase phase_ = Phase::kStart;
  // kMembers: the first property still to come (kNextMask) and kWritten (a
  // member was written: the next needs ", "); kNumber of a bounded integer
  // or number: number_range.h's flags.
  uint8_t flags_ = 0;
  static constexpr uint8_t kNextMask = 63, kWritten = 64;
  union Lexer {  // kString: string; kNumber: number
    Lexer() : string() {}
    JsonStringLexer string;
    JsonNumberLexer number;
  } lexer_;
  // Items written so far in each bounded array open above (slot = the
  // array's count_slot; 0 when not open), saturating at the bound that
  // decides ("," needs fewer than the maximum, "]" at least the minimum).
  std::array<uint16_t, kMaxBoundedArrayDepth> items_{};
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_JSON_SCHEMA_H_
