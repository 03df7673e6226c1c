// JSON schema mode: JsonSchemaAcceptor agrees with xgrammar's JSON-schema
// grammar on every document of tests/golden/json/schema_documents.json
// (its verdict, and the byte where it first refuses)
// (tools/golden/json_schema_documents.py), and CompileJsonSchema refuses what
// it does not implement, naming the keyword and where it is.
#include "engine/sampling/json_schema.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

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
  ASSERT_GE(golden["cases"].size(), 17u);
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

// Bounded numbers and integers against xgrammar, every text over a small
// alphabet up to five bytes and a few longer ones (six and seven fractional
// digits, exponents): the verdict, and the byte where it refuses.
TEST(JsonSchemaTest, NumberBoundsAgreeWithXgrammarOnEveryShortText) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/json/number_bounds.json");
  const nlohmann::ordered_json golden = nlohmann::ordered_json::parse(in);
  const std::string alphabet = golden["alphabet"];
  const int max_length = golden["max_length"];
  ASSERT_GE(golden["cases"].size(), 20u);
  int taken = 0, refused = 0;
  for (const nlohmann::ordered_json& c : golden["cases"]) {
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(c["schema"].dump());
    ASSERT_TRUE(schema.ok()) << schema.status() << c["schema"].dump();
    const std::string head = R"({"x": )";
    auto check = [&](const std::string& text, size_t want_taken, bool want_whole) {
      const std::string doc = head + text + "}";
      const size_t read = std::min(BytesRead(**schema, doc) - head.size(), text.size());
      EXPECT_EQ(read, want_taken) << c["schema"]["properties"]["x"].dump() << " " << text;
      EXPECT_EQ(Takes(**schema, doc), want_whole) << c["schema"]["properties"]["x"].dump() << " " << text;
      (want_whole ? taken : refused) += 1;
    };
    const std::string codes = c["codes"];
    size_t at = 0;
    for (int length = 1; length <= max_length; ++length) {
      std::vector<size_t> digit(length, 0);  // itertools.product's order: the last letter turns fastest
      for (bool more = true; more;) {
        std::string text;
        for (size_t d : digit) text += alphabet[d];
        ASSERT_LT(at, codes.size());
        const char code = codes[at++];
        check(text, code == 'A' ? text.size() : static_cast<size_t>(code - '0'), code == 'A');
        more = false;
        for (int i = length - 1; i >= 0 && !more; --i) {
          if (++digit[i] < alphabet.size()) {
            more = true;
          } else {
            digit[i] = 0;
          }
        }
      }
    }
    EXPECT_EQ(at, codes.size());
    for (const nlohmann::ordered_json& e : c["extra"]) check(e["text"], e["taken"], e["accepted"]);
  }
  EXPECT_GT(taken, 2000);
  EXPECT_GT(refused, 50000);
}

// A bound is read from its text: 0.1 is a tenth (the double nearest it is
// a little above), and an exclusive bound between grid points rounds
// inwards like an inclusive one.
TEST(JsonSchemaTest, NumberBoundsAreExactDecimals) {
  absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(R"({"type": "array",
      "items": {"type": "number", "minimum": 0.1, "exclusiveMaximum": 0.3000005}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, "[0.1, 0.100000, 0.3, 0.300000]"));
  EXPECT_FALSE(Takes(**schema, "[0.099999]"));
  EXPECT_FALSE(Takes(**schema, "[0.300001]"));
  // Large bounds, near the supported ±10^12.
  schema = CompileJsonSchema(R"({"type": "array", "items": {"type": "number", "minimum": -1e12, "maximum": 1e12}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, "[1000000000000, -1000000000000.000000, 999999999999.999999]"));
  EXPECT_FALSE(Takes(**schema, "[1000000000000.000001]"));
  EXPECT_FALSE(Takes(**schema, "[10000000000000]"));
  EXPECT_EQ(BytesRead(**schema, "[10000000000000]"), 14u);  // the 14th digit is past every value
}

// In a union a bounded number or integer reads a literal or an integer only
// within its range; what it does not read stays an alternative (and one
// that begins like it is refused, naming the byte).
TEST(JsonSchemaTest, BoundedAlternativesReadOnlyWhatTheyTake) {
  absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(R"({"type": "array",
      "items": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "number", "minimum": 0,
      "maximum": 10}, {"enum": [2, 7.5, null]}, {"type": "string", "pattern": "[a-c]+"}, {"const": "abc"}]}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, R"([3, 7.5, 10, 0.25, null, "abc", "b"])"));
  EXPECT_FALSE(Takes(**schema, "[11]"));
  EXPECT_FALSE(Takes(**schema, "[-1]"));
  EXPECT_FALSE(Takes(**schema, R"(["d"])"));
}

// pydantic's IPvAnyAddress writes "ipvanyaddress", which xgrammar reads as
// any string: here it is IPv4 or IPv6, the golden's two patterns.
TEST(JsonSchemaTest, PydanticIpAnyAddressIsIpv4OrIpv6) {
  auto schema = CompileJsonSchema(R"({"type": "array", "items": {"type": "string", "format": "ipvanyaddress"}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  for (const char* doc : {R"(["10.0.0.1"])", R"(["::1"])", R"(["2001:db8::8a2e:370:7334"])", R"(["::ffff:1.2.3.4"])"}) {
    EXPECT_TRUE(Takes(**schema, doc)) << doc;
  }
  for (const char* doc : {R"(["10.0.0"])", R"(["1.2.3.256"])", R"([":::"])", R"(["localhost"])", R"([""])"}) {
    EXPECT_FALSE(Takes(**schema, doc)) << doc;
  }
}

// An email's quoted local part is written with JSON escapes; the escaped
// quote must not end the string, the bare one must.
TEST(JsonSchemaTest, EmailQuotedLocalPartKeepsItsEscapes) {
  auto schema = CompileJsonSchema(R"({"type": "array", "items": {"type": "string", "format": "email"}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(Takes(**schema, R"js(["\"a b\"@x.org"])js"));
  EXPECT_TRUE(Takes(**schema, R"js(["\"a\\\"b\"@x"])js"));  // quoted pair \" inside
  EXPECT_FALSE(Takes(**schema, R"js(["\"a b"@x.org"])js"));    // a bare '"' ends the string there
  EXPECT_EQ(BytesRead(**schema, R"js(["\"a b"@x.org"])js"), 7u);
  EXPECT_FALSE(Takes(**schema, R"js(["a b@x.org"])js"));
  EXPECT_FALSE(Takes(**schema, R"js(["\u0061@x.org"])js"));  // no other escape
}

// A format used by many fields is one automaton, counted once: six IPv6
// fields (about 20 KB of automaton each) fit the 64 KiB for patterns.
TEST(JsonSchemaTest, RepeatedFormatIsOneAutomaton) {
  auto one = CompileJsonSchema(R"({"type": "array", "items": {"type": "string", "format": "ipv6"}})");
  ASSERT_TRUE(one.ok()) << one.status();
  std::string props;
  for (int i = 0; i < 6; ++i) {
    absl::StrAppend(&props, i ? ", " : "", "\"a", i, R"(": {"type": "string", "format": "ipv6"})");
  }
  auto six = CompileJsonSchema(absl::StrCat(R"({"type": "object", "properties": {)", props, "}}"));
  ASSERT_TRUE(six.ok()) << six.status();
  EXPECT_GT((*one)->pattern_bytes, kMaxSchemaPatternBytes / 4);
  EXPECT_EQ((*six)->pattern_bytes, (*one)->pattern_bytes);
  EXPECT_TRUE(Takes(**six, R"({"a0": "::1", "a5": "fe80::1"})"));
  EXPECT_FALSE(Takes(**six, R"({"a0": "::1", "a5": "fe80:::1"})"));
}

// A pattern with minLength / maxLength (xgrammar drops the lengths there,
// so no golden): every string over each case's alphabet, up to a length
// past the bounds, is taken exactly when RE2 matches it whole and
// its length in characters is within the bounds; and every prefix taken
// can still be completed, so a token mask never leads into a dead end.
struct LengthCase {
  const char* pattern;
  int min_length, max_length;  // -1: absent
  std::vector<std::string> alphabet;  // characters, each one code point
};

size_t Utf8Chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Walks every string over the alphabet up to `depth` characters below
// `state` (the acceptor after `text`); returns whether any of them, or
// `text` itself, is whole. Checks each against the reference on the way.
bool WalkPatternStrings(const LengthCase& c, const RE2& re, const JsonSchemaAcceptor& state,
                        const std::string& text, int depth, int* checked) {
  JsonSchemaAcceptor closed = state;
  const bool whole = closed.Feed('"') && closed.Feed(']') && closed.complete();
  const size_t chars = Utf8Chars(text);
  const bool want = RE2::FullMatch(text, re) && static_cast<int>(chars) >= c.min_length &&
                    (c.max_length < 0 || chars <= static_cast<size_t>(c.max_length));
  EXPECT_EQ(whole, want) << c.pattern << " [" << c.min_length << ", " << c.max_length << "] " << text;
  ++*checked;
  bool completes = whole;
  for (const std::string& ch : c.alphabet) {
    JsonSchemaAcceptor next = state;
    bool took = true;
    for (char b : ch) took = took && next.Feed(static_cast<uint8_t>(b));
    if (took && depth > 0) {
      const bool sub = WalkPatternStrings(c, re, next, text + ch, depth - 1, checked);
      // Deep enough below it to find a completion if one exists (these
      // patterns complete within 3 more characters once past minLength).
      if (depth - 1 >= 3) {
        EXPECT_TRUE(sub) << c.pattern << ": a dead end after " << text + ch;
      }
      completes |= sub;
    } else if (!took) {
      // Refused: then no string beginning so may be whole.
      const std::string longer = text + ch;
      const size_t n = Utf8Chars(longer);
      const bool could = RE2::FullMatch(longer, re) && static_cast<int>(n) >= c.min_length &&
                         (c.max_length < 0 || n <= static_cast<size_t>(c.max_length));
      EXPECT_FALSE(could) << c.pattern << " refused " << longer;
      ++*checked;
    }
  }
  return completes;
}

TEST(JsonSchemaTest, PatternWithLengthBoundsAgreesWithRegexAndLength) {
  const std::vector<LengthCase> cases = {
      {"[ab]*", 2, 4, {"a", "b", "c"}},
      {"(ab|é)+", 3, 5, {"a", "b", "é"}},
      {"(ab)+", -1, 5, {"a", "b"}},
      {"(ab)+", 3, -1, {"a", "b"}},
      {"a{2,6}", 3, 4, {"a", "b"}},
      {"(abc|d)*e?", 2, 3, {"a", "b", "c", "d", "e"}},
      {"x(ab)*", 2, -1, {"x", "a", "b"}},
      {"(é|日本)*", 0, 3, {"é", "日", "本"}},
      {"a|bcd", 2, -1, {"a", "b", "c", "d"}},
      {"(ab|c)d?", 3, -1, {"a", "b", "c", "d"}},
      {"(ab|c)d?(é)?", 2, 3, {"a", "b", "c", "d", "é"}},
  };
  for (const LengthCase& c : cases) {
    std::string item = absl::StrCat(R"({"type": "string", "pattern": ")", c.pattern, "\"");
    if (c.min_length >= 0) absl::StrAppend(&item, R"(, "minLength": )", c.min_length);
    if (c.max_length >= 0) absl::StrAppend(&item, R"(, "maxLength": )", c.max_length);
    auto schema = CompileJsonSchema(absl::StrCat(R"({"type": "array", "items": )", item, "}, \"maxItems\": 1}"));
    ASSERT_TRUE(schema.ok()) << schema.status();
    JsonSchemaAcceptor start(schema->get());
    ASSERT_TRUE(start.Feed('[') && start.Feed('"'));
    const RE2 re(c.pattern);
    ASSERT_TRUE(re.ok()) << c.pattern;
    int checked = 0;
    const int depth = (c.max_length >= 0 ? c.max_length : c.min_length) + 4;
    EXPECT_TRUE(WalkPatternStrings(c, re, start, "", depth, &checked)) << c.pattern;
    EXPECT_GT(checked, 10) << c.pattern;
  }
}

// Bounds every match meets are dropped; ones none meets, and both bounds
// where the lengths have gaps, are refused by name.
TEST(JsonSchemaTest, PatternLengthBoundsThatCannotHoldAreRefused) {
  auto schema_with = [](const std::string& item) {
    return CompileJsonSchema(absl::StrCat(R"({"type": "array", "items": {"type": "string", )", item, "}}"));
  };
  // pydantic's HttpUrl: every URI is at least "a:" long, so minLength 1 holds.
  auto url = schema_with(R"("format": "uri", "minLength": 1, "maxLength": 10)");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_TRUE(Takes(**url, R"(["https://a."])"));
  EXPECT_FALSE(Takes(**url, R"(["https://a.b"])"));
  EXPECT_EQ(BytesRead(**url, R"(["https://a.b"])"), 12u);  // the 11th character
  EXPECT_THAT(schema_with(R"("pattern": "abc", "maxLength": 2)").status().message(),
              HasSubstr("items: 'maxLength' 2: no string of the 'pattern' is that short (the shortest has 3"));
  EXPECT_THAT(schema_with(R"("format": "date", "minLength": 11)").status().message(),
              HasSubstr("items: 'minLength' 11: no string of the 'format' is that long (the longest has 10"));
  EXPECT_THAT(schema_with(R"("pattern": "(ab)+", "minLength": 3, "maxLength": 5)").status().message(),
              HasSubstr("'minLength' with 'maxLength' beside this 'pattern' (its strings' lengths have gaps)"));
  // Each alone is exact, gaps or not (the walk above checks both).
  EXPECT_TRUE(schema_with(R"("pattern": "(ab)+", "minLength": 3)").ok());
  EXPECT_TRUE(schema_with(R"("pattern": "(ab)+", "maxLength": 5)").ok());
}

// OpenAPI's int32 and int64 on an integer are its range (met with any
// minimum / maximum); on another type they change nothing.
TEST(JsonSchemaTest, OpenApiIntegerFormatsAreRanges) {
  auto int32 = CompileJsonSchema(R"({"type": "array", "items": {"type": "integer", "format": "int32"}})");
  ASSERT_TRUE(int32.ok()) << int32.status();
  EXPECT_TRUE(Takes(**int32, "[2147483647, -2147483648, 0]"));
  EXPECT_FALSE(Takes(**int32, "[2147483648]"));
  EXPECT_EQ(BytesRead(**int32, "[2147483648]"), 10u);  // its last digit
  EXPECT_FALSE(Takes(**int32, "[-2147483649]"));
  EXPECT_FALSE(Takes(**int32, "[99999999999]"));
  auto int64 = CompileJsonSchema(R"({"type": "array", "items": {"type": "integer", "format": "int64"}})");
  ASSERT_TRUE(int64.ok()) << int64.status();
  EXPECT_TRUE(Takes(**int64, "[9223372036854775807, -9223372036854775808]"));
  EXPECT_FALSE(Takes(**int64, "[9223372036854775808]"));
  auto bounded = CompileJsonSchema(
      R"({"type": "array", "items": {"type": "integer", "format": "int32", "minimum": 5, "maximum": 1e12}})");
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_TRUE(Takes(**bounded, "[5, 2147483647]"));
  EXPECT_FALSE(Takes(**bounded, "[4]"));
  EXPECT_FALSE(Takes(**bounded, "[2147483648]"));
  auto text = CompileJsonSchema(R"({"type": "array", "items": {"type": ["string", "integer"], "format": "int32"}})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(Takes(**text, R"(["not a number", 7])"));
  EXPECT_FALSE(Takes(**text, "[4294967296]"));
}

// Inside a string with a maxLength, lengths that no token can take to the
// bound share one mask key; near the bound each length has its own. The
// horizon counts the pattern's own shortest way to end too.
TEST(JsonSchemaTest, StateKeyMergesLengthsFarFromTheBound) {
  auto key_after = [](const CompiledJsonSchema& schema, const std::string& text, int horizon) {
    JsonSchemaAcceptor a(&schema);
    for (char c : text) EXPECT_TRUE(a.Feed(static_cast<uint8_t>(c))) << text;
    return a.StateKey(horizon);
  };
  auto plain = CompileJsonSchema(R"({"type": "array", "items": {"type": "string", "maxLength": 100}})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  const std::string open = "[\"";
  EXPECT_EQ(key_after(**plain, open + "a", 8), key_after(**plain, open + std::string(91, 'a'), 8));
  EXPECT_NE(key_after(**plain, open + "a", 8), key_after(**plain, open + std::string(92, 'a'), 8));
  EXPECT_NE(key_after(**plain, open + std::string(92, 'a'), 8), key_after(**plain, open + std::string(93, 'a'), 8));
  EXPECT_NE(key_after(**plain, open + "a", std::numeric_limits<int>::max()),
            key_after(**plain, open + "aa", std::numeric_limits<int>::max()));
  // The pattern's longest shortest way to a match is 4 characters ("a.bc"
  // from its start), so the horizon there is 8 + 4.
  auto site = CompileJsonSchema(
      R"({"type": "array", "items": {"type": "string", "pattern": "[a-z]+\\.[a-z]{2,3}", "maxLength": 40}})");
  ASSERT_TRUE(site.ok()) << site.status();
  // ("aa" on: the automaton's state inside [a-z]+ no longer changes.)
  EXPECT_EQ(key_after(**site, open + "aa", 8), key_after(**site, open + std::string(27, 'a'), 8));
  EXPECT_NE(key_after(**site, open + "aa", 8), key_after(**site, open + std::string(28, 'a'), 8));
  // Below a minLength every length counts.
  auto both = CompileJsonSchema(R"({"type": "array", "items": {"type": "string", "minLength": 5, "maxLength": 100}})");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_NE(key_after(**both, open + "a", 8), key_after(**both, open + "aa", 8));
  EXPECT_EQ(key_after(**both, open + "aaaaa", 8), key_after(**both, open + "aaaaaa", 8));
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

// pydantic's recursive models ("$defs" and a "$ref" back): unrolled to
// kMaxRecursionDepth levels; a value nested deeper is refused where it
// would begin, and the levels' own alternatives (null, an empty list) end it.
TEST(JsonSchemaTest, RecursiveSchemaIsReadToItsDepth) {
  auto list = CompileJsonSchema(R"({"$defs": {"Node": {"properties": {"value": {"type": "integer"},
      "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}, "required": ["value", "next"],
      "type": "object"}}, "$ref": "#/$defs/Node"})");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ((*list)->recursion_depth, kMaxRecursionDepth);
  auto chain = [](int levels) {
    std::string doc;
    for (int i = 0; i < levels; ++i) absl::StrAppend(&doc, R"({"value": )", i, R"(, "next": )");
    doc += "null";
    for (int i = 0; i < levels; ++i) doc += "}";
    return doc;
  };
  for (int levels = 1; levels <= kMaxRecursionDepth; ++levels) EXPECT_TRUE(Takes(**list, chain(levels))) << levels;
  const std::string deep = chain(kMaxRecursionDepth + 1);
  EXPECT_FALSE(Takes(**list, deep));
  // Refused at the ninth '{', where the eighth level's "next" may only be null.
  size_t ninth = 0;
  for (int i = 0; i <= kMaxRecursionDepth; ++i) ninth = deep.find('{', i == 0 ? 0 : ninth + 1);
  EXPECT_EQ(BytesRead(**list, deep), ninth);

  // Children in a list: the deepest level's list can only be empty.
  auto tree = CompileJsonSchema(R"({"$defs": {"T": {"type": "object", "properties": {"name": {"type": "string"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "required": ["name", "kids"]}},
      "$ref": "#/$defs/T"})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)->recursion_depth, kMaxRecursionDepth);
  EXPECT_TRUE(Takes(**tree, R"({"name": "a", "kids": [{"name": "b", "kids": []}, {"name": "c", "kids": [{"name": "d", "kids": []}]}]})"));
  std::string nested = R"({"name": "x", "kids": []})";
  for (int i = 1; i < kMaxRecursionDepth; ++i) nested = R"({"name": "x", "kids": [)" + nested + "]}";
  EXPECT_TRUE(Takes(**tree, nested));
  nested = R"({"name": "x", "kids": [)" + nested + "]}";
  EXPECT_FALSE(Takes(**tree, nested));
}

// Two recursive references a level (a binary tree) double the nodes with
// each level: unrolled as deep as kMaxSchemaNodes allows.
TEST(JsonSchemaTest, BranchingRecursionIsUnrolledAsDeepAsTheNodesAllow) {
  auto tree = CompileJsonSchema(R"({"$defs": {"B": {"type": "object", "properties": {"v": {"type": "number"},
      "left": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]},
      "right": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}}, "required": ["v", "left", "right"]}},
      "type": "object", "properties": {"root": {"$ref": "#/$defs/B"}}, "required": ["root"]})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  const int depth = (*tree)->recursion_depth;
  EXPECT_GE(depth, 2);
  EXPECT_LT(depth, kMaxRecursionDepth);
  EXPECT_LE(static_cast<int>((*tree)->nodes.size()), kMaxSchemaNodes);
  auto full = [](auto& self, int levels) -> std::string {
    if (levels == 0) return "null";
    const std::string sub = self(self, levels - 1);
    return R"({"v": 1, "left": )" + sub + R"(, "right": )" + sub + "}";
  };
  // The root object is not the recursive schema: B is open `depth` times.
  EXPECT_TRUE(Takes(**tree, R"({"root": )" + full(full, depth) + "}"));
  EXPECT_FALSE(Takes(**tree, R"({"root": )" + full(full, depth + 1) + "}"));
}

// Random walks over a recursive schema's bytes, going deep where they can:
// from every state reached some byte is taken or the value is complete, so
// a token mask never leads into a level that cannot be ended.
TEST(JsonSchemaTest, RecursiveSchemaHasNoDeadEnds) {
  // The recursive schema, then any values and maps (nested up to 64 deep).
  for (const char* text : {
           R"({"$defs": {"N": {"type": "object", "properties": {
               "tag": {"enum": ["a", "b"]}, "kids": {"type": "array", "items": {"$ref": "#/$defs/N"}, "maxItems": 2},
               "next": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}, "child": {"$ref": "#/$defs/N"},
               "only": {"anyOf": [{"$ref": "#/$defs/N"}]}}, "required": ["tag"]}}, "$ref": "#/$defs/N"})",
           R"({"type": "object", "properties": {"a": {}, "m": {"type": "object", "additionalProperties":
               {"type": "array", "items": {"type": "object"}, "maxItems": 2}}}, "required": ["a"]})",
           // As the openai client sends pydantic's dict[str, conint(ge=0, le=100)], dict and Any.
           R"({"properties": {"counts": {"additionalProperties": {"maximum": 100, "minimum": 0, "type": "integer"},
               "type": "object"}, "notes": {"additionalProperties": true, "type": "object"}, "extra": {}},
               "required": ["counts", "notes", "extra"], "type": "object", "additionalProperties": false})",
           // Declared keys, then keys of its own choosing (never a declared one).
           R"({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "string"},
               "b": {"type": "object", "properties": {"c": {"type": "null"}}, "required": ["c"],
               "additionalProperties": {"type": "array", "items": {"type": "boolean"}}}},
               "additionalProperties": {"type": "integer", "maximum": 5}})"}) {
    auto schema = CompileJsonSchema(text);
    ASSERT_TRUE(schema.ok()) << schema.status();
    std::mt19937 rng(20261205);
    int deepest = 0;
    for (int walk = 0; walk < 300; ++walk) {
      JsonSchemaAcceptor a(schema->get());
      int depth = 0;
      for (int step = 0; step < 4000 && !a.complete(); ++step) {
        std::vector<uint8_t> taken;
        for (int b = 0; b < 256; ++b) {
          JsonSchemaAcceptor next = a;
          if (next.Feed(static_cast<uint8_t>(b))) taken.push_back(static_cast<uint8_t>(b));
        }
        ASSERT_FALSE(taken.empty()) << "dead end after " << step << " bytes, walk " << walk << " of " << text;
        // Prefer opening a level early in a walk and closing later.
        uint8_t pick = taken[rng() % taken.size()];
        for (uint8_t want : {uint8_t{'{'}, uint8_t{'['}, uint8_t{','}, uint8_t{'n'}, uint8_t{'"'}}) {
          if (std::find(taken.begin(), taken.end(), want) != taken.end() && rng() % 4 < (step < 300 ? 3u : 1u)) {
            pick = want;
            break;
          }
        }
        depth += pick == '{' ? 1 : 0;
        ASSERT_TRUE(a.Feed(pick));
      }
      deepest = std::max(deepest, depth);
    }
    EXPECT_GE(deepest, std::max(2 * (*schema)->recursion_depth, 8)) << text;
  }
}

// pydantic's Any ({}), dict ({"type": "object"}) and dict[str, X]
// (additionalProperties X): any value, or an object of any keys, in
// json.dumps' form (xgrammar's basic_any with any_whitespace false).
TEST(JsonSchemaTest, AnyValueAndMapsOfAnyKeys) {
  auto schema = CompileJsonSchema(R"({"type": "object", "properties": {"any": {}, "obj": {"type": "object"},
      "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
      "free": {"type": "object", "additionalProperties": true}, "maybe": {"anyOf": [{}, {"type": "null"}]}},
      "required": ["any", "obj", "counts"]})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  for (const char* doc : {
           R"({"any": 1, "obj": {}, "counts": {}})",
           R"({"any": [1, -0.5e+3, "x\"y", true, false, null, [], {}, {"a": [{"b": null}]}], "obj": {"k": []}, "counts": {"a": 1, "b\u00e9": 0}})",
           R"({"any": "s", "obj": {"": {"": ""}}, "counts": {"x": 3}, "free": {"n": null}, "maybe": null})",
           R"({"any": {"nested": {"deeper": [[[["end"]]]]}}, "obj": {"a": 1, "b": 2}, "counts": {}, "maybe": [null]})"}) {
    EXPECT_TRUE(Takes(**schema, doc)) << doc;
  }
  for (const char* doc : {
           R"({"any": 1, "obj": [], "counts": {}})",             // obj: an object
           R"({"any": 1, "obj": {}, "counts": {"a": -1}})",      // counts: integers from 0
           R"({"any": 1, "obj": {}, "counts": {"a": 1.5}})",
           R"({"any": {"a":1}, "obj": {}, "counts": {}})",       // json.dumps' separators
           R"({"any": [1,2], "obj": {}, "counts": {}})",
           R"({"any": tru, "obj": {}, "counts": {}})",
           R"({"any": {1: 2}, "obj": {}, "counts": {}})",
           R"({"any": 1, "obj": {"a": 1,}, "counts": {}})"}) {
    EXPECT_FALSE(Takes(**schema, doc)) << doc;
  }
  // Nesting up to 64 levels inside a value, as JSON mode's depth.
  std::string deep = R"({"any": )", close;
  for (int i = 0; i < 64; ++i) deep += "[", close += "]";
  EXPECT_TRUE(Takes(**schema, deep + close + R"(, "obj": {}, "counts": {}})"));
  EXPECT_EQ(BytesRead(**schema, deep + "[]"), deep.size());
}

// Tuples (prefixItems): each position its own schema, then the rest's;
// counted by position, so tuples inside bounded arrays take no count slot.
TEST(JsonSchemaTest, TuplesReadEachPositionWithItsSchema) {
  auto schema = CompileJsonSchema(R"({"type": "object", "properties": {
      "grid": {"type": "array", "minItems": 1, "items": {"type": "array", "minItems": 1, "items": {"type": "array",
          "minItems": 1, "items": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
          "minItems": 2, "maxItems": 2}}}},
      "head": {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"},
               "minItems": 2, "maxItems": 3},
      "some": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}},
      "required": ["grid"]})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  for (const char* doc : {R"({"grid": [[[[1, "a"], [2, "b"]]]]})",
                          R"({"grid": [[[[1, "a"]]]], "head": [1, true], "some": []})",
                          R"({"grid": [[[[1, "a"]]]], "head": [1, true, false], "some": [5]})",
                          R"({"grid": [[[[1, "a"]]]], "some": [5, "x"]})"}) {
    EXPECT_TRUE(Takes(**schema, doc)) << doc;
  }
  for (const char* doc : {R"({"grid": [[[[1]]]]})", R"({"grid": [[[["a", 1]]]]})", R"({"grid": [[[[1, "a", 2]]]]})",
                          R"({"grid": [[[[1, "a"]]]], "head": [1]})", R"({"grid": [[[[1, "a"]]]], "head": [1, 2]})",
                          R"({"grid": [[[[1, "a"]]]], "head": [1, true, true, true]})",
                          R"({"grid": [[[[1, "a"]]]], "some": [5, "x", 6]})"}) {
    EXPECT_FALSE(Takes(**schema, doc)) << doc;
  }
  // The third item of a pair is refused at its ',': the pair is whole.
  const std::string three = R"({"grid": [[[[1, "a", 2]]]]})";
  EXPECT_EQ(BytesRead(**schema, three), three.find(", 2"));
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
      {R"({"type": "object", "properties": {"age": {"type": "number", "maximum": 1e13}}})",
       "properties.age: 'maximum' 1e+13 of a number beyond ±10^12 is not supported"},
      {R"({"type": "object", "properties": {"p": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 0.5}}})",
       "properties.p: no number lies within its bounds (0.500001 to 0.5, with at most 6 fractional digits)"},
      {R"({"type": "object", "properties": {"p": {"type": "number", "minimum": 1.0000001, "maximum": 1.0000009}}})",
       "properties.p: no number lies within its bounds (1.000001 to 1"},
      {R"({"type": "object", "properties": {"p": {"type": "number", "minimum": -2e-7, "maximum": -1e-7}}})",
       "properties.p: no number lies within its bounds (0 to -0.000001"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "number", "minimum": 0},
           {"type": "integer"}]}}})",
       "properties.x: 'anyOf' alternatives that can both begin with '-'"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "integer", "maximum": 9},
           {"enum": [3, 12]}]}}})",
       "properties.x: 'anyOf' alternatives that can both begin with '1'"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "string", "maxLength": 2},
           {"const": "abc"}]}}})",
       "properties.x: 'anyOf' alternatives that can both begin with '\"'"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}})",
       "properties.n: 'multipleOf' is not supported"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "exclusiveMaximum": 5}}})",
       "properties.n: no integer lies within its bounds (5 to 4)"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": true}}})",
       "'exclusiveMinimum' must be a number"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "maximum": 1e30}}})",
       "'maximum' 1e+30 outside 64-bit integers is not supported"},
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
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "a|bcd|efghi", "minLength": 2,
           "maxLength": 4}}})js",
       "properties.s: 'minLength' with 'maxLength' beside this 'pattern' (its strings' lengths have gaps) is not "
       "supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "pattern": "(a|b|c|d|e|f|g|h){500}x{500}"}}})js",
       "automaton states"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "idn-email"}}})js",
       "properties.s: 'format' \"idn-email\" is not supported (date, time, date-time, duration, uuid, ipv4, ipv6, "
       "ipvanyaddress, email, hostname, uri, uri-reference, int32 and int64 are)"},
      // OpenAPI's float is a range of numbers, which are not bounded here.
      {R"js({"type": "object", "properties": {"n": {"type": "number", "format": "float"}}})js",
       "properties.n: 'format' \"float\" is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "date", "pattern": "2.*"}}})js",
       "'format' beside 'pattern' is not supported"},
      {R"js({"type": "object", "properties": {"s": {"type": "string", "format": "uuid", "maxLength": 35}}})js",
       "properties.s: 'maxLength' 35: no string of the 'format' is that short"},
      {R"({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": 5})",
       "'additionalProperties' must be a schema or a boolean"},
      {R"({"type": "object", "properties": {"x": {"oneOf": [{}, {"type": "null"}]}}})",
       "properties.x: 'oneOf' alternatives that overlap"},
      {R"({"type": "object", "properties": {"x": {"minLength": 2}}})", "a schema without 'type', 'enum' or 'const'"},
      {R"({"type": "object", "properties": {"x": {"not": {"type": "string"}}}})", "properties.x: 'not' is not supported"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/y"}}})",
       "properties.x: '$ref' \"#/$defs/y\" points at nothing"},
      {R"({"type": "object", "properties": {"x": {"$ref": "other.json#/a"}}})", "must be a local reference"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]})",
       "schema: no value of it ends within 8 levels of recursion"},
      {R"({"$defs": {"T": {"type": "object", "properties": {"kids": {"type": "array", "minItems": 1,
           "items": {"$ref": "#/$defs/T"}}}, "required": ["kids"]}}, "$ref": "#/$defs/T"})",
       "schema: no value of it ends within 8 levels of recursion"},
      {R"({"type": "object", "$defs": {"n": {"type": "integer", "multipleOf": 3}},
           "properties": {"a": {"$ref": "#/$defs/n"}}})",
       "$defs.n: 'multipleOf' is not supported"},
      {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/y", "type": "string"}}})",
       "'type' beside '$ref' is not supported"},
      {R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "object", "properties": {}}, {"type": "object",
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
           "format": "uint8"}]}}})",
       "properties.x.anyOf[1]: 'format' \"uint8\" is not supported"},
      {R"({"anyOf": [{"type": "object"}, {"type": "null"}]})", "the top level must be"},
      {R"({"type": "object", "properties": {"x": {"type": "array", "minItems": 1}}})",
       "properties.x: 'minItems' without 'items' is not supported"},
      {R"({"type": "object", "properties": {"x": {"type": "array", "prefixItems": [{"type": "integer"}],
           "minItems": 2}}})",
       "properties.x: 'minItems' 2 is more than the 1 items the tuple can hold"},
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
