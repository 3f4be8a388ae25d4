// `shardline compare` exit codes and outputs on hand-built timeline folders, and `shardline
// validate` end to end on 2 MPI ranks (calibrate with tiny sizes, simulate with the profile,
// exec, compare). The accuracy itself is measured by bench/accuracy.py, not asserted here.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixtures.h"
#include "cli_test_support.h"

#include "core/timeline.h"
#include "core/variation.h"

namespace fs = std::filesystem;

namespace shardline {
namespace {

Timeline timeline(double step_us, const std::string& source) { return clitest::two_op_timeline(step_us, source); }

using clitest::slurp;

class CompareCli : public clitest::CliTest {
 protected:
  void write(const std::string& folder, const Timeline& t) {
    fs::create_directories(dir_ / folder);
    std::ofstream(dir_ / folder / "timeline.json") << timeline_to_json(t).dump();
  }
};

TEST_F(CompareCli, StepErrorOverToleranceExitsOne) {
  write("pred", timeline(1000, "predicted"));
  write("meas", timeline(1200, "measured"));  // error -16.7%
  EXPECT_EQ(run("compare pred meas --tolerance 0.10").code, 1) << out_ << err_;
  EXPECT_NE(out_.find("-16.7%"), std::string::npos) << out_;
  EXPECT_NE(out_.find("OVER"), std::string::npos) << out_;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "meas" / "compare.json"));
  EXPECT_NEAR(j.at("step_error").get<double>(), -200.0 / 1200.0, 1e-12);
  EXPECT_TRUE(fs::exists(dir_ / "meas" / "compare.html"));
}

TEST_F(CompareCli, WithinToleranceExitsZeroAndWritesToOut) {
  write("pred", timeline(1000, "predicted"));
  write("meas", timeline(1050, "measured"));
  EXPECT_EQ(run("compare pred meas --tolerance 0.10 --out cmp").code, 0) << out_ << err_;
  EXPECT_TRUE(fs::exists(dir_ / "cmp" / "compare.json"));
  EXPECT_TRUE(fs::exists(dir_ / "cmp" / "compare.html"));
}

// A failed exec into a folder with an earlier complete run leaves partial timelines beside it:
// compare still compares the complete one, and says that it is the earlier run's.
TEST_F(CompareCli, APartialTimelineNewerThanTheRunIsNamed) {
  write("pred", timeline(1000, "predicted"));
  write("meas", timeline(1050, "measured"));
  EXPECT_EQ(run("compare pred meas").code, 0) << out_ << err_;
  EXPECT_EQ(err_.find("note:"), std::string::npos) << err_;
  std::ofstream(dir_ / "meas" / "timeline.partial.rank0.json") << "{}";
  fs::last_write_time(dir_ / "meas" / "timeline.partial.rank0.json",
                      fs::last_write_time(dir_ / "meas" / "timeline.json") + std::chrono::seconds(5));
  EXPECT_EQ(run("compare pred meas").code, 0) << out_ << err_;
  EXPECT_NE(err_.find("note: meas holds timeline.partial.rank0.json, newer than its timeline.json"), std::string::npos) << err_;
}

// 1,000 us predicted, 1,250 us measured, 4 GPUs and 4,000 tokens per step: 1,000,000 vs 800,000
// tokens/s per GPU (+25.0%); 4e12 model FLOPs on a 1000 TFLOP/s peak: MFU 100.0% vs 80.0%.
TEST_F(CompareCli, PrintsThroughputPredictedMeasuredAndError) {
  Timeline p = timeline(1000, "predicted"), m = timeline(1250, "measured");
  for (Timeline* t : {&p, &m}) {
    t->workload.gpus = 4;
    t->workload.samples_per_step = 4;
    t->workload.tokens_per_step = 4000;
    t->workload.model_flops_per_step = 4e12;
    t->workload.hardware_flops_per_step = 4e12;
    t->workload.peak_flops_per_gpu = 1000e12;
  }
  write("pred", p);
  write("meas", m);
  EXPECT_EQ(run("compare pred meas --tolerance 0.5").code, 0) << out_ << err_;
  EXPECT_NE(out_.find("tokens/s per GPU      1,000,000     800,000       +25.0%"), std::string::npos) << out_;
  EXPECT_NE(out_.find("MFU                   100.0%        80.0%         +20.0 pp"), std::string::npos) << out_;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "meas" / "compare.json"));
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s_per_gpu_error").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j.at("measured_mfu").get<double>(), 0.8);
}

TEST_F(CompareCli, MissingFolderExitsTwoNamingIt) {
  write("pred", timeline(1000, "predicted"));
  EXPECT_EQ(run("compare pred nowhere").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR"), std::string::npos) << err_;
  EXPECT_NE(err_.find("(expected an output folder of simulate or exec)"), std::string::npos) << err_;
  // A failed exec's folder (its ranks' partial timelines, rank 0's among them or not) is named so.
  fs::create_directories(dir_ / "failed");
  std::ofstream(dir_ / "failed" / "timeline.partial.rank1.json") << "{}";
  EXPECT_EQ(run("compare pred failed").code, 2);
  EXPECT_NE(err_.find("the folder holds what a failed run left"), std::string::npos) << err_;
  fs::create_directories(dir_ / "failed_early");  // a rank that failed before its first op: its error only
  std::ofstream(dir_ / "failed_early" / "error.rank0.txt") << "why";
  EXPECT_EQ(run("compare pred failed_early").code, 2);
  EXPECT_NE(err_.find("the folder holds what a failed run left"), std::string::npos) << err_;
}

TEST_F(CompareCli, ATimelineThatIsADirectoryOrOutOfRangeExitsTwoNamingIt) {
  write("pred", timeline(1000, "predicted"));
  fs::create_directories(dir_ / "meas" / "timeline.json");
  EXPECT_EQ(run("compare pred meas").code, 2);
  EXPECT_NE(err_.find("is a directory"), std::string::npos) << err_;
  fs::remove_all(dir_ / "meas");
  fs::create_directories(dir_ / "meas");
  std::ofstream(dir_ / "meas" / "timeline.json") << R"({"format": "shardline.timeline", "version": 1e999})";
  EXPECT_EQ(run("compare pred meas").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("json.exception"), std::string::npos) << err_;
}

// A malformed timeline.json is named (the message said "MEASURED_DIR: malformed JSON at ..."
// without the file).
TEST_F(CompareCli, AMalformedTimelineIsNamed) {
  write("pred", timeline(1000, "predicted"));
  fs::create_directories(dir_ / "meas");
  std::ofstream(dir_ / "meas" / "timeline.json") << "{\n  \"format\": ";
  EXPECT_EQ(run("compare pred meas").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR: \"meas/timeline.json\": malformed JSON at line 2"), std::string::npos) << err_;
}

// The measured folder's program.json must be the Program its timeline ran: one that is not (a
// file from another run) is refused, and so is a malformed one, named once.
TEST_F(CompareCli, AProgramThatIsNotTheTimelinesIsRefused) {
  ASSERT_EQ(run("simulate " + clitest::scenario("host-tiny-fsdp.json") + " --out run").code, 0) << err_;
  ASSERT_EQ(run("simulate " + clitest::scenario("host-tiny-hsdp.json") + " --out other").code, 0) << err_;
  EXPECT_EQ(run("compare run run").code, 0) << err_;
  // Two predictions compare, and the table says that the "measured" side is one.
  EXPECT_NE(out_.find("note: MEASURED_DIR holds a prediction (sim), not a measured run: this compares two predictions"),
            std::string::npos)
      << out_;
  fs::copy_file(dir_ / "other" / "program.json", dir_ / "run" / "program.json", fs::copy_options::overwrite_existing);
  EXPECT_EQ(run("compare run run").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR: \"run/program.json\" is not the Program of the folder's timeline.json"), std::string::npos) << err_;
  std::ofstream(dir_ / "run" / "program.json") << "";
  EXPECT_EQ(run("compare run run").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR: \"run/program.json\": malformed JSON"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("program.json\": MEASURED_DIR"), std::string::npos) << "named twice: " << err_;
}

// The folders given the wrong way round (a measured run as PREDICTED_DIR) are refused, naming the
// order, instead of a table with every sign flipped.
TEST_F(CompareCli, AMeasuredRunGivenAsThePredictionIsRefused) {
  ASSERT_EQ(run("simulate " + clitest::scenario("host-tiny-fsdp.json") + " --out pred").code, 0) << err_;
  fs::copy(dir_ / "pred", dir_ / "meas", fs::copy_options::recursive);
  nlohmann::json t = nlohmann::json::parse(slurp(dir_ / "meas" / "timeline.json"));
  t["source"] = "measured";
  t["backend"] = "mpi";
  std::ofstream(dir_ / "meas" / "timeline.json") << t.dump();
  EXPECT_EQ(run("compare pred meas").code, 0) << err_;
  EXPECT_EQ(run("compare meas pred").code, 2);
  EXPECT_NE(err_.find("PREDICTED_DIR: \"meas\" holds a measured run (mpi): give the prediction first"), std::string::npos) << err_;
}

// An every-rank prediction keeps only the ranks that matter: given as MEASURED_DIR it is named a
// prediction, not reported as a file missing intervals.
TEST_F(CompareCli, AnEveryRankPredictionAsMeasuredIsNamedSo) {
  const std::string hsdp = clitest::scenario("host-tiny-hsdp.json");
  ASSERT_EQ(run("simulate " + hsdp + " --out pred").code, 0) << err_;
  ASSERT_EQ(run("simulate " + hsdp + " --jitter 0.1 --trace-ranks 2 --out ranks").code, 0) << err_;
  EXPECT_EQ(run("compare pred ranks").code, 2);
  EXPECT_NE(err_.find("MEASURED_DIR: \"ranks/timeline.json\": source: a prediction that keeps"), std::string::npos) << err_;
  EXPECT_NE(err_.find("the output folder of exec or import"), std::string::npos) << err_;
}

TEST_F(CompareCli, ValidateRunsTheWholeLoopOnTwoRanks) {
  const std::string scenario = std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/host-tiny-fsdp.json";
  // Tiny calibration and few iterations keep CI short; a huge tolerance: accuracy is not asserted.
  // With a jitter: validate passes it on to exec as the shortest text of the same number.
  const int rc = run("validate " + scenario +
                     " --np 2 --out v --max-bytes 4MiB --repetitions 2 --iterations 2 --warmup 0 --tolerance 1000"
                     " --jitter 0.2 --seed 3").code;
  ASSERT_EQ(rc, 0) << out_ << err_;
  EXPECT_NE(err_.find(" --jitter 0.2 --seed 3 "), std::string::npos) << err_;
  const nlohmann::json profile = nlohmann::json::parse(slurp(dir_ / "v" / "profile.json"));
  EXPECT_EQ(profile.at("backend"), "mpi");
  EXPECT_EQ(profile.at("ranks"), 2);  // the ranks it was measured on
  EXPECT_EQ(profile.at("collectives").size(), 3u);  // all-gather, reduce-scatter, all-reduce over 2 ranks
  EXPECT_EQ(profile.at("collectives").at(0).at("group_size"), 2);
  // Measured, not defaulted: a sleep stand-in always ends after its request, and the event
  // latency is a time >= 0.
  EXPECT_GT(profile.at("compute_overhead_us").get<double>(), 0);
  EXPECT_GE(profile.at("event_latency_us").get<double>(), 0);
  const nlohmann::json c = nlohmann::json::parse(slurp(dir_ / "v" / "compare.json"));
  EXPECT_GT(c.at("measured_step_time_us").get<double>(), 0);
  EXPECT_GT(c.at("predicted_step_time_us").get<double>(), 0);
  EXPECT_EQ(c.at("measured_backend"), "mpi");
  // exec's program.json gives the group table: each rank's waiting for the last member is stated.
  ASSERT_EQ(c.at("by_rank").size(), 2u);
  for (const auto& r : c.at("by_rank")) EXPECT_GE(r.at("measured_collective_wait_us").get<double>(), 0) << r;
  // With a variation validate predicts every rank and keeps them all: the predicted waiting
  // stands beside the measured.
  EXPECT_NE(out_.find("waiting in collectives (for the last member): predicted, measured"), std::string::npos) << out_;
  for (const auto& r : c.at("by_rank")) EXPECT_GE(r.at("predicted_collective_wait_us").get<double>(), 0) << r;
  EXPECT_TRUE(fs::exists(dir_ / "v" / "predicted" / "timeline.json"));
  EXPECT_TRUE(fs::exists(dir_ / "v" / "measured" / "timeline.json"));
  EXPECT_NE(out_.find("step time (us)"), std::string::npos) << out_;
  // Having calibrated, validate calibrates again after the run and states how far the prediction
  // moved: the machine's drift, judged against the tolerance.
  EXPECT_NE(out_.find("validate: 4/5 calibrating again, after the run"), std::string::npos) << out_;
  EXPECT_TRUE(fs::exists(dir_ / "v" / "profile.after.json"));
  const nlohmann::json drift = c.at("machine_drift");
  EXPECT_DOUBLE_EQ(drift.at("predicted_step_time_us").get<double>(), c.at("predicted_step_time_us").get<double>());
  const double after_us = drift.at("after_run_predicted_step_time_us").get<double>();
  EXPECT_GT(after_us, 0);
  EXPECT_NEAR(drift.at("relative_change").get<double>(), after_us / c.at("predicted_step_time_us").get<double>() - 1, 1e-12);
  EXPECT_FALSE(drift.at("drifted").get<bool>()) << drift;  // tolerance 1000
  EXPECT_NE(out_.find("machine drift: the calibration after the run predicts the step at"), std::string::npos) << out_;
  EXPECT_NE(out_.find("within the tolerance: the machine kept its speed"), std::string::npos) << out_;
  EXPECT_NE(slurp(dir_ / "v" / "compare.html").find("machine drift: the calibration after the run"), std::string::npos);
  // Given a profile, validate copies it into its folder: an earlier run's profile.json there
  // would describe another calibration. It calibrates nothing, so it checks no drift.
  fs::create_directories(dir_ / "again");
  std::ofstream(dir_ / "again" / "profile.json") << "stale";
  ASSERT_EQ(run("validate " + scenario + " --np 2 --profile v/profile.json --out again --iterations 2 --warmup 0 --tolerance 1000").code, 0)
      << out_ << err_;
  EXPECT_EQ(slurp(dir_ / "again" / "profile.json"), slurp(dir_ / "v" / "profile.json"));
  EXPECT_NE(out_.find("validate: 4/4 comparing"), std::string::npos) << out_;
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir_ / "again" / "compare.json")).at("machine_drift").is_null());
  EXPECT_EQ(out_.find("machine drift"), std::string::npos) << out_;
}

// With tolerance 0 any move of the prediction between the calibrations before and after the run
// is more than the tolerance: compare.json and the line say so, consistently.
TEST_F(CompareCli, ValidateJudgesTheMachinesDriftAgainstTheTolerance) {
  const std::string scenario = std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/host-tiny-fsdp.json";
  const int rc = run("validate " + scenario + " --np 2 --out v --max-bytes 4MiB --repetitions 2 --passes 1 --iterations 2 --warmup 0 --tolerance 0").code;
  ASSERT_TRUE(rc == 0 || rc == 1) << out_ << err_;
  const nlohmann::json drift = nlohmann::json::parse(slurp(dir_ / "v" / "compare.json")).at("machine_drift");
  const bool drifted = std::abs(drift.at("relative_change").get<double>()) > 0;
  EXPECT_EQ(drift.at("drifted").get<bool>(), drifted) << drift;
  EXPECT_EQ(out_.find("more than the tolerance: the machine changed speed while validate ran") != std::string::npos, drifted) << out_;
  // And without the check: four steps, no second calibration.
  ASSERT_EQ(run("validate " + scenario + " --np 2 --out w --max-bytes 4MiB --repetitions 2 --passes 1 --iterations 2 --warmup 0 "
                "--tolerance 1000 --no-drift-check").code, 0) << out_ << err_;
  EXPECT_NE(out_.find("validate: 4/4 comparing"), std::string::npos) << out_;
  EXPECT_FALSE(fs::exists(dir_ / "w" / "profile.after.json"));
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir_ / "w" / "compare.json")).at("machine_drift").is_null());
}

// An injected straggler on ranks that share cores is measured with a lower cost than a simulator
// with a core per rank predicts (docs/exec.md, Binding): exec says so, exactly when the ranks, as
// mpirun bound them, run on fewer processors than the run has ranks. mpirun binds over the host's
// processors (a taskset around the launch does not hold it), so this host's count says which.
TEST_F(CompareCli, ExecSaysWhenInjectedVariationRunsOnSharedCores) {
  const clitest::Result r = run("exec " + clitest::scenario("host-tiny-fsdp.json") +
                       " --np 4 --set mesh.shard=4 --set cluster.gpus_per_node=4 --straggler 1=1.5 --iterations 1 --warmup 0 --no-verify");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("variation injected"), std::string::npos) << r.out;
  const bool shared = std::thread::hardware_concurrency() < 4;
  EXPECT_EQ(r.out.find("ranks share cores (4 ranks on ") != std::string::npos, shared) << r.out;
  // Each rank's measured step and waiting, spread over the ranks, as simulate --ranks all states them.
  EXPECT_NE(r.out.find("every rank (measured, iteration 0):\n  step time              min "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  waiting in collectives min "), std::string::npos) << r.out;
}

// exec records the variation it injected: the straggler, not the scenario's slow link (a real
// link cannot be slowed), so compare holds a prediction with the slow link apart from it.
TEST_F(CompareCli, ExecRecordsTheVariationItInjected) {
  const clitest::Result r = run("exec " + clitest::scenario("host-tiny-fsdp.json") +
                                " --np 2 --straggler 1=1.5 --set 'variation.slow_links=[{\"rank\":1,\"bandwidth_factor\":0.5}]'"
                                " --iterations 1 --warmup 0 --no-verify --out e");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("variation.slow_links: not injected"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "e" / "timeline.json")).at("variation"),
            nlohmann::json::parse(R"({"stragglers": [{"rank": 1, "compute_factor": 1.5}]})"));
  EXPECT_NE(r.out.find("variation            straggler rank 1 computes x1.5\n"), std::string::npos) << r.out;
}

// exec injects a rank compute spread as the simulator plays it: each rank's compute stand-ins
// take its own drawn factor longer, so the ranks' measured compute times stand in the ratio of
// their draws. A seed is chosen whose two draws differ by at least 3x, so that one core running
// 1.6x slower for a while (seen on this 2-vCPU machine: docs/accuracy-log.md) still leaves the
// measured ratio inside the tolerance below; single runs here have measured 0.66 for a drawn 0.49.
TEST_F(CompareCli, ExecSlowsEachRankByItsDrawOfTheRankComputeSpread) {
  VariationSpec v;
  v.rank_compute_spread.cv = 0.5;
  double expected = 1;
  for (v.seed = 1; v.seed < 1000; ++v.seed) {
    expected = rank_compute_spread_factor(v, 1) / rank_compute_spread_factor(v, 0);
    if (expected > 3 || expected < 1.0 / 3) break;
  }
  ASSERT_TRUE(expected > 3 || expected < 1.0 / 3);
  const clitest::Result r = run("exec " + clitest::scenario("host-tiny-fsdp.json") + " --np 2 --set variation.rank_compute_spread.cv=0.5 --seed " +
                                std::to_string(v.seed) + " --iterations 2 --warmup 0 --no-verify --out spread");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json program = nlohmann::json::parse(clitest::slurp(dir_ / "spread" / "program.json"));
  const nlohmann::json timeline = nlohmann::json::parse(clitest::slurp(dir_ / "spread" / "timeline.json"));
  std::vector<bool> compute;
  for (const auto& op : program.at("ops")) compute.push_back(op.at("kind") == "compute");
  double busy_us[2] = {0, 0};
  for (const auto& iv : timeline.at("intervals"))  // [op, rank, iteration, issue, start, end]
    if (compute.at(iv.at(0).get<size_t>())) busy_us[iv.at(1).get<int>()] += iv.at(5).get<double>() - iv.at(4).get<double>();
  // On the log scale, at least a quarter and at most one and a half of the drawn difference
  // (without the injection the ratio is about 1, the log about 0). Sleeps overshoot by the
  // scheduler's latency, the same for both ranks, which pulls the ratio towards 1 when the
  // machine is busy: with a clean-clone CI, a build and simulations sharing the 2 cores, one run
  // measured 0.33 of a drawn 7.3x (24.6 against 47.5 ms), where it measures near 1 on an idle one.
  const double measured_share = std::log(busy_us[1] / busy_us[0]) / std::log(expected);
  EXPECT_GE(measured_share, 0.25) << busy_us[0] << " " << busy_us[1] << " expected ratio " << expected;
  EXPECT_LE(measured_share, 1.5) << busy_us[0] << " " << busy_us[1] << " expected ratio " << expected;
}

TEST_F(CompareCli, CalibrateRefusesOneRank) {
  EXPECT_EQ(run("calibrate --np 1 --out p.json").code, 2);
  EXPECT_NE(err_.find("--np"), std::string::npos) << err_;
}

}  // namespace
}  // namespace shardline
