// `shardline validate` names its default output folder after the scenario; a scenario name that
// is a path ("x/../../escaped") must not make it write outside the working directory. A profile
// that does not load stops validate right after it made the folder, before any mpirun, and the
// folder it made, still empty, goes again.
#include <gtest/gtest.h>

#include "cli_test_support.h"

namespace fs = std::filesystem;

namespace {

using shardline::clitest::scenario;
using shardline::clitest::slurp;

class ValidateRobustCli : public shardline::clitest::CliTest {};

TEST_F(ValidateRobustCli, AScenarioNameThatIsAPathStaysOneFolderInside) {
  fs::create_directories(dir_ / "work");
  std::ofstream(dir_ / "not-a-profile.json") << "{}";
  const std::string cmd = "cd " + (dir_ / "work").string() + " && " + SHARDLINE_BINARY + " validate " +
                          scenario("host-tiny-fsdp.json") +
                          " --set 'name=x/../../escaped' --profile ../not-a-profile.json >/dev/null 2>" +
                          (dir_ / "stderr").string();
  const int status = std::system(cmd.c_str());
  const std::string err = slurp(dir_ / "stderr");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 2) << err;
  EXPECT_EQ(err.rfind("shardline validate: error: --profile: ", 0), 0u) << err;
  EXPECT_FALSE(fs::exists(dir_ / "escaped"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "work")) ++entries;
  EXPECT_EQ(entries, 0u);  // the empty folder of the failed run is gone, and nothing else was made
  size_t outside = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++outside;
  EXPECT_EQ(outside, 3u);  // work/, not-a-profile.json, stderr
}

}  // namespace
