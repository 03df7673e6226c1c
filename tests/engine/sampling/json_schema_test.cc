// JSON schema mode: JsonSchemaAcceptor agrees with xgrammar's JSON-schema
// grammar on every document of tests/golden/json/schema_documents.json
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

TEST(JsonSchemaTest, RefusesWhatItDoesNotImplementNamingWhere) {
  struct Case {
    const char* schema;
    const char* message;
  };
  const Case cases[] = {
      {R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})",
       "properties.age: 'minimum' is not supported"},
      {R"({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}})",
       "properties.s: 'pattern' is not supported"},
      {R"({"type": "object", "additionalProperties": true})", "'additionalProperties' other than false"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}})", "'anyOf' is not supported"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/y"}}})", "'$ref' is not supported"},
      {R"({"type": "object", "properties": {"x": {}}})", "properties.x: a schema without 'type'"},
      {R"({"type": "object", "properties": {"x": {"type": "array"}}})", "properties.x: an array needs 'items'"},
      {R"({"type": "object", "properties": {"x": {"type": "date"}}})", "type 'date' is not supported"},
      {R"({"type": "object", "required": ["y"]})", "required \"y\" is not one of its properties"},
      {R"({"type": "object", "properties": {"x": {"type": "string", "enum": [1]}}})", "is not of the type"},
      {R"({"type": "array", "items": {"type": "string"}})", "the top level must be"},
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
