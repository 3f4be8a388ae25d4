// `shardline validate` names its default output folder after the scenario; a scenario name that
// is a path ("x/../../escaped") must not make it write outside the working directory. A profile
// that does not load stops validate right after it made the folder, before any mpirun, and the
// folder it made, still empty, goes again.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

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

// validate's own flags and calibrate's are checked before anything starts under mpirun: one
// line on stderr, exit 2, no folder. A profile of another backend than the run's is refused.
TEST_F(ValidateRobustCli, BadFlagsAreOneMessageBeforeMpirun) {
  // A loadable profile calibrated with nccl (the numbers do not matter here).
  std::ofstream(dir_ / "nccl-profile.json") << R"({"format": "shardline-profile-1", "backend": "nccl", "machine": "test", "created": "2026-11-25T00:00:00Z",  "collective_noise": 0.1, "comm_slowdown_during_compute": 1.0, "compute_slowdown_during_comm": 1.0, "copy_slowdown_during_comm": 1.0, "comm_slowdown_during_copy": 1.0, "compute_overhead_us": 5, "copy_bandwidth_bytes_per_s": 1e10, "copy_latency_us": 1, "event_latency_us": 1, "issue_overhead_us": 1,  "collectives": [{"collective": "all_gather", "group_size": 2, "sizes_bytes": [1024, 2048], "times_us": [10, 12], "relative_spread": [0.1, 0.1], "alpha_us": 8, "beta_us_per_byte": 0.002},                  {"collective": "reduce_scatter", "group_size": 2, "sizes_bytes": [1024, 2048], "times_us": [10, 12], "relative_spread": [0.1, 0.1], "alpha_us": 8, "beta_us_per_byte": 0.002},                  {"collective": "all_reduce", "group_size": 2, "sizes_bytes": [1024, 2048], "times_us": [10, 12], "relative_spread": [0.1, 0.1], "alpha_us": 8, "beta_us_per_byte": 0.002}]})";
  const std::string s = scenario("host-tiny-fsdp.json");
  const std::string out = " --out " + (dir_ / "v").string();
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {" --warmup -2", "--warmup: must be in [0, 1024], got -2"},
           {" --repetitions 0", "--repetitions: must be in [1, 10000], got 0"},
           {" --passes 0", "--passes: must be in [1, 100], got 0"},
           // A calibration that would run for days (it did, unbounded).
           {" --repetitions 100000000", "--repetitions: must be in [1, 10000], got 100000000"},
           {" --passes 100000", "--passes: must be in [1, 100], got 100000"},
           {" --max-bytes 1KiB --np 2", "--max-bytes: leaves fewer than two sizes"},
           {" --compute bogus", "--compute: expected sleep, spin or kernel"},
           {" --compute kernel", "--compute: kernel stand-ins need --backend nccl"},
           {" --backend nccl", "--backend: "},
           {" --profile " + (dir_ / "nccl-profile.json").string() + " --repetitions 3", "--repetitions: calibrate measures nothing with --profile"},
           {" --profile " + (dir_ / "nccl-profile.json").string() + " --passes 3", "--passes: calibrate measures nothing with --profile"},
           {" --profile " + (dir_ / "nccl-profile.json").string() + " --no-drift-check", "--no-drift-check: calibrate measures nothing with --profile"},
           {" --profile " + (dir_ / "nccl-profile.json").string(), "was calibrated with --backend nccl, and validate measures with --backend mpi"},
           // exec cannot slow a real link: a prediction with one would be judged against a run without.
           {" --set 'variation.slow_links=[{\"rank\": 1, \"bandwidth_factor\": 0.5}]'",
            "variation.slow_links: validate compares the prediction with a real run, and exec cannot slow a real link"}}) {
    const auto r = run("validate " + s + out + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "v")) << args;
  }
}

}  // namespace
