// `shardline regress` and `shardline track` on bad input: impossible metrics values, two empty
// folders, an unknown backend, a damaged history file and a history path that is a folder.
// Each is exit 2 with one line naming the file and key (or the flag), and nothing is written.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_fixtures.h"
#include "cli_test_support.h"

namespace fs = std::filesystem;

namespace {

using shardline::clitest::slurp;

using shardline::clitest::metrics_json;
const auto& metrics = metrics_json;

class RobustCli : public shardline::clitest::CliTest {
 protected:
  void write(const std::string& rel, const std::string& text) { write_text(rel, text); }
  void write(const std::string& rel, const nlohmann::json& j) { write_text(rel, j.dump(1)); }
  // Exit 2 and exactly one error line that starts with `prefix`.
  void expect_error(const shardline::clitest::Result& r, const std::string& prefix) {
    EXPECT_EQ(r.code, 2) << out_ << err_;
    EXPECT_EQ(err_.rfind(prefix, 0), 0u) << err_;
    EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
  }
};

using RegressRobustCli = RobustCli;
using TrackRobustCli = RobustCli;

// Used to be "improved" (exit 0): a faster-than-possible step and an efficiency above 1.
TEST_F(RegressRobustCli, ImpossibleCurrentMetricsExitTwoNamingFileAndKey) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(-5, 0, 0.9));
  expect_error(run("regress --baseline base --current cur"), "shardline regress: error: cur/a.json: ");
  EXPECT_NE(err_.find("step_time_us: must be a time in (0, 1e+15] us (31 years), found -5"), std::string::npos) << err_;

  write("cur/a.json", metrics(1000, 100, 2));
  expect_error(run("regress --baseline base --current cur"), "shardline regress: error: cur/a.json: ");
  EXPECT_NE(err_.find("overlap_efficiency: must be in [0, 1], found 2"), std::string::npos) << err_;

  nlohmann::json m = metrics(1000, 100, 0.9);
  m["exposed_comm_us"] = -1;
  write("cur/a.json", m);
  expect_error(run("regress --baseline base --current cur"), "shardline regress: error: cur/a.json: ");
  EXPECT_NE(err_.find("exposed_comm_us"), std::string::npos) << err_;

  m = metrics(1000, 100, 0.9);
  m["by_kind"]["all_gather"] = {{"count", 2}, {"bytes", 64}, {"busy_us", -3}};
  write("cur.json", m);
  write("base.json", metrics(1000, 100, 0.9));
  expect_error(run("regress --baseline base.json --current cur.json"), "shardline regress: error: cur.json: ");
  EXPECT_NE(err_.find("by_kind.all_gather.busy_us"), std::string::npos) << err_;
}

TEST_F(RegressRobustCli, ImpossibleBaselineMetricsExitTwoToo) {
  write("base.json", metrics(0, 0, 0.9));
  write("cur.json", metrics(1000, 100, 0.9));
  expect_error(run("regress --baseline base.json --current cur.json"), "shardline regress: error: base.json: ");
  EXPECT_NE(err_.find("step_time_us"), std::string::npos) << err_;
}

TEST_F(RegressRobustCli, TwoEmptyFoldersExitTwoSayingNothingWasCompared) {
  fs::create_directories(dir_ / "base");
  fs::create_directories(dir_ / "cur");
  write("cur/notes.txt", std::string("not metrics\n"));
  expect_error(run("regress --baseline base --current cur"), "shardline regress: error: --current: ");
  EXPECT_NE(err_.find("nothing was compared"), std::string::npos) << err_;
  EXPECT_EQ(out_.find("pass"), std::string::npos) << out_;
}

TEST_F(TrackRobustCli, UnknownBackendExitsTwoAndRecordsNothing) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  expect_error(run("track run --history h.jsonl --commit abc --backend tcp"), "shardline track: error: --backend: ");
  EXPECT_NE(err_.find("\"tcp\" is not a backend"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "h.jsonl"));
  // The same from the run folder's timeline.json.
  write("run/timeline.json", nlohmann::json{{"scenario", "tiny"}, {"backend", "tcp"}});
  expect_error(run("track run --history h.jsonl --commit abc"), "shardline track: error: --backend: ");
  EXPECT_NE(err_.find("run/metrics.json"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "h.jsonl"));
  EXPECT_EQ(run("track run --history h.jsonl --commit abc --backend nccl").code, 0) << err_;
}

TEST_F(TrackRobustCli, AMalformedHistoryLineIsRefusedAndTheFileLeftAlone) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  ASSERT_EQ(run("track run --history h.jsonl --commit abc --backend sim").code, 0) << err_;
  const std::string damaged = slurp(dir_ / "h.jsonl") + "{\"scenario\": \"cut short\n";
  write("h.jsonl", damaged);
  expect_error(run("track run --history h.jsonl --commit def --backend sim"), "shardline track: error: h.jsonl:2: ");
  EXPECT_EQ(slurp(dir_ / "h.jsonl"), damaged);
  // A valid line with no final newline is completed, not glued to the next record.
  const std::string one = slurp(dir_ / "h.jsonl").substr(0, damaged.find('\n'));
  write("h.jsonl", one);
  ASSERT_EQ(run("track run --history h.jsonl --commit def --backend sim").code, 0) << err_;
  EXPECT_EQ(run("track --history h.jsonl --html trend.html").code, 0) << err_;
  EXPECT_NE(out_.find("(2 records)"), std::string::npos) << out_;
}

// --html is checked before the record is appended: a failed page must not leave a record that
// the corrected command then duplicates.
TEST_F(TrackRobustCli, AnHtmlPathInAMissingFolderExitsTwoAndRecordsNothing) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  expect_error(run("track run --history h.jsonl --commit abc --backend sim --html no/such/folder/t.html"),
               "shardline track: error: --html: ");
  EXPECT_NE(err_.find("does not exist"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "h.jsonl"));
  ASSERT_EQ(run("track run --history h.jsonl --commit abc --backend sim --html t.html").code, 0) << err_;
  EXPECT_NE(out_.find("(1 record)"), std::string::npos) << out_;
}

// A record that cannot be appended (the history's folder is missing) leaves the page as it was:
// the page never shows a record that the history lacks.
TEST_F(TrackRobustCli, AHistoryThatCannotBeAppendedToLeavesThePageAsItWas) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  write("t.html", std::string("the old page\n"));
  expect_error(run("track run --history no/such/folder/h.jsonl --commit abc --backend sim --html t.html"),
               "shardline track: error: --history: ");
  EXPECT_EQ(slurp(dir_ / "t.html"), "the old page\n");
  EXPECT_FALSE(fs::exists(dir_ / "no"));
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir_)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"run", "stderr", "stdout", "t.html"}));  // no temporary page (the fixture keeps stdout, stderr)
}

// A timeline.json beside the metrics that cannot be read is named, not reported missing.
TEST_F(TrackRobustCli, AMalformedTimelineBesideTheMetricsIsNamed) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  write("run/timeline.json", std::string("{\"scenario\": \"cut"));
  expect_error(run("track run --history h.jsonl --commit abc"), "shardline track: error: METRICS: ");
  EXPECT_NE(err_.find("run/timeline.json\" is not a JSON object"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "h.jsonl"));
}

// --update-baseline under a path that cannot be a folder: exit 2 naming --baseline (it aborted).
TEST_F(RegressRobustCli, ABaselineUnderAFileExitsTwo) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  write("afile", std::string("x"));
  expect_error(run("regress --baseline afile/x.json --current run/metrics.json --update-baseline"),
               "shardline regress: error: --baseline: ");
  EXPECT_NE(err_.find("cannot create the folder"), std::string::npos) << err_;
}

// --html naming the history file itself once overwrote the history with the page (exit 0).
TEST_F(TrackRobustCli, AnHtmlPathThatIsTheHistoryExitsTwoAndLeavesItAlone) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  ASSERT_EQ(run("track run --history h.jsonl --commit abc --backend sim").code, 0) << err_;
  const std::string before = slurp(dir_ / "h.jsonl");
  expect_error(run("track run --history h.jsonl --commit def --backend sim --html ./h.jsonl"), "shardline track: error: --html: ");
  EXPECT_NE(err_.find("is also this command's input"), std::string::npos) << err_;
  EXPECT_EQ(slurp(dir_ / "h.jsonl"), before);
  // Nor the metrics file a run folder stands for (the folder is resolved first).
  expect_error(run("track run --history h.jsonl --commit def --backend sim --html run/metrics.json"), "shardline track: error: --html: ");
  EXPECT_EQ(slurp(dir_ / "h.jsonl"), before);
  // A symlink named as the page is replaced, not followed: the history it points to stays whole.
  fs::create_symlink("h.jsonl", dir_ / "link.html");
  ASSERT_EQ(run("track --history h.jsonl --html link.html").code, 0) << err_;
  EXPECT_EQ(slurp(dir_ / "h.jsonl"), before);
  // A history record of a backend track would refuse is named by its line.
  write("h.jsonl", before + R"({"scenario": "a", "commit": "c", "time": "t", "backend": "tpu", "metrics": )" +
                       metrics(1000, 100, 0.9).dump() + "}\n");
  expect_error(run("track --history h.jsonl --html t.html"), "shardline track: error: h.jsonl:2: ");
  EXPECT_NE(err_.find("\"tpu\" is not a backend"), std::string::npos) << err_;
}

// A step time edited apart from its throughput read as other work, and the step went unjudged: a
// hand-made slower baseline passed. tokens/s x step is a whole number in any file shardline wrote.
TEST_F(RegressRobustCli, AStepTimeThatDisagreesWithItsThroughputExitsTwo) {
  nlohmann::json m = metrics(1000, 100, 0.9);
  m["throughput"] = {{"samples_per_s", nullptr}, {"tokens_per_s", 1024.0 / 1e-3}, {"tokens_per_s_per_gpu", 512.0 / 1e-3},
                     {"model_tflops_per_gpu", nullptr}, {"mfu", nullptr}, {"hfu", nullptr}};
  write("cur.json", m);
  m["step_time_us"] = 980.0;  // "a faster baseline", throughput left as it was
  write("base.json", m);
  expect_error(run("regress --baseline base.json --current cur.json"), "shardline regress: error: base.json: ");
  EXPECT_NE(err_.find("1003.520 tokens per step, not a whole number"), std::string::npos) << err_;
  // At a real step's million tokens too (a relative tolerance once passed anything there).
  m["throughput"]["tokens_per_s"] = 1048576.0 / 1e-3;
  m["step_time_us"] = 950.0;
  write("base.json", m);
  expect_error(run("regress --baseline base.json --current cur.json"), "shardline regress: error: base.json: ");
  EXPECT_NE(err_.find("996147.200 tokens per step"), std::string::npos) << err_;
}

// A difference of rounding (a time through text and nanoseconds) is "ok" with "+0.00%", not
// "improved" with "-0.00%".
TEST_F(RegressRobustCli, ARoundingDifferenceIsOkNotImproved) {
  write("base.json", metrics(1000, 100, 0.9));
  write("cur.json", metrics(1000 * (1 - 1e-12), 100, 0.9));
  ASSERT_EQ(run("regress --baseline base.json --current cur.json").code, 0) << err_;
  EXPECT_EQ(out_.find("improved"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("-0.00%"), std::string::npos) << out_;
  write("cur.json", metrics(990, 100, 0.9));  // a real improvement still says so
  ASSERT_EQ(run("regress --baseline base.json --current cur.json").code, 0) << err_;
  EXPECT_NE(out_.find("improved"), std::string::npos) << out_;
}

// A folder holding NAME.json and NAME/metrics.json was judged by whichever it listed last.
TEST_F(RegressRobustCli, TwoMetricsOfOneNameInAFolderExitTwo) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(1500, 100, 0.9));
  write("cur/a/metrics.json", metrics(1000, 100, 0.9));
  expect_error(run("regress --baseline base --current cur"), "shardline regress: error: --current: ");
  EXPECT_NE(err_.find("are both the metrics of \"a\""), std::string::npos) << err_;
  // --update-baseline keeps a baseline where it is kept (NAME/metrics.json), not beside it.
  fs::remove_all(dir_ / "base");
  fs::remove(dir_ / "cur" / "a" / "metrics.json");
  fs::remove(dir_ / "cur" / "a");
  write("base/a/metrics.json", metrics(1000, 100, 0.9));
  ASSERT_EQ(run("regress --baseline base --current cur --update-baseline").code, 0) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "base" / "a.json"));
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "base" / "a" / "metrics.json"))["step_time_us"], 1500);
  EXPECT_EQ(run("regress --baseline base --current cur").code, 0) << err_;
}

TEST_F(TrackRobustCli, AHistoryThatIsAFolderExitsTwo) {
  fs::create_directories(dir_ / "hist");
  expect_error(run("track --history hist --html trend.html"), "shardline track: error: --history: ");
  EXPECT_NE(err_.find("is a directory"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "trend.html"));
  write("run/metrics.json", metrics(1000, 100, 0.9));
  expect_error(run("track run --history hist --commit abc --backend sim"), "shardline track: error: --history: ");
  EXPECT_TRUE(fs::is_empty(dir_ / "hist"));
}

}  // namespace
