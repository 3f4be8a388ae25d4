// `shardline regress` exit codes (regression 1, improvement 0, missing baseline 2,
// --update-baseline) and `shardline track` (append, render) end to end.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json metrics(double step_us, double exposed_us, double efficiency) {
  return {{"step_time_us", step_us},
          {"compute_busy_us", step_us - exposed_us},
          {"comm_busy_us", 1000.0},
          {"exposed_comm_us", exposed_us},
          {"overlap_efficiency", efficiency},
          {"forward_us", step_us / 3},
          {"backward_us", step_us * 2 / 3},
          {"peak_memory_bytes", 1 << 30},
          {"memory_capacity_bytes", 80LL << 30},
          {"fits_memory", true},
          {"by_kind", nlohmann::json::object()}};
}

class RegressCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shardline_regress_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                                        "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const nlohmann::json& j) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << j.dump(1);
  }
  int run(const std::string& args) {
    const std::string cmd = "cd " + dir_.string() + " && " + SHARDLINE_BINARY + " " + args + " >out.txt 2>err.txt";
    const int status = std::system(cmd.c_str());
    out_ = slurp(dir_ / "out.txt");
    err_ = slurp(dir_ / "err.txt");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  fs::path dir_;
  std::string out_, err_;
};

TEST_F(RegressCli, InjectedRegressionExitsOne) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("base/b.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(1000, 100, 0.9));
  write("cur/b.json", metrics(1000, 100, 0.85));  // overlap drops 0.05
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0.01"), 1) << out_ << err_;
  EXPECT_NE(out_.find("REGRESSED (overlap efficiency)"), std::string::npos) << out_;
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0.1"), 0) << out_ << err_;
}

TEST_F(RegressCli, ImprovementExitsZero) {
  write("base.json", metrics(1000, 100, 0.9));
  write("cur.json", metrics(900, 10, 0.99));
  EXPECT_EQ(run("regress --baseline base.json --current cur.json --tolerance 0"), 0) << out_ << err_;
  EXPECT_NE(out_.find("improved"), std::string::npos) << out_;
}

TEST_F(RegressCli, MissingBaselineExitsTwoAndMissingScenarioOne) {
  write("cur/a.json", metrics(1000, 100, 0.9));
  EXPECT_EQ(run("regress --baseline nowhere --current cur"), 2);
  EXPECT_NE(err_.find("--baseline"), std::string::npos) << err_;
  write("base/a.json", metrics(1000, 100, 0.9));
  write("base/gone.json", metrics(1000, 100, 0.9));
  EXPECT_EQ(run("regress --baseline base --current cur"), 1);
  EXPECT_NE(out_.find("gone: no current metrics"), std::string::npos) << out_;
}

TEST_F(RegressCli, UpdateBaselineThenPasses) {
  write("base/a.json", metrics(1000, 100, 0.9));
  write("cur/a.json", metrics(2000, 900, 0.1));
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0"), 1);
  EXPECT_EQ(run("regress --baseline base --current cur --update-baseline"), 0) << err_;
  EXPECT_EQ(run("regress --baseline base --current cur --tolerance 0"), 0) << out_;
}

TEST_F(RegressCli, TrackAppendsAndRenders) {
  write("run/metrics.json", metrics(1000, 100, 0.9));
  write("run/timeline.json", {{"scenario", "tiny"}, {"backend", "sim"}});
  EXPECT_EQ(run("track run --history h.jsonl --commit abc"), 0) << err_;
  write("run/metrics.json", metrics(900, 50, 0.95));
  EXPECT_EQ(run("track run/metrics.json --history h.jsonl --commit def --html trend.html"), 0) << err_;
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
  EXPECT_EQ(run("track bare.json --history h.jsonl --commit x"), 2);
  EXPECT_NE(err_.find("--backend"), std::string::npos) << err_;
}

}  // namespace
