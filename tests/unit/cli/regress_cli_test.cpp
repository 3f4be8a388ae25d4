// `shardline regress` exit codes (regression 1, improvement 0, missing baseline 2,
// --update-baseline) and `shardline track` (append, render) end to end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixtures.h"
#include "cli_test_support.h"

namespace fs = std::filesystem;

namespace {

using shardline::clitest::slurp;

using shardline::clitest::metrics_json;
const auto& metrics = metrics_json;

class RegressCli : public shardline::clitest::CliTest {
 protected:
  void write(const std::string& rel, const nlohmann::json& j) { write_text(rel, j.dump(1)); }
};

TEST_F(RegressCli, InjectedRegressionExitsOne) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("base/b.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(1000, 100, 0.9));
  write("cur/b.json", metrics(1000, 100, 0.85));  // overlap drops 0.05
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0.01").code, 1) << out_ << err_;
  EXPECT_NE(out_.find("REGRESSED (overlap efficiency)"), std::string::npos) << out_;
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0.1").code, 0) << out_ << err_;
}

// A grown peak allocated memory fails the check like a longer step (the shipped baselines' memory
// had gone stale while regress looked only at time).
TEST_F(RegressCli, GrownPeakMemoryExitsOne) {
  write("base.json", metrics(1000, 100, 0.9));
  nlohmann::json grown = metrics(1000, 100, 0.9);
  grown["peak_memory_bytes"] = (1 << 30) + (1 << 28);  // +25%
  write("cur.json", grown);
  EXPECT_EQ(run("regress --baseline base.json --current cur.json --tolerance 0.2").code, 1) << out_ << err_;
  EXPECT_NE(out_.find("REGRESSED (peak memory)"), std::string::npos) << out_;
  EXPECT_EQ(run("regress --baseline base.json --current cur.json --tolerance 0.3").code, 0) << out_ << err_;
}

// A baseline file against a run's output folder (as `track` takes) reads the folder's
// metrics.json; a folder without one is refused naming what regress takes. A bad tolerance is
// quoted.
TEST_F(RegressCli, AFileAgainstARunFolderReadsItsMetrics) {
  write("base.json", metrics(1000, 100, 0.9));
  write("run/metrics.json", metrics(1200, 100, 0.9));
  EXPECT_EQ(run("regress --baseline base.json --current run --tolerance 0.01").code, 1) << out_ << err_;
  EXPECT_NE(out_.find("REGRESSED (step time)"), std::string::npos) << out_;
  EXPECT_EQ(out_.rfind("scenario", 0), 0u) << out_;
  EXPECT_NE(out_.find("\nrun "), std::string::npos) << out_;  // the row is named after the folder
  // Two run folders compare as two files.
  write("run0/metrics.json", metrics(1000, 100, 0.9));
  EXPECT_EQ(run("regress --baseline run0 --current run --tolerance 0.01").code, 1) << out_ << err_;
  EXPECT_NE(out_.find("REGRESSED (step time)"), std::string::npos) << out_;
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(run("regress --baseline base.json --current empty").code, 2);
  EXPECT_NE(err_.find("a file and a run's output folder (with its metrics.json)"), std::string::npos) << err_;
  EXPECT_EQ(run("regress --baseline base.json --current run --tolerance -1").code, 2);
  EXPECT_NE(err_.find("--tolerance: -1: must be a relative error in [0, 1e6]"), std::string::npos) << err_;
  EXPECT_EQ(run("regress --baseline base.json --current run --tolerance 1e308").code, 2);  // was "within inf%"
  EXPECT_NE(err_.find("--tolerance: 1e+308: must be a relative error in [0, 1e6]"), std::string::npos) << err_;
}

// --update-baseline takes a run's output folder as its metrics.json too, on either side: the
// folder's other files (program.json, timeline.json) are never read as metrics.
TEST_F(RegressCli, UpdateBaselineFromARunFolder) {
  write("run/metrics.json", metrics(1200, 100, 0.9));
  write("run/program.json", nlohmann::json{{"ops", nlohmann::json::array()}});
  ASSERT_EQ(run("regress --baseline base.json --current run --update-baseline").code, 0) << err_;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "base.json")), metrics(1200, 100, 0.9));
  EXPECT_EQ(run("regress --baseline base.json --current run --tolerance 0").code, 0) << out_ << err_;
  // A run folder as the baseline: its metrics.json is rewritten, nothing is added beside it.
  write("old/metrics.json", metrics(1000, 100, 0.9));
  ASSERT_EQ(run("regress --baseline old --current run --update-baseline").code, 0) << err_;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "old" / "metrics.json")), metrics(1200, 100, 0.9));
  EXPECT_FALSE(fs::exists(dir_ / "old" / "run.json"));
}

TEST_F(RegressCli, ImprovementExitsZero) {
  write("base.json", metrics(1000, 100, 0.9));
  write("cur.json", metrics(900, 10, 0.99));
  EXPECT_EQ(run("regress --baseline base.json --current cur.json --tolerance 0").code, 0) << out_ << err_;
  EXPECT_NE(out_.find("improved"), std::string::npos) << out_;
}

TEST_F(RegressCli, MissingBaselineExitsTwoAndMissingScenarioOne) {
  write("cur/a.json", metrics(1000, 100, 0.9));
  EXPECT_EQ(run("regress --baseline nowhere --current cur").code, 2);
  EXPECT_NE(err_.find("--baseline"), std::string::npos) << err_;
  write("base/a.json", metrics(1000, 100, 0.9));
  write("base/gone.json", metrics(1000, 100, 0.9));
  EXPECT_EQ(run("regress --baseline base --current cur").code, 1);
  EXPECT_NE(out_.find("gone: no current metrics"), std::string::npos) << out_;
}

// A bad file among the current metrics leaves the baseline as it was: none of it is written.
TEST_F(RegressCli, UpdateBaselineWritesNothingWhenOneFileIsBad) {
  write("cur/a.json", metrics(2000, 900, 0.1));
  write("cur/b.json", "{\"step_time_us\": -5}");
  EXPECT_EQ(run("regress --baseline base --current cur --update-baseline").code, 2);
  EXPECT_NE(err_.find("b.json"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "base")) << "a baseline was written before the bad file was found";
}

TEST_F(RegressCli, UpdateBaselineThenPasses) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(2000, 900, 0.1));
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0").code, 1);
  EXPECT_EQ(run("regress --baseline base --current cur --update-baseline").code, 0) << err_;
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0").code, 0) << out_;
}

TEST_F(RegressCli, TrackAppendsAndRenders) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  write("run/timeline.json", {{"scenario", "tiny"}, {"backend", "sim"}});
  EXPECT_EQ(run("track run --history h.jsonl --commit abc").code, 0) << err_;
  // An empty --commit is named as given, not taken for a missing git repository.
  EXPECT_EQ(run("track run --history h.jsonl --commit ''").code, 2);
  EXPECT_NE(err_.find("--commit: is empty"), std::string::npos) << err_;
  // A record is one line: a newline or a tab in its labels is refused, as is a blank name.
  EXPECT_EQ(run("track run --history h.jsonl --commit \"$(printf 'a b\\nc')\"").code, 2);
  EXPECT_NE(err_.find("--commit: contains a control character (byte 10)"), std::string::npos) << err_;
  EXPECT_EQ(run("track run --history h.jsonl --commit abc --scenario \"$(printf 'a\\tb')\"").code, 2);
  EXPECT_NE(err_.find("--scenario: contains a control character (byte 9)"), std::string::npos) << err_;
  EXPECT_EQ(run("track run --history h.jsonl --commit abc --scenario ''").code, 2);
  EXPECT_NE(err_.find("--scenario: is blank"), std::string::npos) << err_;
  write("run/metrics.json", metrics(900, 50, 0.95));
  EXPECT_EQ(run("track run/metrics.json --history h.jsonl --commit def --html trend.html").code, 0) << err_;
  const std::string hist = slurp(dir_ / "h.jsonl");
  ASSERT_EQ(std::count(hist.begin(), hist.end(), '\n'), 2);
  const auto second = nlohmann::json::parse(hist.substr(hist.find('\n') + 1));
  EXPECT_EQ(second["scenario"], "tiny");
  EXPECT_EQ(second["backend"], "sim");
  EXPECT_EQ(second["commit"], "def");
  EXPECT_EQ(second["metrics"]["step_time_us"], 900);
  EXPECT_EQ(second["time"].get<std::string>().back(), 'Z');
  const std::string html = slurp(dir_ / "trend.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("tiny: overlap efficiency"), std::string::npos);
  // No backend to be found and none given: a clear error, nothing appended.
  write("bare.json", metrics(1, 0, 1));
  EXPECT_EQ(run("track bare.json --history h.jsonl --commit x").code, 2);
  EXPECT_NE(err_.find("--backend"), std::string::npos) << err_;
  // --scenario names the record (a name, not a scenario file: it was refused as "empty").
  EXPECT_EQ(run("track bare.json --history h.jsonl --commit x --backend mpi --scenario named").code, 0) << err_;
  const std::string all = slurp(dir_ / "h.jsonl");
  EXPECT_EQ(nlohmann::json::parse(all.substr(all.rfind('\n', all.size() - 2) + 1))["scenario"], "named");
}

}  // namespace
