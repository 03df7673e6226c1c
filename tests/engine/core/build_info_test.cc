#include "engine/core/build_info.h"

#include "gtest/gtest.h"

namespace attnserve {
namespace {

TEST(BuildInfoTest, ReportsOneDnn37AndAnIsa) {
  const EngineInfo info = GetEngineInfo();
  EXPECT_EQ(info.onednn_version.rfind("3.7.", 0), 0u) << info.onednn_version;
  EXPECT_FALSE(info.cpu_isa.empty());
  EXPECT_NE(info.cpu_isa, "other");
  EXPECT_GE(info.threads, 1);
}

TEST(BuildInfoTest, SetThreadsIsVisible) {
  SetEngineThreads(1);
  EXPECT_EQ(GetEngineInfo().threads, 1);
}

}  // namespace
}  // namespace attnserve
