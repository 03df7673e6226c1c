#include "engine/tokenizers/stop_strings.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Feeds chunks; returns everything emitted and the stop index (-1: none).
std::pair<std::string, int> Feed(std::vector<std::string> stops, const std::vector<std::string>& chunks) {
  StopStringMatcher m(std::move(stops));
  std::string out;
  for (const std::string& c : chunks) {
    StopStringMatcher::Result r = m.Push(c);
    out += r.text;
    if (r.stopped) return {out, r.stop_index};
  }
  return {out + m.Flush(), -1};
}

TEST(StopStringMatcherTest, NoStopPassesEverythingThrough) {
  EXPECT_EQ(Feed({"END"}, {"Once ", "upon ", "a time"}), (std::pair<std::string, int>{"Once upon a time", -1}));
  EXPECT_EQ(Feed({}, {"a", "b"}), (std::pair<std::string, int>{"ab", -1}));
}

TEST(StopStringMatcherTest, StopInsideOneChunk) {
  EXPECT_EQ(Feed({"Lily"}, {"a girl named Lily. She"}), (std::pair<std::string, int>{"a girl named ", 0}));
}

TEST(StopStringMatcherTest, StopStraddlingChunksIsHeldAndCaught) {
  StopStringMatcher m({"Lily"});
  auto r1 = m.Push("named L");
  EXPECT_EQ(r1.text, "named ");  // "L" could start "Lily"
  EXPECT_EQ(m.held_bytes(), 1u);
  auto r2 = m.Push("i");
  EXPECT_EQ(r2.text, "");
  auto r3 = m.Push("ly.");
  EXPECT_TRUE(r3.stopped);
  EXPECT_EQ(r3.text, "");
  EXPECT_TRUE(m.Push("more").stopped);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopStringMatcherTest, IncludeStopReleasesTheStopButNotWhatFollows) {
  StopStringMatcher m({"\n\n", "Lily"}, /*include_stop=*/true);
  EXPECT_EQ(m.Push("named L").text, "named ");
  StopStringMatcher::Result r = m.Push("ily. She");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 1);
  EXPECT_EQ(r.text, "Lily");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopStringMatcherTest, FalseStartIsReleased) {
  StopStringMatcher m({"Lily"});
  EXPECT_EQ(m.Push("Li").text, "");
  EXPECT_EQ(m.Push("ke").text, "Like");  // not a stop after all
  EXPECT_EQ(m.Push(" L").text, " ");
  EXPECT_EQ(m.Flush(), "L");
}

TEST(StopStringMatcherTest, EarliestOfSeveralStopsWins) {
  EXPECT_EQ(Feed({"ball", "\n\n", "red"}, {"a big, re", "d ball\n\nx"}),
            (std::pair<std::string, int>{"a big, ", 2}));
  EXPECT_EQ(Feed({"", "x"}, {"abxc"}), (std::pair<std::string, int>{"ab", 1}));  // empty stops ignored
}

TEST(StopStringMatcherTest, OverlappingPrefixesHoldTheLongestCandidate) {
  // "aab" inside "aaab": held text must allow the match to start late.
  EXPECT_EQ(Feed({"aab"}, {"a", "a", "a", "b"}), (std::pair<std::string, int>{"a", 0}));
  // Multi-byte stop split inside a character (the detokenizer gives whole
  // characters, but byte splits are handled too).
  EXPECT_EQ(Feed({"é!"}, {"caf\xC3", "\xA9!"}), (std::pair<std::string, int>{"caf", 0}));
}

}  // namespace
}  // namespace attnserve
