// Regex mode (vLLM's guided_regex): CompileRegexConstraint read by
// JsonSchemaAcceptor agrees with xgrammar's regex grammar on every document
// of tests/golden/regex/documents.json (tools/golden/regex_documents.py):
// its verdict, and the byte where it first refuses (so a mask never leads
// into a dead end). And what the syntax does not cover is refused by name.
#include "engine/sampling/regex_dfa.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "engine/sampling/json_schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

// Match lengths in characters from the start state, and whether they have
// gaps (what minLength with maxLength beside a pattern relies on).
TEST(RegexDfaTest, MatchLengthsInCharacters) {
  struct Case {
    const char* pattern;
    int min_chars, max_chars;  // max -1: no bound
    bool intervals;
  };
  for (const Case& c : std::vector<Case>{{"[a-z]{2,5}", 2, 5, true},
                                         {"(ab)+", 2, -1, false},
                                         {"é*x", 1, -1, true},
                                         {"a|日本語", 1, 3, false},
                                         {"(a|bc)(d|ef)?", 1, 4, true},
                                         {"😀{3}", 3, 3, true},
                                         {"x?", 0, 1, true}}) {
    absl::StatusOr<RegexDfa> dfa = CompileJsonStringRegex(c.pattern);
    ASSERT_TRUE(dfa.ok()) << dfa.status();
    EXPECT_EQ(dfa->min_chars[dfa->start], c.min_chars) << c.pattern;
    EXPECT_EQ(dfa->max_chars[dfa->start], c.max_chars) << c.pattern;
    EXPECT_EQ(dfa->lengths_are_intervals, c.intervals) << c.pattern;
  }
}

TEST(RegexConstraintTest, AgreesWithXgrammarByteByByte) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/regex/documents.json");
  const nlohmann::json golden = nlohmann::json::parse(in);
  ASSERT_GE(golden["cases"].size(), 11u);
  int taken = 0, refused = 0;
  for (const nlohmann::json& c : golden["cases"]) {
    const std::string regex = c["regex"];
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> compiled = CompileRegexConstraint(regex);
    ASSERT_TRUE(compiled.ok()) << compiled.status() << " " << regex;
    for (const nlohmann::json& d : c["documents"]) {
      std::string doc;
      ASSERT_TRUE(absl::HexStringToBytes(d["hex"].get<std::string>(), &doc));
      JsonSchemaAcceptor a(compiled->get());
      size_t read = 0;
      while (read < doc.size() && a.Feed(static_cast<uint8_t>(doc[read]))) ++read;
      const bool whole = read == doc.size() && a.complete();
      EXPECT_EQ(read, d["prefix"].get<size_t>()) << regex << "\n" << absl::CEscape(doc);
      EXPECT_EQ(whole, d["accepted"].get<bool>()) << regex << "\n" << absl::CEscape(doc);
      (whole ? taken : refused) += 1;
    }
  }
  EXPECT_GT(taken, 300);
  EXPECT_GT(refused, 2000);
}

// A match may end the output or go on: "ab" of (ab)+ is whole, and more
// may follow; "abab" of (ab){1,2} is whole and nothing may follow.
TEST(RegexConstraintTest, CompleteAndCanContinue) {
  auto compiled = CompileRegexConstraint("(ab){1,2}");
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  JsonSchemaAcceptor a(compiled->get());
  EXPECT_FALSE(a.complete());
  EXPECT_TRUE(a.can_continue());
  for (char c : std::string("ab")) ASSERT_TRUE(a.Feed(static_cast<uint8_t>(c)));
  EXPECT_TRUE(a.complete());
  EXPECT_TRUE(a.can_continue());
  for (char c : std::string("ab")) ASSERT_TRUE(a.Feed(static_cast<uint8_t>(c)));
  EXPECT_TRUE(a.complete());
  EXPECT_FALSE(a.can_continue());
  // Strict UTF-8: an encoded surrogate is no character (xgrammar takes one).
  auto any = CompileRegexConstraint(".*");
  ASSERT_TRUE(any.ok());
  JsonSchemaAcceptor s(any->get());
  EXPECT_TRUE(s.Feed(0xED));
  EXPECT_FALSE(s.Feed(0xA0));
  // The empty match: whole before any byte.
  auto star = CompileRegexConstraint("x*");
  ASSERT_TRUE(star.ok());
  EXPECT_TRUE(JsonSchemaAcceptor(star->get()).complete());
}

TEST(RegexConstraintTest, RefusesWhatItDoesNotImplementNamingWhy) {
  struct Case {
    const char* regex;
    const char* message;
  };
  const Case cases[] = {
      {"a(?=b)", "regex: at offset 3: (? other than (?:"},
      {"(?<=a)b", "lookbehind is not supported"},
      {"(a)\\1", "\\1 is not supported"},
      {"\\bword\\b", "\\b (a word boundary) is not supported"},
      {"\\p{L}", "\\p is not supported"},
      {"a**", "a quantifier after a quantifier"},
      {"*a", "a quantifier with nothing to repeat"},
      {"a{3,2}", "{n,m} with m below n"},
      {"[z-a]", "a range whose end is below its start"},
      {"[abc", "'[' without ']'"},
      {"(abc", "'(' without ')'"},
      {"abc)", "unbalanced ')'"},
      {"a^b", "'^' other than at the start"},
      {"a$b", "'$' other than at the end"},
      {"\\ud800", "it matches no text"},
      {"(a|b|c|d|e|f|g|h|i|j){1000}", "automaton states"},
      {"(.{0,30}){0,30}", "too costly to compile"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> s = CompileRegexConstraint(c.regex);
    ASSERT_FALSE(s.ok()) << c.regex;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message)) << c.regex;
  }
  EXPECT_THAT(std::string(CompileRegexConstraint(std::string(5000, 'a')).status().message()),
              HasSubstr("5000 bytes, at most 4096"));
}

}  // namespace
}  // namespace attnserve
