// Tool calls read as the answer comes, tool_choice "required"'s list and
// "auto"'s one call: strings with braces and escapes inside arguments,
// nested values, names with escapes, and text that leaves the form.
#include "server/http/tool_calls_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

using Piece = ToolCallsReader::Piece;

// Every call's name and arguments, the text fed in pieces of `step` bytes.
std::vector<std::pair<std::string, std::string>> Read(const std::string& text, size_t step,
                                                      ToolCallsReader* reader) {
  std::vector<std::pair<std::string, std::string>> calls;
  for (size_t at = 0; at < text.size(); at += step) {
    std::vector<Piece> pieces;
    reader->Feed(text.substr(at, step), &pieces);
    for (const Piece& p : pieces) {
      if (p.opens) {
        EXPECT_EQ(p.index, static_cast<int>(calls.size()));
        calls.push_back({p.name, ""});
      }
      EXPECT_LT(p.index, static_cast<int>(calls.size()));
      calls[p.index].second += p.arguments;
    }
  }
  return calls;
}

TEST(ToolCallsReaderTest, ArgumentsEndWhereTheirObjectDoes) {
  const std::string text =
      R"([{"name": "a", "parameters": {"s": "} ] { [ \" \\", "n": [1, {"x": []}], "e": {}}}, )"
      R"({"name": "b\"c", "parameters": {}}])";
  for (size_t step : {size_t{1}, size_t{2}, size_t{7}, text.size()}) {
    ToolCallsReader reader;
    const auto calls = Read(text, step, &reader);
    ASSERT_EQ(calls.size(), 2u) << step;
    EXPECT_EQ(calls[0].first, "a");
    EXPECT_EQ(calls[0].second, R"({"s": "} ] { [ \" \\", "n": [1, {"x": []}], "e": {}})");
    EXPECT_EQ(calls[1].first, "b\"c");  // the name decoded
    EXPECT_EQ(calls[1].second, "{}");
    EXPECT_TRUE(reader.complete()) << step;
    EXPECT_FALSE(reader.broken());
    EXPECT_EQ(reader.calls(), 2);
  }
}

TEST(ToolCallsReaderTest, CutShortOrOffTheForm) {
  ToolCallsReader cut;
  auto calls = Read(R"([{"name": "a", "parameters": {"s": "x)", 3, &cut);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].second, R"({"s": "x)");
  EXPECT_FALSE(cut.complete());
  EXPECT_FALSE(cut.broken());
  for (const std::string bad : {R"({"name": "a"})", R"([{"name":"a"})", R"([{"name": "a", "parameters": []}])",
                                R"([{"name": "a", "parameters": {}}] x)", R"([{"name": "a", "parameters": {}};)"}) {
    ToolCallsReader reader;
    Read(bad, 1, &reader);
    EXPECT_TRUE(reader.broken()) << bad;
    EXPECT_FALSE(reader.complete()) << bad;
  }
}

TEST(ToolCallsReaderTest, OneCallEndsWithItsObject) {
  const std::string text = R"({"name": "get_weather", "parameters": {"city": "{Paris}", "days": [1, {"n": 2}]}})";
  for (size_t step : {size_t{1}, size_t{5}, text.size()}) {
    ToolCallsReader reader(ToolCallsReader::Form::kOneCall);
    const auto calls = Read(text, step, &reader);
    ASSERT_EQ(calls.size(), 1u) << step;
    EXPECT_EQ(calls[0].first, "get_weather");
    EXPECT_EQ(calls[0].second, R"({"city": "{Paris}", "days": [1, {"n": 2}]})");
    EXPECT_TRUE(reader.complete()) << step;
  }
  ToolCallsReader cut(ToolCallsReader::Form::kOneCall);
  Read(R"({"name": "a", "parameters": {"x": 1)", 2, &cut);
  EXPECT_EQ(cut.calls(), 1);
  EXPECT_FALSE(cut.complete() || cut.broken());
  // One call only: the list's form, a second call or more text leave it.
  for (const std::string bad : {R"([{"name": "a", "parameters": {}}])", R"({"name": "a", "parameters": {}}; {)",
                                R"({"name": "a", "parameters": {}}, )", R"({"name": "a", "arguments": {}})"}) {
    ToolCallsReader reader(ToolCallsReader::Form::kOneCall);
    Read(bad, 1, &reader);
    EXPECT_TRUE(reader.broken()) << bad;
  }
}

}  // namespace
}  // namespace attnserve
