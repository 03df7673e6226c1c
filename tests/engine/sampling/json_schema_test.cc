// JSON schema mode: JsonSchemaAcceptor agrees with xgrammar's JSON-schema
// grammar on every document of tests/golden/json/schema_documents.json
// (its verdict, and the byte where it first refuses)
// (tools/golden/json_schema_documents.py), and CompileJsonSchema refuses what
// it does not implement, naming the keyword and where it is.
#include "engine/sampling/json_schema.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

// How many of doc's first bytes the acceptor takes before it refuses one.
size_t BytesRead(const CompiledJsonSchema& schema, const std::string& doc) {
  JsonSchemaAcceptor a(&schema);
  for (size_t i = 0; i < doc.size(); ++i) {
    if (!a.Feed(static_cast<uint8_t>(doc[i]))) return i;
  }
  return doc.size();
}

bool Takes(const CompiledJsonSchema& schema, const std::string& doc) {
  JsonSchemaAcceptor a(&schema);
  for (char c : doc) {
    if (!a.Feed(static_cast<uint8_t>(c))) return false;
  }
  return a.complete();
}

TEST(JsonSchemaTest, AgreesWithXgrammarOnEveryDocument) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/json/schema_documents.json");
  // ordered: a schema's property order is the output's.
  const nlohmann::ordered_json golden = nlohmann::ordered_json::parse(in);
  ASSERT_GE(golden["cases"].size(), 5u);
  int taken = 0, refused = 0;
  for (const nlohmann::ordered_json& c : golden["cases"]) {
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(c["schema"].dump());
    ASSERT_TRUE(schema.ok()) << schema.status() << c["schema"].dump();
    for (const nlohmann::ordered_json& d : c["documents"]) {
      std::string doc;
      ASSERT_TRUE(absl::HexStringToBytes(d["hex"].get<std::string>(), &doc));
      const bool want = d["accepted"];
      EXPECT_EQ(Takes(**schema, doc), want) << c["schema"].dump() << "\n" << absl::CEscape(doc);
      // Refused at the same byte: a byte is taken only if some document
      // goes on from it, so a token mask never leads into a dead end.
      EXPECT_EQ(BytesRead(**schema, doc), d["prefix"].get<size_t>())
          << c["schema"].dump() << "\n" << absl::CEscape(doc);
      (want ? taken : refused) += 1;
    }
  }
  EXPECT_GT(taken, 300);
  EXPECT_GT(refused, 2000);
}

TEST(JsonSchemaTest, EveryPrefixOfATakenDocumentStaysOpen) {
  auto schema = CompileJsonSchema(R"({"type": "object", "properties": {"n": {"enum": [1, 10, 100]},
      "s": {"type": "array", "items": {"type": ["integer", "null"]}}}, "required": ["n", "s"]})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  for (const std::string doc : {R"({"n": 1, "s": []})", R"({"n": 10, "s": [null, -3, 0]})", R"({"n": 100, "s": [7]})"}) {
    JsonSchemaAcceptor a(schema->get());
    for (size_t i = 0; i < doc.size(); ++i) {
      ASSERT_FALSE(a.complete()) << doc << " at " << i;
      ASSERT_TRUE(a.Feed(static_cast<uint8_t>(doc[i]))) << doc << " at " << i;
    }
    EXPECT_TRUE(a.complete()) << doc;
  }
  EXPECT_FALSE(Takes(**schema, R"({"n": 1000, "s": []})"));
  EXPECT_FALSE(Takes(**schema, R"({"n": 1, "s": [-0]})"));
  EXPECT_FALSE(Takes(**schema, R"({"n": 1, "s": [1.5]})"));
}

// A reference at the top, and alternatives one of which is left: the
// acceptor starts at the node they resolve to.
TEST(JsonSchemaTest, TopLevelReachedThroughRefOrOneAlternative) {
  for (const char* text : {
           R"({"$ref": "#/$defs/m", "$defs": {"m": {"type": "object", "properties": {"a": {"type": "integer"}},
               "required": ["a"]}}})",
           R"({"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]})",
       }) {
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(text);
    ASSERT_TRUE(schema.ok()) << schema.status() << text;
    EXPECT_TRUE(Takes(**schema, R"({"a": 12})")) << text;
    EXPECT_FALSE(Takes(**schema, R"({})")) << text;
    EXPECT_FALSE(Takes(**schema, R"({"a": "x"})")) << text;
  }
}

// An array at the top (tool_choice "required"): its "]" ends the answer.
TEST(JsonSchemaTest, ArrayAtTheTop) {
  auto schema = CompileJsonSchema(R"({"type": "array", "minItems": 1, "items": {"type": "integer"}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, "[1, 2]"));
  EXPECT_FALSE(Takes(**schema, "[]"));
  EXPECT_FALSE(Takes(**schema, "[1, 2"));
  EXPECT_FALSE(Takes(**schema, "{}"));
}

// One $ref read twice (two properties naming the same definition) is not
// recursion.
TEST(JsonSchemaTest, SharedDefinitionReadAtEachUse) {
  auto schema = CompileJsonSchema(R"({"type": "object", "$defs": {"p": {"type": "object",
      "properties": {"x": {"type": "number"}}, "required": ["x"]}},
      "properties": {"from": {"$ref": "#/$defs/p"}, "to": {"$ref": "#/$defs/p"}}, "required": ["from", "to"]})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, R"({"from": {"x": 1}, "to": {"x": -2.5}})"));
  EXPECT_FALSE(Takes(**schema, R"({"from": {"x": 1}, "to": {}})"));
}

TEST(JsonSchemaTest, RefusesWhatItDoesNotImplementNamingWhere) {
  struct Case {
    const char* schema;
    const char* message;
  };
  const Case cases[] = {
      {R"({"type": "object", "properties": {"age": {"type": "number", "minimum": 0}}})",
       "properties.age: 'minimum' of a number is not supported"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}})",
       "properties.n: 'multipleOf' is not supported"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "exclusiveMaximum": 5}}})",
       "properties.n: no integer lies within its bounds (5 to 4)"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": true}}})",
       "'exclusiveMinimum' must be a number"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "maximum": 1e30}}})",
       "'maximum' outside 64-bit integers is not supported"},
      {R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 4, "maxLength": 3}}})",
       "properties.s: 'minLength' 4 is above 'maxLength' 3"},
      {R"({"type": "object", "properties": {"s": {"type": "string", "minLength": -1}}})",
       "'minLength' must be a whole number >= 0"},
      {R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 1.5}}})",
       "'maxLength' must be a whole number >= 0"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"},
           "maxItems": 70000}}})",
       "'maxItems' above 65535 is not supported"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"},
           "minItems": 3, "maxItems": 2}}})",
       "'minItems' 3 is above 'maxItems' 2"},
      {R"({"type": "object", "properties": {"s": {"enum": ["a", "abc"], "maxLength": 2}}})",
       "'maxLength' beside 'enum' is not supported"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "minItems": 1, "items": {"type": "array",
           "minItems": 1, "items": {"type": "array", "minItems": 1, "items": {"type": "array", "minItems": 1,
           "items": {"type": "array", "minItems": 1, "items": {"type": "integer"}}}}}}}})",
       "properties.a.items.items.items: 'minItems'/'maxItems' on arrays nested more than 3 deep"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "a(?=b)"}}})js",
       "properties.s: 'pattern' \"a(?=b)\": at offset 3: (? other than (?:"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "(a)\\1"}}})js",
       "\\1 is not supported (anchors, backreferences and properties are not)"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "\\bword"}}})js",
       "\\b (a word boundary) is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "a++"}}})js",
       "a quantifier after a quantifier"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "[b-a]"}}})js",
       "a range whose end is below its start"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "(ab"}}})js", "'(' without ')'"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "a{2000}"}}})js",
       "a repetition count above 1000"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "[\"\\\\]"}}})js",
       "it matches no string written without escapes"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "a", "maxLength": 3}}})js",
       "'pattern' beside 'minLength' or 'maxLength' is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "(a|b|c|d|e|f|g|h){500}x{500}"}}})js",
       "automaton states"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "email"}}})js",
       "properties.s: 'format' \"email\" is not supported (date, time, date-time, uuid and ipv4 are)"},
      {R"js({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}})js",
       "properties.n: 'format' \"int32\" is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "date", "pattern": "2.*"}}})js",
       "'format' beside 'pattern' is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "uuid", "maxLength": 36}}})js",
       "'format' beside 'minLength' or 'maxLength' is not supported"},
      {R"({"type": "object", "additionalProperties": true})", "'additionalProperties' other than false"},
      {R"({"type": "object", "properties": {"x": {"not": {"type": "string"}}}})", "properties.x: 'not' is not supported"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/y"}}})",
       "properties.x: '$ref' \"#/$defs/y\" points at nothing"},
      {R"({"type": "object", "properties": {"x": {"$ref": "other.json#/a"}}})", "must be a local reference"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#"}}})", "recursive schemas are not supported"},
      {R"({"type": "object", "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
           "properties": {"head": {"$ref": "#/$defs/n"}}})",
       "$defs.n.properties.next: '$ref' \"#/$defs/n\" refers back"},
      {R"({"type": "object", "$defs": {"n": {"type": "integer", "multipleOf": 3}},
           "properties": {"a": {"$ref": "#/$defs/n"}}})",
       "$defs.n: 'multipleOf' is not supported"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/y", "type": "string"}}})",
       "'type' beside '$ref' is not supported"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "object"}, {"type": "object",
           "properties": {"a": {"type": "string"}}}]}}})",
       "properties.x: 'anyOf' alternatives that are objects need a tag (an object without a required first "
       "property)"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [
           {"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]},
           {"type": "object", "properties": {"u": {"const": "b"}}, "required": ["u"]}]}}})",
       "need a tag (first properties \"u\" and \"t\")"},
      {R"({"type": "object", "properties": {"x": {"oneOf": [
           {"type": "object", "properties": {"t": {"enum": ["a", "b"]}}, "required": ["t"]},
           {"type": "object", "properties": {"t": {"const": "b"}}, "required": ["t"]}]}}})",
       "need a tag (two objects share the tag \"b\")"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [
           {"type": "object", "properties": {"t": {"const": 1}}, "required": ["t"]},
           {"type": "object", "properties": {"t": {"const": 2}}, "required": ["t"]}]}}})",
       "need a tag (the first property \"t\" is not a string const or enum)"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "array", "items": {"type": "string"}},
           {"type": "array", "items": {"type": "integer"}}]}}})",
       "properties.x: 'anyOf' alternatives that can both begin with '['"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "integer"}, {"const": 1.5}]}}})",
       "'anyOf' alternatives that can both begin with '1'"},
      {R"({"type": "object", "properties": {"x": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}})",
       "'oneOf' alternatives that overlap"},
      {R"({"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"const": "a"}]}}})",
       "'oneOf' alternatives that overlap"},
      {R"({"type": "object", "properties": {"x": {"oneOf": [{"enum": [1, 2]}, {"const": 2}]}}})",
       "'oneOf' alternatives that overlap"},
      {R"({"type": "object", "properties": {"x": {"anyOf": []}}})", "'anyOf' must be a non-empty list"},
      {R"({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"type": "string"}]}}})",
       "'allOf' of more than one schema"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer",
           "format": "int32"}]}}})",
       "properties.x.anyOf[1]: 'format' \"int32\" is not supported"},
      {R"({"anyOf": [{"type": "object"}, {"type": "null"}]})", "the top level must be"},
      {R"({"type": "object", "properties": {"x": {}}})", "properties.x: a schema without 'type'"},
      {R"({"type": "object", "properties": {"x": {"type": "array"}}})", "properties.x: an array needs 'items'"},
      {R"({"type": "object", "properties": {"x": {"type": "date"}}})", "type 'date' is not supported"},
      {R"({"type": "object", "required": ["y"]})", "required \"y\" is not one of its properties"},
      {R"({"type": "object", "properties": {"x": {"type": "string", "enum": [1]}}})", "is not of the type"},
      {R"({"type": "string"})", "the top level must be an object or an array"},
      {R"({"enum": [1, 2]})", "the top level must be an object or an array"},
      {R"({"type": "object", "properties": )", "not valid JSON"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> s = CompileJsonSchema(c.schema);
    ASSERT_FALSE(s.ok()) << c.schema;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message)) << c.schema;
  }
}

}  // namespace
}  // namespace attnserve
