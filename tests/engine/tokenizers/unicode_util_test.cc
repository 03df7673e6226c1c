// Grapheme clusters (what the Precompiled normalizer rewrites whole): the
// fast path for text below U+0300 agrees with ICU's break iterator, which
// keeps combining marks, regional-indicator pairs and CR LF together.
#include <string>
#include <vector>

#include "engine/tokenizers/unicode_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;

TEST(GraphemeStartsTest, ClustersAsUax29) {
  EXPECT_THAT(GraphemeStarts(U""), ElementsAre(0));
  EXPECT_THAT(GraphemeStarts(U"ab"), ElementsAre(0, 1, 2));
  EXPECT_THAT(GraphemeStarts(U"a\r\nb"), ElementsAre(0, 1, 3, 4));       // the fast path
  EXPECT_THAT(GraphemeStarts(U"a\r\nb\u0301"), ElementsAre(0, 1, 3, 5));  // ICU's, same CR LF rule
  EXPECT_THAT(GraphemeStarts(U"e\u0301\u0302x"), ElementsAre(0, 3, 4));
  EXPECT_THAT(GraphemeStarts(U"\U0001F1FA\U0001F1F8\U0001F1EBa"), ElementsAre(0, 2, 3, 4));  // flags pair up
  EXPECT_THAT(GraphemeStarts(U"\U0001F469\u200D\U0001F4BBz"), ElementsAre(0, 3, 4));  // a ZWJ sequence
}

}  // namespace
}  // namespace attnserve
