// path_component: free text (a scenario name) made into one safe file or folder name.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "reports/outputs.h"

namespace shardline {
namespace {

namespace fs = std::filesystem;

TEST(PathComponent, KeepsSafeNamesAsTheyAre) {
  EXPECT_EQ(path_component("host-tiny-fsdp"), "host-tiny-fsdp");
  EXPECT_EQ(path_component("Llama3_8B.v2"), "Llama3_8B.v2");
}

TEST(PathComponent, ReplacesEverythingElseWithUnderscores) {
  EXPECT_EQ(path_component("x/../../../escaped"), "x_.._.._.._escaped");
  EXPECT_EQ(path_component("/etc/passwd"), "_etc_passwd");
  EXPECT_EQ(path_component("a\\b c\td\n"), "a_b_c_d_");
  EXPECT_EQ(path_component("l\xc3\xa9on"), "l__on");  // UTF-8 bytes too
  EXPECT_EQ(path_component(std::string("nul\0byte", 8)), "nul_byte");
}

TEST(PathComponent, NeverEmptyDotOrDotDot) {
  EXPECT_EQ(path_component(""), "_");
  EXPECT_EQ(path_component("."), "_");
  EXPECT_EQ(path_component(".."), "__");
  EXPECT_EQ(path_component("..."), "...");  // an ordinary name
  EXPECT_EQ(path_component("../"), ".._");
}

TEST(PathComponent, KeepsAtMostOneHundredBytes) {
  EXPECT_EQ(path_component(std::string(300, 'a')), std::string(100, 'a'));
}

// Joined to a folder, the result always stays a direct child of it, as validate uses it.
TEST(PathComponent, JoinedNameStaysInsideTheFolder) {
  const fs::path base = "/work/out";
  for (const std::string name : {"x/../../../escaped", "..", ".", "", "../..", "a/./b", "/", "~root", "-rf"}) {
    const fs::path joined = (base / ("validate-" + path_component(name))).lexically_normal();
    EXPECT_EQ(joined.parent_path(), base) << name;
    const fs::path bare = (base / path_component(name)).lexically_normal();
    EXPECT_EQ(bare.parent_path(), base) << name;
  }
}

}  // namespace
}  // namespace shardline
