// Random schemas, from the keywords JSON schema mode reads and some it
// refuses, compiled and walked: compiling never crashes and refuses with
// INVALID_ARGUMENT and a message; a schema it takes never leads a walk into
// a dead end (some byte is taken, or the value is complete). Fixed seeds;
// the schema text mutated byte by byte too.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "engine/sampling/json_schema.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using ojson = nlohmann::ordered_json;

class SchemaMaker {
 public:
  explicit SchemaMaker(uint64_t seed) : rng_(seed) {}

  ojson Root() {
    ojson root = Object(0);
    {
      ojson defs = ojson::object();
      defs["T"] = Value(1);
      defs["R"] = ojson::parse(R"({"type": "object", "properties": {"v": {},
          "next": {"anyOf": [{"$ref": "#/$defs/R"}, {"type": "null"}]}}, "required": ["v"]})");
      defs["R"]["properties"]["v"] = Value(2);
      if (Chance(4)) defs["R"]["required"].push_back("next");  // no finite value
      root["$defs"] = defs;
    }
    return root;
  }

 private:
  bool Chance(int n) { return rng_() % n == 0; }
  int Pick(int n) { return static_cast<int>(rng_() % n); }

  ojson Object(int depth) {
    ojson o = {{"type", "object"}};
    const int n = Pick(4);
    ojson props = ojson::object();
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
      const std::string name = std::string(1, static_cast<char>('a' + Pick(4))) + (Chance(2) ? "b" : "");
      props[name] = Value(depth + 1);
      names.push_back(name);
    }
    if (!props.empty() || Chance(2)) o["properties"] = props;
    if (!names.empty() && Chance(2)) o["required"] = {names[Pick(static_cast<int>(names.size()))]};
    switch (Pick(5)) {
      case 0: o["additionalProperties"] = false; break;
      case 1: o["additionalProperties"] = true; break;
      case 2: o["additionalProperties"] = Value(depth + 1); break;
      default: break;
    }
    return o;
  }

  ojson Number(const char* type) {
    ojson n = {{"type", type}};
    const double bounds[] = {0, 1, -1, 0.5, -90, 100, 1e-7, 2.25, -0.25};
    if (Chance(2)) n[Chance(2) ? "minimum" : "exclusiveMinimum"] = bounds[Pick(9)];
    if (Chance(2)) n[Chance(2) ? "maximum" : "exclusiveMaximum"] = bounds[Pick(9)];
    return n;
  }

  ojson Value(int depth) {
    const int kinds = depth > 3 ? 6 : 13;
    switch (Pick(kinds)) {
      case 0: return {{"type", "string"}};
      case 1: return {{"type", "string"}, {"maxLength", Pick(5)}, {"minLength", Pick(2)}};
      case 2: {
        const char* patterns[] = {"[a-c]+", "x|yz", "\\d{2,3}", "(ab)*"};
        return {{"type", "string"}, {"pattern", patterns[Pick(4)]}};
      }
      case 3: return Number("number");
      case 4: return Number("integer");
      case 5: {
        const ojson values[] = {1, "a", nullptr, true, 2.5, "ab", -3};
        ojson e = ojson::array();
        for (int i = 0, n = 1 + Pick(3); i < n; ++i) e.push_back(values[Pick(7)]);
        return {{"enum", e}};
      }
      case 6: return Object(depth);
      case 7: {
        ojson a = {{"type", "array"}, {"items", Value(depth + 1)}};
        if (Chance(2)) a["maxItems"] = Pick(3);
        if (Chance(3)) a["minItems"] = Pick(2);
        return a;
      }
      case 8: {
        ojson t = {{"type", "array"}, {"prefixItems", {Value(depth + 1), Value(depth + 1)}}};
        if (Chance(2)) t["items"] = Chance(2) ? ojson(false) : Value(depth + 1);
        if (Chance(2)) t["minItems"] = Pick(3);
        return t;
      }
      case 9: {
        ojson alts = ojson::array();
        for (int i = 0, n = 1 + Pick(3); i < n; ++i) alts.push_back(Value(depth + 1));
        return {{Chance(2) ? "anyOf" : "oneOf", alts}};
      }
      case 10: return ojson::object();  // any value
      case 11: return {{"$ref", Chance(2) ? "#/$defs/T" : "#/$defs/R"}};
      default: return ojson::parse(R"({"type": ["string", "null"]})");
    }
  }

  std::mt19937_64 rng_;
};

// Random walks from the start: every state reached takes some byte or is
// complete. Prefers structure so the walks go deep and end.
// Returns the bytes walked.
int WalkWithoutDeadEnds(const CompiledJsonSchema& schema, std::mt19937_64& rng, const std::string& text) {
  int walked = 0;
  for (int walk = 0; walk < 4; ++walk) {
    JsonSchemaAcceptor a(&schema);
    for (int step = 0; step < 300 && !a.complete(); ++step) {
      std::vector<uint8_t> taken;
      for (int b = 0; b < 256; ++b) {
        JsonSchemaAcceptor next = a;
        if (next.Feed(static_cast<uint8_t>(b))) taken.push_back(static_cast<uint8_t>(b));
        (void)next.StateKey(16);
      }
      EXPECT_FALSE(taken.empty()) << "dead end after " << step << " bytes: " << text;
      if (taken.empty()) return walked;
      // Opening and going on early in a walk, closing later.
      uint8_t pick = taken[rng() % taken.size()];
      const std::initializer_list<uint8_t> early = {'{', '[', ',', '"'}, late = {'"', '}', ']', '1', 'n'};
      for (uint8_t want : step < 60 ? early : late) {
        if (std::find(taken.begin(), taken.end(), want) != taken.end() && rng() % 3 == 0) {
          pick = want;
          break;
        }
      }
      EXPECT_TRUE(a.Feed(pick));
      ++walked;
    }
  }
  return walked;
}

TEST(JsonSchemaFuzzTest, RandomSchemasCompileOrRefuseAndNeverDeadEnd) {
  SchemaMaker maker(20261205);
  std::mt19937_64 rng(7);
  int compiled = 0, refused = 0, walked = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text = maker.Root().dump();
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(text);
    if (!schema.ok()) {
      EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument) << text;
      EXPECT_FALSE(schema.status().message().empty()) << text;
      ++refused;
      continue;
    }
    ++compiled;
    walked += WalkWithoutDeadEnds(**schema, rng, text);
  }
  // Both outcomes are exercised.
  EXPECT_GT(compiled, 500);
  EXPECT_GT(refused, 50);
  EXPECT_GT(walked, 100000);
}

TEST(JsonSchemaFuzzTest, MutatedSchemaTextNeverCrashes) {
  SchemaMaker maker(99);
  std::mt19937_64 rng(11);
  const std::string bytes = "{}[]\":,-0123456789.eE truefalsnul$#/\\";
  for (int i = 0; i < 1500; ++i) {
    std::string text = maker.Root().dump();
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = bytes[rng() % bytes.size()]; break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, bytes[rng() % bytes.size()]); break;
      }
      if (text.empty()) text = "{";
    }
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(text);
    if (!schema.ok()) {
      EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument) << text;
      continue;
    }
    WalkWithoutDeadEnds(**schema, rng, text);
  }
}

}  // namespace
}  // namespace attnserve
