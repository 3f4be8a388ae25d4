// `shardline sweep` end to end on shipped scenarios: outputs, invalid rows with reasons,
// not-fitting rows kept and marked, the recommendation last; bad --vary exits 2.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

namespace fs = std::filesystem;

namespace {

using shardline::clitest::Result;
using shardline::clitest::scenario;
using shardline::clitest::slurp;

class SweepCli : public shardline::clitest::CliTest {};

TEST_F(SweepCli, TinyGridWritesEveryRowAndRecommends) {
  const fs::path out = dir_ / "out";
  const Result r = run("sweep " + scenario("host-tiny-fsdp.json") +
                       " --vary policy.bucket_bytes=256KiB..1MiB:x2 --vary mesh.shard=2,3 --jobs 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // 3 bucket sizes x 2 shard sizes: every configuration is a row, none dropped.
  const auto j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["rows"].size(), 6u);
  int valid = 0, invalid = 0;
  for (const auto& row : j["rows"]) {
    if (row["settings"]["mesh.shard"] == 3) {
      EXPECT_FALSE(row["valid"].get<bool>()) << row.dump();
      EXPECT_NE(row["error"].get<std::string>().find("shard"), std::string::npos) << row.dump();
      ++invalid;
    } else {
      ASSERT_TRUE(row["valid"].get<bool>()) << row.dump();
      EXPECT_GT(row["metrics"]["step_time_us"].get<double>(), 0);
      EXPECT_TRUE(row.contains("fits_memory"));
      ++valid;
    }
  }
  EXPECT_EQ(valid, 3);
  EXPECT_EQ(invalid, 3);
  // Bucket sizes reach the simulated program: fewer, larger all-gathers as buckets grow.
  std::vector<int> gathers;
  for (const auto& row : j["rows"])
    if (row["valid"].get<bool>()) gathers.push_back(row["metrics"]["by_kind"]["all_gather"]["count"].get<int>());
  ASSERT_EQ(gathers.size(), 3u);
  EXPECT_GT(gathers[0], gathers[2]);
  const std::string csv = slurp(out / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_EQ(csv.rfind("index,policy.bucket_bytes,mesh.shard,valid,", 0), 0u);
  const std::string html = slurp(out / "report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Step time against policy.bucket_bytes"), std::string::npos);
  EXPECT_NE(html.find("Pareto front"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);  // self-contained
  // The recommendation is printed last.
  const size_t rec = r.out.rfind("Recommendation");
  ASSERT_NE(rec, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why:", rec), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("invalid: "), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("invalid: "), rec);
  // The tiny model's explicit units give no model.seq_len: the default throughput objective
  // cannot rank them and falls back to step time, saying so.
  EXPECT_NE(r.out.find("note: tokens/s is unknown for every valid configuration", rec), std::string::npos) << r.out;
  // Its FLOPs are known, so the recommended point's MFU and HFU are still stated.
  EXPECT_NE(r.out.find("\n  MFU ", rec), std::string::npos) << r.out;
  EXPECT_EQ(j["objective"], "throughput");
  EXPECT_EQ(j["ranked_by"], "step_time");
}

// The case: over micro-batch size the larger batch takes a longer step but moves more
// tokens per second; the default objective (throughput) recommends it, step_time does not.
TEST_F(SweepCli, ObjectiveThroughputRecommendsTheLargerMicroBatch) {
  const std::string base = "sweep " + scenario("llama3-8b-fsdp-h100x8.json") +
                           " --set model.transformer.seq_len=2048 --vary model.transformer.micro_batch_size=1,2 --jobs 2 --out ";
  const Result tp = run(base + (dir_ / "tp").string());
  ASSERT_EQ(tp.code, 0) << tp.out << tp.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "tp" / "sweep.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& small = j["rows"][0]["metrics"];
  const auto& large = j["rows"][1]["metrics"];
  ASSERT_TRUE(j["rows"][0]["fits_with_margin"].get<bool>() && j["rows"][1]["fits_with_margin"].get<bool>()) << j.dump();
  // The premise: the larger batch's step is longer, yet it moves more tokens per GPU per second.
  ASSERT_GT(large["step_time_us"].get<double>(), small["step_time_us"].get<double>());
  ASSERT_GT(large["throughput"]["tokens_per_s_per_gpu"].get<double>(), small["throughput"]["tokens_per_s_per_gpu"].get<double>());
  EXPECT_EQ(j["objective"], "throughput");
  EXPECT_EQ(j["ranked_by"], "throughput");
  EXPECT_EQ(j["recommendation"]["best"], 1);
  const size_t rec = tp.out.rfind("Recommendation (highest tokens/s per GPU");
  ASSERT_NE(rec, std::string::npos) << tp.out;
  EXPECT_NE(tp.out.find("  model.transformer.micro_batch_size=2\n", rec), std::string::npos) << tp.out;
  EXPECT_NE(tp.out.find("more tokens/s per GPU", rec), std::string::npos) << tp.out;
  const std::string csv = slurp(dir_ / "tp" / "sweep.csv");
  EXPECT_NE(csv.find(",tokens_per_s,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,hfu,"), std::string::npos) << csv;
  EXPECT_NE(slurp(dir_ / "tp" / "report.html").find("Tokens/s per GPU against model.transformer.micro_batch_size"), std::string::npos);

  const Result st = run(base + (dir_ / "st").string() + " --objective step_time");
  ASSERT_EQ(st.code, 0) << st.out << st.err;
  const auto js = nlohmann::json::parse(slurp(dir_ / "st" / "sweep.json"));
  EXPECT_EQ(js["recommendation"]["best"], 0);
  EXPECT_NE(st.out.find("Recommendation (fastest configuration"), std::string::npos) << st.out;

  const Result mem = run(base + (dir_ / "mem").string() + " --objective memory");
  ASSERT_EQ(mem.code, 0) << mem.out << mem.err;
  const auto jm = nlohmann::json::parse(slurp(dir_ / "mem" / "sweep.json"));
  const size_t least = jm["rows"][0]["metrics"]["peak_reserved_bytes"] <= jm["rows"][1]["metrics"]["peak_reserved_bytes"] ? 0 : 1;
  EXPECT_EQ(jm["recommendation"]["best"], least);
  EXPECT_NE(mem.out.find("Recommendation (lowest reserve needed"), std::string::npos) << mem.out;
}

// Points with a variation are simulated on every rank and carry their straggler cost (step
// with the variation / without it); points without one leave the column empty.
TEST_F(SweepCli, PointsWithAVariationCarryTheirStragglerCost) {
  const Result r = run("sweep " + shardline::clitest::scenario("host-tiny-fsdp.json") +
                       " --vary variation.compute_jitter.cv=0.02,0.3 --out jitter");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(slurp(dir_ / "jitter" / "sweep.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  const double small = j["rows"][0]["straggler_cost"].get<double>(), large = j["rows"][1]["straggler_cost"].get<double>();
  EXPECT_GE(small, 1.0);
  EXPECT_GT(large, small);  // more jitter, a slower slowest rank
  EXPECT_NE(slurp(dir_ / "jitter" / "sweep.csv").find(",hfu,straggler_cost,"), std::string::npos);

  ASSERT_EQ(run("sweep " + shardline::clitest::scenario("host-tiny-fsdp.json") + " --vary policy.forward_prefetch=0,1 --out plain").code, 0);
  const auto p = nlohmann::json::parse(slurp(dir_ / "plain" / "sweep.json"));
  EXPECT_FALSE(p["rows"][0].contains("straggler_cost"));
}

// A sweep written into a run's folder replaces its report.html; the run's other files would then
// describe another run beside it, so they go; the user's own files stay. And back: a run written
// into a sweep's folder takes the sweep's table away.
TEST_F(SweepCli, ASweepAndARunDoNotShareAFolder) {
  const fs::path out = dir_ / "both";
  ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --out " + out.string()).code, 0);
  std::ofstream(out / "notes.txt") << "mine";
  ASSERT_EQ(run("sweep " + scenario("host-tiny-fsdp.json") + " --vary policy.forward_prefetch=0,1 --out " + out.string()).code, 0);
  for (const char* f : {"metrics.json", "program.json", "timeline.json", "trace.json"}) EXPECT_FALSE(fs::exists(out / f)) << f;
  EXPECT_TRUE(fs::exists(out / "sweep.json"));
  EXPECT_EQ(slurp(out / "notes.txt"), "mine");
  ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --out " + out.string()).code, 0);
  EXPECT_FALSE(fs::exists(out / "sweep.json"));
  EXPECT_FALSE(fs::exists(out / "sweep.csv"));
  EXPECT_TRUE(fs::exists(out / "metrics.json"));
}

TEST_F(SweepCli, BadObjectiveExitsTwoBeforeAnythingRuns) {
  const Result r = run("sweep " + scenario("host-tiny-fsdp.json") + " --vary policy.forward_prefetch=0,1 --objective tokens --out " +
                       (dir_ / "o").string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--objective"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected one of: throughput, step_time, memory."), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

// A base scenario no configuration can fix (here an unknown key no axis varies): exit 2 with the
// reason, nothing written, not a folder of rows that all say it.
TEST_F(SweepCli, ABaseScenarioEveryConfigurationRefusesExitsTwo) {
  nlohmann::json base = nlohmann::json::parse(slurp(scenario("host-tiny-fsdp.json")));
  base["backward_us"] = 5;
  write_text("base.json", base.dump());
  Result r = run("sweep base.json --vary policy.bucket_bytes=1MiB,2MiB --out o");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("every configuration of the sweep would be refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("backward_us: unknown key"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
  // A file of another kind (metrics given as the scenario) is said to be no scenario, at once.
  write_text("base.json", "{\"backward_us\": 5}");
  r = run("sweep base.json --vary policy.bucket_bytes=1MiB,2MiB --out o");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("base.json: is not a scenario"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

TEST_F(SweepCli, ConfigurationsOverMemoryAreMarkedNotDropped) {
  // 70B with shard 8 needs more than an H100 holds (see the scenario's description).
  const fs::path out = dir_ / "out";
  const Result r = run("sweep " + scenario("llama3-70b-hsdp-h100x64.json") +
                       " --vary mesh.shard/mesh.replicate=8/8,32/2 --jobs 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  ASSERT_TRUE(j["rows"][0]["valid"].get<bool>()) << j["rows"][0].dump();
  EXPECT_FALSE(j["rows"][0]["fits_memory"].get<bool>());
  EXPECT_GT(j["rows"][0]["metrics"]["peak_memory_bytes"].get<double>(), j["rows"][0]["metrics"]["memory_capacity_bytes"].get<double>());
  ASSERT_TRUE(j["rows"][1]["valid"].get<bool>());
  EXPECT_TRUE(j["rows"][1]["fits_memory"].get<bool>());
  EXPECT_EQ(j["recommendation"]["best"], 1);
  EXPECT_NE(r.out.find("(1 of 2 configurations fit with the margin; 1 exceeds GPU memory,"), std::string::npos) << r.out;
}

// A row is judged with its scenario's run.memory_margin, as simulate judges that scenario:
// the 8B scenario reserves more than 90% of an H100, so with a 10% margin it fits the GPU but
// not the margin. --memory-margin stands for the key; varying the key gives each row its own.
TEST_F(SweepCli, RowsFitWithTheScenariosMemoryMarginAsSimulateSays) {
  const std::string base = "sweep " + scenario("llama3-8b-fsdp-h100x8.json") + " --vary policy.forward_prefetch=1,2 --jobs 2";
  const fs::path out = dir_ / "out";
  Result r = run(base + " --set run.memory_margin=0.1 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    ASSERT_TRUE(row["valid"].get<bool>()) << row.dump();
    EXPECT_TRUE(row["fits_memory"].get<bool>());
    EXPECT_FALSE(row["fits_with_margin"].get<bool>());
    EXPECT_EQ(row["fits_with_margin"], row["metrics"]["fits_memory"]);  // the simulator's own verdict
  }
  EXPECT_DOUBLE_EQ(j["memory_margin"].get<double>(), 0.1);
  EXPECT_TRUE(j["recommendation"]["best"].is_null()) << j["recommendation"].dump();
  EXPECT_NE(r.out.find("fits memory with a 10% margin"), std::string::npos) << r.out;
  const Result sim = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --set run.memory_margin=0.1");
  EXPECT_NE(sim.out.find("DOES NOT FIT"), std::string::npos) << sim.out;

  r = run(base + " --set run.memory_margin=0.1 --memory-margin 0 --out " + (dir_ / "flag").string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = nlohmann::json::parse(slurp(dir_ / "flag" / "sweep.json"));
  EXPECT_TRUE(j["rows"][0]["fits_with_margin"].get<bool>());
  EXPECT_FALSE(j["recommendation"]["best"].is_null()) << j["recommendation"].dump();  // the two points tie within 0.05%

  r = run("sweep " + scenario("llama3-8b-fsdp-h100x8.json") + " --vary run.memory_margin=0,0.1 --jobs 2 --out " +
          (dir_ / "varied").string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = nlohmann::json::parse(slurp(dir_ / "varied" / "sweep.json"));
  EXPECT_TRUE(j["rows"][0]["fits_with_margin"].get<bool>());
  EXPECT_FALSE(j["rows"][1]["fits_with_margin"].get<bool>());
  EXPECT_TRUE(j["memory_margin"].is_null());
  EXPECT_NE(r.out.find("its own run.memory_margin"), std::string::npos) << r.out;

  r = run("sweep " + scenario("llama3-8b-fsdp-h100x8.json") + " --vary run.memory_margin=0,0.1 --memory-margin 0.2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--memory-margin"), std::string::npos) << r.err;
}

// A --set that a --vary replaces on every row (the same path, or one inside a varied object) is
// refused naming --set; it was dropped silently (an audit found it).
TEST_F(SweepCli, SetOnAVariedPathIsRefused) {
  for (const std::string& args : {std::string(" --vary policy.micro_batches=1,2 --set policy.micro_batches=3"),
                                  std::string(" --set policy.micro_batches=3 --vary policy.micro_batches/run.memory_margin=1/0,2/0.1")}) {
    const Result r = run("sweep " + scenario("llama3-8b-fsdp-h100x8.json") + args);
    EXPECT_EQ(r.code, 2) << args << r.err;
    EXPECT_EQ(r.err.rfind("shardline sweep: error: --set: policy.micro_batches is also varied", 0), 0u) << r.err;
  }
}

// More worker threads than the system lets the process start (here: a 1 GiB address space, each
// thread's stack 8 MiB): exit 2 naming --jobs, not an abort; the start line counts the threads
// it asks for (no more than the points).
TEST_F(SweepCli, MoreJobsThanTheSystemAllowsExitTwoNamingJobs) {
  if (!limited()) GTEST_SKIP() << "sanitizer build: no address-space limit";
  const Result r = run_limited("1048576", "sweep " + scenario("host-tiny-fsdp.json") +
                                              " --vary policy.micro_batches=1..400:+1 --jobs 100000 --out o");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("x 400 threads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shardline sweep: error: --jobs: could start only"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

// Running out of memory is one line and exit 1, not an abort: 70B at 2 MiB buckets schedules 3.8
// million ops, about 500 MB, under a 400 MB address space.
TEST_F(SweepCli, OutOfMemoryIsOneLineNotAnAbort) {
  if (!limited()) GTEST_SKIP() << "sanitizer build: no address-space limit";
  const Result r = run_limited("409600", "simulate " + scenario("llama3-70b-hsdp-h100x64.json") + " --set policy.bucket_bytes=2MiB");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "shardline simulate: error: out of memory: this run needs more memory than this process may use\n");
}

TEST_F(SweepCli, MpirunSplitsTheGridAndGathersTheSameRows) {
  const std::string grid = " --vary policy.bucket_bytes=128KiB..1MiB:x2 --vary policy.forward_prefetch=0,1,2 --jobs 1 --out ";
  const Result one = run("sweep " + scenario("host-tiny-fsdp.json") + grid + (dir_ / "one").string());
  ASSERT_EQ(one.code, 0) << one.err;
  const std::string mpirun = std::string(SHARDLINE_MPIEXEC) + " -np 3 --oversubscribe" + (getuid() == 0 ? " --allow-run-as-root" : "");
  const std::string cmd = mpirun + " " + SHARDLINE_BINARY + " sweep " + scenario("host-tiny-fsdp.json") + grid + (dir_ / "many").string() +
                          " >" + (dir_ / "mpi.out").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "mpi.out");
  // Every configuration once, in grid order, with the same metrics as one process computes.
  EXPECT_EQ(slurp(dir_ / "many" / "sweep.csv"), slurp(dir_ / "one" / "sweep.csv"));
  const std::string mpi_out = slurp(dir_ / "mpi.out");
  EXPECT_NE(mpi_out.find("on 3 processes"), std::string::npos) << mpi_out;
  EXPECT_EQ(mpi_out.find("Recommendation"), mpi_out.rfind("Recommendation")) << "only rank 0 prints";
}

TEST_F(SweepCli, BadVaryExitsTwoNamingFlagAndPath) {
  const std::string base = "sweep " + scenario("host-tiny-fsdp.json") + " --out " + (dir_ / "o").string() + " ";
  Result r = run(base + "--vary policy.bucket_bytez=1MiB,2MiB");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--vary"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("policy.bucket_bytez"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--set"), std::string::npos) << r.err;  // the user gave --vary, not --set
  EXPECT_NE(r.err.find("did you mean"), std::string::npos) << r.err;
  // A range on a misspelled path is the misspelling first: before, the sizes were read as the
  // numbers a path not ending in _bytes takes, and refused as "not a number".
  r = run(base + "--vary policy.bucket_bytez=1MiB..4MiB:x2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("did you mean \"bucket_bytes\""), std::string::npos) << r.err;
  // A size range on a path that takes no sizes says how to give them.
  r = run(base + "--vary cluster.gpu.memory=40GiB..160GiB:x2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("a range of sizes needs a path that ends in _bytes"), std::string::npos) << r.err;
  r = run(base + "--vary policy.bucket_bytes=512MiB..1MiB:x2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--vary"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("empty range"), std::string::npos) << r.err;
  r = run(base + "--vary policy.bucket_bytes=1MiB..4MiB:x1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("policy.bucket_bytes"), std::string::npos) << r.err;
  r = run(base + "--vary policy.forward_prefetch");
  EXPECT_EQ(r.code, 2) << r.err;
  // One path twice in a joint axis, as over two axes (it ran one configuration).
  r = run(base + "--vary policy.micro_batches/policy.micro_batches=1/2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--vary: policy.micro_batches: varied twice"), std::string::npos) << r.err;
  // Range errors quote what was given.
  r = run(base + "--vary policy.micro_batches=1..8:+-1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("(+-1 never advances)"), std::string::npos) << r.err;
  r = run(base + "--vary policy.micro_batches=1...8:x2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("expected one \"..\" between the start and the end"), std::string::npos) << r.err;
  r = run("sweep " + scenario("host-tiny-fsdp.json"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

}  // namespace
