// `shardline compare` on damaged or absurd measured timelines (an unknown backend, an op
// recorded twice, a negative start, more iterations or ranks claimed than recorded) and on a
// non-finite --tolerance: each is exit 2 with one line naming MEASURED_DIR, the file and the
// JSON key (or the flag), never exit 1 ("over tolerance") and never a crash.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_fixtures.h"
#include "cli_test_support.h"

#include "core/timeline.h"

namespace fs = std::filesystem;

namespace shardline {
namespace {

using nlohmann::json;

Timeline timeline(double step_us, const std::string& source, int ranks = 1, int iterations = 1) {
  return clitest::two_op_timeline(step_us, source, ranks, iterations);
}

class CompareRobustCli : public clitest::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    write("pred", timeline_to_json(timeline(500, "predicted")));
    measured_ = timeline_to_json(timeline(500, "measured", 2, 2));
  }
  void write(const std::string& folder, const json& j) {
    fs::create_directories(dir_ / folder);
    std::ofstream(dir_ / folder / "timeline.json") << j.dump();
  }
  // Writes measured_ to meas/ and runs compare; expects exit 2 with one error line naming the
  // measured folder, its file and `key`, and no compare.json.
  void expect_refused(const std::string& key, const std::string& also = "") {
    write("meas", measured_);
    EXPECT_EQ(run("compare pred meas --tolerance 0.1").code, 2) << out_ << err_;
    EXPECT_EQ(err_.rfind("shardline compare: error: MEASURED_DIR: \"meas/timeline.json\": " + key + ": ", 0), 0u) << err_;
    EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
    if (!also.empty()) {
      EXPECT_NE(err_.find(also), std::string::npos) << err_;
    }
    EXPECT_EQ(err_.find("json.exception"), std::string::npos) << err_;
    EXPECT_FALSE(fs::exists(dir_ / "meas" / "compare.json"));
  }
  json measured_;
};

TEST_F(CompareRobustCli, ACompleteMultiRankTimelineStillCompares) {
  write("meas", measured_);
  EXPECT_EQ(run("compare pred meas --tolerance 0.1").code, 0) << out_ << err_;
  EXPECT_TRUE(fs::exists(dir_ / "meas" / "compare.json"));
}

TEST_F(CompareRobustCli, UnknownBackendExitsTwo) {
  measured_["backend"] = "tcp";
  expect_refused("backend", "\"tcp\"");
}

TEST_F(CompareRobustCli, AnOpRecordedTwiceExitsTwo) {
  measured_["intervals"].push_back(measured_["intervals"][2]);  // op 0, rank 0, iteration 1 again
  expect_refused("intervals[8]", "first at intervals[2]");
  // A repeat in place of a missing row keeps the count right; it is still found.
  measured_ = timeline_to_json(timeline(500, "measured", 2, 2));
  measured_["intervals"][3] = measured_["intervals"][2];  // op 1 of rank 0, iteration 1 lost; op 0 there twice
  expect_refused("intervals[3]", "recorded twice");
}

// Starts shifted 1200 us before the origin used to stretch the step window back past it and
// report about twice the real step (exit 1, "OVER").
TEST_F(CompareRobustCli, NegativeStartTimeExitsTwo) {
  for (auto& row : measured_["intervals"]) {
    row[4] = row[4].get<double>() - 1200;
    row[5] = row[5].get<double>() - 1200;
  }
  expect_refused("intervals[0][4]", "negative");
  // Rank 1 alone: its starts now precede their issue times (both on rank 1's clock).
  measured_ = timeline_to_json(timeline(500, "measured", 2, 2));
  for (size_t i = 4; i < 8; ++i) {
    measured_["intervals"][i][4] = measured_["intervals"][i][4].get<double>() - 1200;
    measured_["intervals"][i][5] = measured_["intervals"][i][5].get<double>() - 1200;
  }
  expect_refused("intervals[4][4]", "before it is issued");
  measured_ = timeline_to_json(timeline(500, "measured", 2, 2));
  measured_["intervals"][1][3] = -1.0;  // an issue time on rank 0
  expect_refused("intervals[1][3]", "negative");
}

// What exec writes on a loaded host: rank 1's clock aligned to rank 0's within milliseconds, so
// all of rank 1's times read early by the same offset. Nothing is stretched; it compares.
TEST_F(CompareRobustCli, AClockOffsetOnAnotherRankStillCompares) {
  for (size_t i = 4; i < 8; ++i)
    for (int col = 3; col < 6; ++col) measured_["intervals"][i][col] = measured_["intervals"][i][col].get<double>() - 2262;
  write("meas", measured_);
  EXPECT_EQ(run("compare pred meas --tolerance 0.1").code, 0) << out_ << err_;
}

TEST_F(CompareRobustCli, AbsurdIterationCountExitsTwo) {
  measured_["iterations"] = 2147483647;
  expect_refused("iterations", "2147483647");
}

// 2147483647 ranks: refused in constant time, before the metrics allocate anything per rank;
// under a 1 GiB address-space limit a 2 GiB per-rank table would not even fit (bad_alloc, abort).
TEST_F(CompareRobustCli, AbsurdRankCountExitsTwoBeforeAllocating) {
  measured_["ranks"] = 2147483647;
  write("meas", measured_);
  EXPECT_EQ(run_limited("1048576", "compare pred meas").code, 2) << err_;
  EXPECT_NE(err_.find("MEASURED_DIR: \"meas/timeline.json\": ranks: must be in [1, 1048576], found 2147483647"), std::string::npos) << err_;
  expect_refused("ranks", "2147483647");
}

TEST_F(CompareRobustCli, FewerIntervalsThanClaimedExitTwo) {
  measured_["intervals"].erase(measured_["intervals"].size() - 1);  // rank 1 lost its last row
  expect_refused("intervals", "2 ranks x 2 iterations x 2 ops");
  measured_ = timeline_to_json(timeline(500, "measured", 2, 2));
  measured_["iterations"] = 3;  // 12 rows claimed, 8 present
  expect_refused("intervals", "holds 8 intervals");
}

TEST_F(CompareRobustCli, NonFiniteToleranceExitsTwoNamingTheFlag) {
  write("meas", measured_);
  for (const char* t : {"inf", "nan", "-1"}) {
    EXPECT_EQ(run(std::string("compare pred meas --tolerance ") + t).code, 2) << t << out_ << err_;
    EXPECT_EQ(err_.rfind("shardline compare: error: --tolerance: ", 0), 0u) << t << err_;
    EXPECT_FALSE(fs::exists(dir_ / "meas" / "compare.json")) << t;
  }
}

}  // namespace
}  // namespace shardline
