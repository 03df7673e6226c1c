// A cut JSON text's value against jiter's partial mode, which the anthropic
// SDK uses to build a streamed tool_use block's input: every prefix of the
// documents in tools/golden/partial_json_jiter.py.
#include "server/http/partial_json.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

using nlohmann::json;

TEST(PartialJsonTest, EveryPrefixIsJitersValue) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/tool_calls/partial_json_jiter.json");
  ASSERT_TRUE(in.good()) << "run tools/golden/partial_json_jiter.py";
  const json doc = json::parse(in);
  int values = 0;
  for (const json& c : doc["cases"]) {
    const std::string prefix = c["prefix"];
    const std::optional<nlohmann::ordered_json> got = PartialJsonValue(prefix);
    if (c["value"].is_null()) {
      EXPECT_FALSE(got.has_value()) << prefix;
      continue;
    }
    ++values;
    ASSERT_TRUE(got.has_value()) << prefix;
    EXPECT_EQ(json::parse(got->dump()), c["value"]) << prefix;
  }
  EXPECT_GT(values, 400);
}

TEST(PartialJsonTest, KeyOrderIsKeptAndWhatIsNoJsonIsRefused) {
  EXPECT_EQ(PartialJsonValue(R"({"b": 1, "a": [true, {"z": "y", "c)")->dump(), R"({"b":1,"a":[true,{"z":"y"}]})");
  for (const char* bad : {R"({"a" 1})", R"({a: 1})", R"([1 2])", R"({"a": tx)", R"({"a": 1}})", R"({"a": +1})"}) {
    EXPECT_FALSE(PartialJsonValue(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace attnserve
