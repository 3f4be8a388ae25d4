// `shardline import` end to end: a summary of a real profiler trace; the measured timeline of
// generated FSDP2 traces (the exact round trip is tests/integration/import_roundtrip.py); and
// exit 2 with the file or flag named for every bad input the issue lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

namespace shardline::clitest {
namespace {

const std::string kHta = std::string(SHARDLINE_SOURCE_DIR) + "/tests/data/hta/";

class ImportCli : public CliTest {
 protected:
  // FSDP2-shaped traces of host-tiny-fsdp (2 ranks) in dir_/traces: gzipped, or `plain` JSON
  // (rank-0.json, rank-1.json) for a test to edit as text.
  void generate_fsdp_traces(bool plain = false) {
    ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --ranks all --trace-ranks all --out sim").code, 0) << err_;
    const std::string cmd = "cd " + dir_.string() + " && python3 " + SHARDLINE_SOURCE_DIR + "/scripts/fsdp2-trace sim --out traces" +
                            (plain ? " --plain" : "");
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  static void expect_one_error_line(const Result& r, const std::string& needle) {
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
};

// --out is bounded before the traces are mapped, as simulate's: the Program's ops, then the op
// intervals trace.json would draw (steps x ranks x ops; 6 steps of a 135,000-op Program on 2
// ranks had taken 51 s and 2.5 GB and written a 601 MB trace.json). --steps is the way out.
TEST_F(ImportCli, OutputsOfAHugeImportAreRefusedBeforeTheTracesAreMapped) {
  generate_fsdp_traces();  // 2 ranks, 2 steps
  const std::string traces = (dir_ / "traces" / "rank-0.json.gz").string() + " " + (dir_ / "traces" / "rank-1.json.gz").string();
  const std::string big = " --scenario " + scenario("host-tiny-fsdp.json") + " --set policy.bucket_bytes=8KiB --set policy.micro_batches=6";
  expect_one_error_line(run("import " + traces + big + " --out imported"),
                        "--out: draws up to 2 steps x 2 ranks x 201611 ops into trace.json");
  EXPECT_NE(err_.find("import fewer steps (--steps FIRST..LAST)"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "imported"));
  // One step is within the bound: the import goes on (to the mapping, which this Program does
  // not match).
  const Result one = run("import " + traces + big + " --steps 1..1 --out imported");
  EXPECT_EQ(one.err.find("draws up to"), std::string::npos) << one.err;
}

TEST_F(ImportCli, SummarizesARealTraceWithoutAScenario) {
  const Result r = run("import " + kHta + "nccl_parser_config-nccl_data.json.gz --out summary");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("all_reduce 15 other 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ProfilerStep#4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "summary" / "summary.json"));
}

// A real one-GPU FSDP2 step profiled with profile_memory=True (tests/data/h200/README.md): each
// step's peaks are what torch.cuda.max_memory_allocated() and max_memory_reserved() reported in
// the same process, to the byte.
TEST_F(ImportCli, ReadsWhatTheAllocatorHeldFromARealProfiledStep) {
  const Result r = run("import " + std::string(SHARDLINE_SOURCE_DIR) + "/tests/data/h200/fsdp2-llama-1b-none-profile-memory.json.gz --json");
  ASSERT_EQ(r.code, 0) << err_;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  ASSERT_EQ(j[0]["steps"].size(), 2u);
  for (const nlohmann::json& step : j[0]["steps"]) {
    EXPECT_EQ(step["allocator"]["peak_allocated_bytes"].get<int64_t>(), 25738435584) << step["name"];
    EXPECT_EQ(step["allocator"]["peak_reserved_bytes"].get<int64_t>(), 30362566656) << step["name"];
  }
}

// A real one-GPU FSDP2 step of the usual wrapping (tests/data/h100/README.md): the root module's
// ranges carry no FQN, the loss runs between its forward and backward, and with one rank FSDP2
// launches no collective and no all-gather copy-in. Before, no step matched ("the Program has 1
// forward compute of embedding mb0, the trace 0"). Now every GPU activity lands in an op: the root
// window's parts are the embedding's and the head's compute, the loss the head's, the casts the
// copy-outs; the collectives and gather copy-ins are placed at zero length.
TEST_F(ImportCli, MapsARealOneGpuStepWithItsRootModuleOntoTheProgram) {
  const std::string data = std::string(SHARDLINE_SOURCE_DIR) + "/tests/data/h100/";
  const std::string scenario_path = data + "mpt-7b-shape-4-layers-nobias-full.scenario.json";
  const Result r = run("import " + data + "fsdp2-mpt-7b-shape-4-layers-nobias-full.json.gz --scenario " + scenario_path + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir_ / "imported" / "import.json"));
  EXPECT_EQ(report["steps"], nlohmann::json::array({"ProfilerStep#0", "ProfilerStep#1"}));
  EXPECT_TRUE(report["unmatched_steps"].empty()) << report.dump(1);
  EXPECT_TRUE(report["not_in_program"].empty()) << report.dump(1);
  // Per step: 9 all-gathers and their 9 copy-ins, 5 reduce-scatters.
  EXPECT_EQ(report["ops_without_gpu_work"].get<int64_t>(), 2 * (9 + 9 + 5));
  EXPECT_EQ(report["allocator_measured"]["peak_allocated_bytes"].get<int64_t>(), 18322735104);
  EXPECT_EQ(report["allocator_measured"]["peak_reserved_bytes"].get<int64_t>(), 24847056896);
  // They are the run's memory in its metrics, which regress and track judge.
  const auto metrics = nlohmann::json::parse(slurp(dir_ / "imported" / "metrics.json"));
  EXPECT_EQ(metrics["peak_memory_bytes"].get<int64_t>(), 18322735104);
  EXPECT_EQ(metrics["peak_allocator_reserved_bytes"].get<int64_t>(), 24847056896);
  EXPECT_GT(metrics["peak_reserved_bytes"].get<int64_t>(), 24847056896);  // and the scenario's context
  EXPECT_TRUE(metrics["fits_memory"].get<bool>());
  // Every compute op took GPU time in every step, the root's parts included; the head's forward
  // holds the loss's softmax (2.17 ms) beside its GEMM, so it outlasts a block's forward.
  const auto timeline = nlohmann::json::parse(slurp(dir_ / "imported" / "timeline.json"));
  // A real run's variation is its own, not injected: not recorded (compare then says nothing of it).
  EXPECT_FALSE(timeline.contains("variation"));
  std::map<std::string, std::vector<double>> compute_us;
  for (const auto& iv : timeline["intervals"]) {
    const auto& op = timeline["ops"][iv[0].get<size_t>()];
    if (op["kind"] == "compute") compute_us[op["name"].get<std::string>()].push_back(iv[5].get<double>() - iv[4].get<double>());
  }
  ASSERT_EQ(compute_us.size(), 14u);  // forward and backward of 6 units, clipping, the optimizer
  for (const auto& [name, durations] : compute_us) {
    ASSERT_EQ(durations.size(), 2u) << name;
    for (double us : durations) EXPECT_GT(us, 0.0) << name;
  }
  for (size_t it = 0; it < 2; ++it) EXPECT_GT(compute_us["fwd norm+output mb0"][it], compute_us["fwd layers.3 mb0"][it] + 2000.0);
  // Markers placed at [memory] events stay in the host's order: none on the compute stream starts
  // after the compute op that follows it there. (An event of the same size 160 ms later, another
  // tensor, once took the embedding's activation marker and every marker after it.)
  EXPECT_GT(report["markers_from_memory_events"].get<int64_t>(), 0);
  const auto& ops = timeline["ops"];
  std::vector<const nlohmann::json*> by_op_iteration(ops.size() * 2, nullptr);
  for (const auto& iv : timeline["intervals"]) by_op_iteration[iv[0].get<size_t>() * 2 + iv[2].get<size_t>()] = &iv;
  for (size_t it = 0; it < 2; ++it) {
    double next_start = 1e300;
    for (size_t i = ops.size(); i-- > 0;) {
      if (ops[i]["stream"] != "compute") continue;
      const nlohmann::json& iv = *by_op_iteration[i * 2 + it];
      if (ops[i]["kind"] == "alloc" || ops[i]["kind"] == "free")
        EXPECT_LE(iv[4].get<double>(), next_start) << ops[i]["name"] << " in iteration " << it;
      else
        next_start = iv[4].get<double>();
    }
  }
  // And it compares with the prediction, allocator figures included.
  ASSERT_EQ(run("simulate " + scenario_path + " --out sim").code, 0) << err_;
  ASSERT_EQ(run("compare sim imported --tolerance 1 --out cmp").code, 0) << out_ << err_;
  const auto cmp = nlohmann::json::parse(slurp(dir_ / "cmp" / "compare.json"));
  EXPECT_TRUE(cmp.contains("allocator_memory")) << cmp.dump(1).substr(0, 2000);
  // A scenario that does not describe the run (a micro-batch of 64 where it ran 4) puts the run's MFU
  // over the GPU's peak, and the summary says the scenario is not the run's.
  const Result wrong = run("import " + data + "fsdp2-mpt-7b-shape-4-layers-nobias-full.json.gz --scenario " + scenario_path +
                           " --set model.transformer.micro_batch_size=64 --out wrong");
  ASSERT_EQ(wrong.code, 0) << wrong.err;
  EXPECT_NE(wrong.out.find("over 100%: more than the GPUs can do, so the scenario does not describe this run"), std::string::npos)
      << wrong.out;
  // One GPU runs no collective: a profile cannot be fitted on it, and the refusal names the
  // run's timeline and says why (it had read "timeline: has no measured collective").
  expect_one_error_line(run("calibrate --from-trace imported --out p.json"),
                        "--from-trace: \"imported/timeline.json\": has no measured collective (a run on one GPU runs none)");
}

TEST_F(ImportCli, WritesTheMeasuredRunOfGeneratedTraces) {
  generate_fsdp_traces();
  const Result r = run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 2 profiler steps on 2 ranks"), std::string::npos) << r.out;
  for (const char* f : {"timeline.json", "metrics.json", "report.html", "trace.json", "import.json", "summary.json"})
    EXPECT_TRUE(fs::exists(dir_ / "imported" / f)) << f;
  EXPECT_EQ(run("compare sim imported --out cmp").code, 0) << out_ << err_;
  // One file given twice, under two spellings of its path, is named as such (it was accepted where
  // a trace records no rank).
  expect_one_error_line(run("import traces/rank-0.json.gz ./traces/rank-0.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --out twice"),
                        "./traces/rank-0.json.gz: given twice (also as traces/rank-0.json.gz)");
}

// A step that matches on one rank only is left out and named; the report's counts are those of
// the imported steps alone.
TEST_F(ImportCli, AStepMissingACollectiveOnOneRankIsLeftOutAndNamed) {
  generate_fsdp_traces(/*plain=*/true);
  // Drop rank 1's last NCCL kernel (a reduce-scatter of ProfilerStep#2), editing the text: a
  // JSON library would round the nanoseconds of the 19-digit timestamps.
  std::string text = slurp(dir_ / "traces" / "rank-1.json");
  const size_t name = text.rfind("\"cat\": \"kernel\", \"name\": \"ncclDevKernel_");
  ASSERT_NE(name, std::string::npos);
  const size_t begin = text.rfind("{", name), end = text.find("}}, ", name);
  ASSERT_TRUE(begin != std::string::npos && end != std::string::npos);
  text.erase(begin, end + 4 - begin);
  write_text("traces/rank-1.json", text);
  const Result r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir_ / "imported" / "import.json"));
  EXPECT_EQ(report["steps"], nlohmann::json::array({"ProfilerStep#1"}));
  const std::string left_out = report["unmatched_steps"].dump();
  EXPECT_NE(left_out.find("rank 1, ProfilerStep#2: the Program has 6 reduce_scatters over shard(2), the trace 5"), std::string::npos) << left_out;
  EXPECT_NE(left_out.find("ProfilerStep#2: matched on rank 0, not on every rank"), std::string::npos) << left_out;
  // 91 alloc/free markers per step and rank in host-tiny-fsdp: one step on two ranks.
  EXPECT_EQ(report["markers_from_memory_events"], 2 * 91);
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "imported" / "timeline.json"))["iterations"], 1);
}

// A marker is placed only at a GPU [memory] event: the same sizes allocated on the host ("Device
// Type" 0) once placed every marker of rank 1.
TEST_F(ImportCli, HostMemoryEventsPlaceNoMarkers) {
  generate_fsdp_traces(/*plain=*/true);
  std::string text = slurp(dir_ / "traces" / "rank-1.json");
  size_t changed = 0;
  for (size_t at = text.find("\"Device Type\": 1"); at != std::string::npos; at = text.find("\"Device Type\": 1", at)) {
    text.replace(at, 16, "\"Device Type\": 0");
    ++changed;
  }
  ASSERT_GT(changed, 0u);
  write_text("traces/rank-1.json", text);
  const Result r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir_ / "imported" / "import.json"));
  // Rank 0's markers at their events, rank 1's by stream order: half each.
  EXPECT_GT(report["markers_from_memory_events"].get<int64_t>(), 0);
  EXPECT_EQ(report["markers_from_memory_events"], report["markers_from_stream_order"]) << report.dump();
}

// A GPU activity whose launch the profiler did not record is placed by its own start; the summary
// and the import count them (they had gone unsaid, though they move a step's and an op's start).
TEST_F(ImportCli, GpuActivitiesWithoutARecordedLaunchAreCounted) {
  generate_fsdp_traces(/*plain=*/true);
  // Edited as text: the traces' times are exact decimals that a JSON round trip through doubles
  // would round. Three launch events past the first 40 go.
  std::string text = slurp(dir_ / "traces" / "rank-1.json");
  size_t seen = 0, dropped = 0;
  for (size_t at = text.find("\"name\": \"cudaLaunchKernel\""); at != std::string::npos && dropped < 3;
       at = text.find("\"name\": \"cudaLaunchKernel\"", at + 1)) {
    if (++seen <= 40) continue;
    const size_t begin = text.rfind("{\"ph\"", at), end = text.find("}}, ", at) + 4;
    text.erase(begin, end - begin);
    at = begin;
    ++dropped;
  }
  ASSERT_EQ(dropped, 3u);
  write_text("traces/rank-1.json", text);
  Result r = run("import traces/rank-1.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# 3 GPU activities have no recorded CPU launch"), std::string::npos) << r.out;
  r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 GPU activities have no recorded CPU launch"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "imported" / "import.json"))["gpu_activities_without_launch"], 3);
}

// One rank's trace holds one GPU's work: a trace with a second device's is said in the summary
// (its steps count both) and refused as a rank's trace (it had been mapped as one rank).
TEST_F(ImportCli, ATraceOfTwoGpusIsSaidAndNotTakenForOneRank) {
  generate_fsdp_traces(/*plain=*/true);
  std::string text = slurp(dir_ / "traces" / "rank-1.json");
  const size_t at = text.rfind("\"device\": 1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "\"device\": 5");  // the last kernel ran on GPU 5
  write_text("traces/rank-1.json", text);
  Result r = run("import traces/rank-1.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# GPU activities on 2 devices (1, 5)"), std::string::npos) << r.out;
  expect_one_error_line(run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out imported"),
                        "traces/rank-1.json: holds GPU work of 2 devices (1, 5), where one rank's trace holds one GPU's");
}

// A collective's kernels overlap on every member, so one that ends on a rank before it starts on
// another shows the ranks' clocks disagree; the import says by at least how much (rank 1's clock
// moved 5 ms ahead here: its waits had been read as real), and nothing for the traces as made.
TEST_F(ImportCli, RanksWhoseClocksDisagreeAreSaid) {
  generate_fsdp_traces(/*plain=*/true);
  Result r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out same");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("clocks:"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "same" / "import.json"))["clock_skew_us_at_least"], 0.0);
  // Every "ts" of rank 1 moved by 5000 us, as exact decimals (the times are epoch-scale).
  const std::string shift = "cd " + dir_.string() +
                            " && python3 -c \"import re, decimal; p = 'traces/rank-1.json'; t = open(p).read(); "
                            "open(p, 'w').write(re.sub(r'\\\"ts\\\": (-?[0-9.]+)', "
                            "lambda m: '\\\"ts\\\": ' + str(decimal.Decimal(m.group(1)) + 5000), t))\"";
  ASSERT_EQ(std::system(shift.c_str()), 0) << shift;
  r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out skewed");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("clocks: the ranks' clocks disagree by at least"), std::string::npos) << r.out;
  const double skew_us = nlohmann::json::parse(slurp(dir_ / "skewed" / "import.json"))["clock_skew_us_at_least"].get<double>();
  EXPECT_GT(skew_us, 4000.0);
  EXPECT_LE(skew_us, 5000.0);
}

TEST_F(ImportCli, CalibrateFromTraceRefusesMeasuringFlagsAndAFolderWithoutATimeline) {
  generate_fsdp_traces();
  ASSERT_EQ(run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --out run").code, 0);
  expect_one_error_line(run("calibrate --from-trace run --out p.json --backend nccl"), "--backend: measures nothing with --from-trace");
  expect_one_error_line(run("calibrate --from-trace run --out p.json --np 2"), "--np: measures nothing with --from-trace");
  expect_one_error_line(run("calibrate --from-trace run --out p.json --passes 3"), "--passes: measures nothing with --from-trace");
  expect_one_error_line(run("calibrate --from-trace traces --out p.json"), "--from-trace: \"traces\" has no timeline.json");
  // The profile written over the run it is fitted on (exit 0, the timeline lost, before).
  const std::string timeline = slurp(dir_ / "run" / "timeline.json");
  expect_one_error_line(run("calibrate --from-trace run --out run/timeline.json"), "--out: \"run/timeline.json\" is also this command's input");
  EXPECT_EQ(slurp(dir_ / "run" / "timeline.json"), timeline);
  const Result ok = run("calibrate --from-trace run --out p.json");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("all_gather over 2 ranks"), std::string::npos) << ok.out;
  EXPECT_TRUE(fs::exists(dir_ / "p.json"));
  // The imported run's own peaks are what its summary states, not "not recorded".
  const Result table = run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json"));
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_EQ(table.out.find("not recorded by this timeline"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("measured by the run's caching allocator"), std::string::npos) << table.out;
  // A profile whose measured units match no unit of the scenario times nothing, and says so.
  nlohmann::json renamed = nlohmann::json::parse(slurp(dir_ / "p.json"));
  ASSERT_FALSE(renamed["units"].empty());
  for (nlohmann::json& u : renamed["units"]) u["name"] = "renamed." + u["name"].get<std::string>();
  write_text("p2.json", renamed.dump());
  const Result other = run("simulate " + scenario("host-tiny-fsdp.json") + " --profile p2.json");
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.err.find("simulate: 0 of "), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("match no unit of the scenario, and time nothing"), std::string::npos) << other.err;
}

// Other kinds of file given where a scenario goes are said to be what they are, naming the file.
TEST_F(ImportCli, AFileThatIsNoScenarioIsNamedAsSuch) {
  generate_fsdp_traces();
  expect_one_error_line(run("simulate sim/timeline.json"), "sim/timeline.json: is not a scenario: it has no \"model\"");
  // A scenario with a misspelled key keeps its suggestion.
  nlohmann::json typo = nlohmann::json::parse(slurp(scenario("host-tiny-fsdp.json")));
  typo["modle"] = typo["model"];
  typo.erase("model");
  write_text("typo.json", typo.dump());
  expect_one_error_line(run("simulate typo.json"), "did you mean \"model\"");
  expect_one_error_line(run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario traces/rank-0.json.gz"), "is gzip-compressed");
  expect_one_error_line(run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario ''"), "--scenario: is empty");
  expect_one_error_line(run("import traces/rank-0.json.gz --out ''"), "--out: give a folder");
}

TEST_F(ImportCli, RefusesARankCountThatIsNotTheMesh) {
  generate_fsdp_traces();
  expect_one_error_line(run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-hsdp.json")),
                        "got 2 traces; the scenario's mesh has 4 ranks");
}

TEST_F(ImportCli, RefusesCollectivesThatDoNotMatchTheProgram) {
  generate_fsdp_traces();
  const Result r = run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") +
                       " --set policy.comm_fusion=false");
  expect_one_error_line(r, "no profiler step matches the scenario's Program");
  EXPECT_NE(r.err.find("the trace"), std::string::npos) << r.err;
}

TEST_F(ImportCli, BadTraceFilesNameTheFile) {
  write_text("not.json", "{\"traceEvents\": [ {\"ph\": \"X\",");
  expect_one_error_line(run("import not.json"), "not.json: not JSON at byte");
  write_text("cpu.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})");
  expect_one_error_line(run("import cpu.json"), "cpu.json: has no GPU kernels");
  {
    std::ifstream in(kHta + "trace_filter-sampled_rank-0.json.gz", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_text("cut.json.gz", bytes.substr(0, bytes.size() / 3));
  }
  expect_one_error_line(run("import cut.json.gz"), "cut.json.gz: the gzip stream ends early (truncated file)");
  EXPECT_EQ(err_.find("after 0 uncompressed bytes"), std::string::npos) << "a third of the file decodes to more: " << err_;
  expect_one_error_line(run("import"), "TRACE: give at least one");
  expect_one_error_line(run("import cpu.json --set policy.comm_fusion=false"), "--set: needs --scenario");
}

// What a trace says of its rank must fit the run the traces are mapped onto, and a corrupt time
// is refused by the import, not by the next command that reads its timeline; --out is checked
// before the traces are read.
TEST_F(ImportCli, RanksAndTimesThatCannotBeTheRunAreRefused) {
  ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --ranks all --trace-ranks all --out sim").code, 0) << err_;
  const std::string cmd = "cd " + dir_.string() + " && python3 " + SHARDLINE_SOURCE_DIR + "/scripts/fsdp2-trace sim --plain --out traces";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const auto edited = [&](const std::string& from, const std::string& to, const std::string& text, const std::string& with) {
    std::string s = slurp(dir_ / from);
    const size_t at = s.find(text);
    ASSERT_NE(at, std::string::npos) << text;
    s.replace(at, text.size(), with);
    write_text(to, s);
  };
  const std::string hsdp = " --scenario " + scenario("host-tiny-fsdp.json");
  // rank-1.json saying rank 7 of 2; a world of 8; rank 0 twice.
  edited("traces/rank-1.json", "r7/rank-1.json", "\"rank\": 1", "\"rank\": 7");
  fs::copy_file(dir_ / "traces/rank-0.json", dir_ / "r7/rank-0.json");
  expect_one_error_line(run("import r7/rank-0.json r7/rank-1.json" + hsdp), "r7/rank-1.json: distributedInfo.rank is 7");
  edited("traces/rank-1.json", "w8/rank-1.json", "\"world_size\": 2", "\"world_size\": 8");
  fs::copy_file(dir_ / "traces/rank-0.json", dir_ / "w8/rank-0.json");
  expect_one_error_line(run("import w8/rank-0.json w8/rank-1.json" + hsdp), "w8/rank-1.json: distributedInfo.world_size is 8");
  expect_one_error_line(run("import traces/rank-0.json traces/rank-0.json" + hsdp), "traces/rank-0.json: given twice");
  // The case that had been mapped as two ranks: a trace that records no rank, given twice, also
  // through a hard link (another path to the same file).
  {
    std::string text = slurp(dir_ / "traces/rank-0.json");
    const size_t at = text.find("\"distributedInfo\": {");
    ASSERT_NE(at, std::string::npos);
    text.erase(at, text.find("}, ", at) + 3 - at);
    fs::create_directories(dir_ / "norank");
    write_text("norank/rank-0.json", text);
    fs::create_hard_link(dir_ / "norank/rank-0.json", dir_ / "norank/rank-1.json");
    expect_one_error_line(run("import norank/rank-0.json norank/rank-1.json" + hsdp),
                          "norank/rank-1.json: given twice (also as norank/rank-0.json)");
  }
  fs::create_directories(dir_ / "copy");
  fs::copy_file(dir_ / "traces/rank-0.json", dir_ / "copy/rank-0-again.json");  // another file naming rank 0
  expect_one_error_line(run("import traces/rank-0.json copy/rank-0-again.json" + hsdp), "distributedInfo.rank 0 is also");
  // Without a scenario each trace is only summarized: its own rank and world are reported.
  EXPECT_EQ(run("import r7/rank-1.json").code, 0) << err_;
  // A kernel's start moved to 1e19 us, its duration to 1e300 us: refused by the reader, with or
  // without a scenario, naming the file, the event and the value as written (not an overflow).
  const auto kernel_time = [&](const std::string& to, const std::string& field, const std::string& value) {
    std::string s = slurp(dir_ / "traces/rank-1.json");
    const size_t kernel = s.find("\"cat\": \"kernel\"");
    ASSERT_NE(kernel, std::string::npos);
    const size_t at = s.find("\"" + field + "\": ", kernel);
    s.replace(at, s.find_first_of(",}", at) - at, "\"" + field + "\": " + value);
    write_text(to + "/rank-1.json", s);
    fs::copy_file(dir_ / "traces/rank-0.json", dir_ / to / "rank-0.json");
  };
  kernel_time("far", "ts", "1e19");
  expect_one_error_line(run("import far/rank-0.json far/rank-1.json" + hsdp + " --out far_out"), "far/rank-1.json: traceEvents[");
  EXPECT_NE(err_.find("\"ts\" is 1e19 us"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "far_out"));
  kernel_time("long", "dur", "1e300");
  for (const std::string& scenario_flag : {hsdp, std::string()}) {
    expect_one_error_line(run("import long/rank-0.json long/rank-1.json" + scenario_flag), "long/rank-1.json: traceEvents[");
    EXPECT_NE(err_.find("\"dur\" is 1e300 us, more than the 10 days an event may last"), std::string::npos) << err_;
  }
  // Rank 1's clock 20 days ahead of rank 0's: each trace is sound alone, the run is not. The
  // error names the file.
  {
    std::string s = slurp(dir_ / "traces/rank-1.json");
    for (size_t at = s.find("\"ts\": "); at != std::string::npos; at = s.find("\"ts\": ", at + 1)) {
      const size_t begin = at + 6, end = s.find_first_of(".,}", begin);
      s.replace(begin, end - begin, std::to_string(std::stoll(s.substr(begin, end - begin)) + 20LL * 86400 * 1000000));
    }
    write_text("ahead/rank-1.json", s);
    fs::copy_file(dir_ / "traces/rank-0.json", dir_ / "ahead/rank-0.json");
    expect_one_error_line(run("import ahead/rank-0.json ahead/rank-1.json" + hsdp), "ahead/rank-1.json: (rank 1) puts ");
    EXPECT_NE(err_.find("an event's \"ts\" or \"dur\" is corrupt"), std::string::npos) << err_;
  }
  const Result r = run("import traces/rank-0.json --out .");
  expect_one_error_line(r, "--out");
  EXPECT_TRUE(r.out.empty()) << r.out;  // refused before any summary was printed
  // Traces that all name their rank go by it; none naming one, in the order given; a mix cannot
  // be put in order (the file whose rank says 1 was once taken for rank 0, silently).
  edited("traces/rank-0.json", "mix/rank-0.json", "\"rank\": 0, ", "");
  fs::copy_file(dir_ / "traces/rank-1.json", dir_ / "mix/rank-1.json");
  expect_one_error_line(run("import mix/rank-1.json mix/rank-0.json" + hsdp), "mix/rank-0.json: has no distributedInfo.rank but mix/rank-1.json");
  edited("traces/rank-1.json", "none/rank-1.json", "\"rank\": 1, ", "");
  fs::copy_file(dir_ / "mix/rank-0.json", dir_ / "none/rank-0.json");
  EXPECT_EQ(run("import none/rank-0.json none/rank-1.json" + hsdp).code, 0) << err_;
  EXPECT_EQ(run("import traces/rank-1.json traces/rank-0.json" + hsdp).code, 0) << err_;  // by their ranks
}

// A collective size that overflows 64 bits (2^62 + 131072 floats is 131072 x 4 bytes modulo
// 2^64, the Program's 524288) once passed the size check: it is a mismatch.
TEST_F(ImportCli, ACollectiveSizeThatOverflowsIsAMismatch) {
  ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --ranks all --trace-ranks all --out sim").code, 0) << err_;
  const std::string cmd = "cd " + dir_.string() + " && python3 " + SHARDLINE_SOURCE_DIR + "/scripts/fsdp2-trace sim --plain --out traces";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string text = slurp(dir_ / "traces" / "rank-0.json");
  const std::string field = "\"Out msg nelems\": 131072, \"Group size\": 2, \"dtype\": \"Float\"";
  const size_t at = text.find(field, text.find("\"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather"));  // ProfilerStep#1's first
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("\"Out msg nelems\": 131072").size(), "\"Out msg nelems\": 4611686018427518976");
  write_text("traces/rank-0.json", text);
  const Result r = run("import traces/rank-0.json traces/rank-1.json --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir_ / "imported" / "import.json"));
  EXPECT_EQ(report["steps"], nlohmann::json::array({"ProfilerStep#2"}));
  EXPECT_NE(report["unmatched_steps"].dump().find("4611686018427518976 x Float, more bytes than a 64-bit count holds"), std::string::npos)
      << report["unmatched_steps"].dump();
}

// --json prints one JSON document and nothing else (the human report once followed the summaries).
TEST_F(ImportCli, JsonIsOneDocumentOnStdout) {
  generate_fsdp_traces();
  const Result r = run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --json --out run");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);  // throws (fails) on anything after the document
  EXPECT_EQ(doc.at("summaries").size(), 2u);
  EXPECT_EQ(doc.at("import").at("steps").size(), 2u);
  EXPECT_GT(doc.at("metrics").at("step_time_us").get<double>(), 0);
  const Result summary = run("import traces/rank-0.json.gz --json");
  ASSERT_EQ(summary.code, 0) << summary.err;
  EXPECT_TRUE(nlohmann::json::parse(summary.out).is_array());  // without a scenario: the summaries, as before
}

// --steps FIRST..LAST imports a window of the matched steps; a bad window names the flag.
TEST_F(ImportCli, StepsImportsAWindowOfTheMatchedSteps) {
  generate_fsdp_traces();
  const std::string traces = "import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json");
  const Result r = run(traces + " --steps 2..2 --out run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 profiler step on 2 ranks (--steps 2..2 of the 2 matching on every rank): ProfilerStep#2"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "run" / "timeline.json"))["iterations"], 1);
  expect_one_error_line(run(traces + " --steps 1..3"), "--steps: 1..3 ends beyond the steps: the traces match 2 profiler steps");
  expect_one_error_line(run(traces + " --steps 0..1"), "--steps: expects 1 <= FIRST <= LAST");
  expect_one_error_line(run(traces + " --steps 2..1"), "--steps: expects 1 <= FIRST <= LAST");
  expect_one_error_line(run(traces + " --steps 5"), "--steps: expects FIRST..LAST");
  expect_one_error_line(run(traces + " --steps 1..2000"), "--steps: is 2000 steps; a timeline holds at most 1024");
  expect_one_error_line(run("import traces/rank-0.json.gz --steps 1..2"), "--steps: needs --scenario");
}

// A summary written into a folder of an earlier run takes that run's files away (docs/outputs.md):
// they would describe another run.
TEST_F(ImportCli, ASummaryIntoAnEarlierRunsFolderRemovesItsFiles) {
  generate_fsdp_traces();
  ASSERT_EQ(run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --out run").code, 0);
  write_text("run/notes.txt", "mine");
  ASSERT_EQ(run("import traces/rank-0.json.gz --out run").code, 0) << err_;
  for (const char* f : {"timeline.json", "metrics.json", "import.json", "report.html", "trace.json", "program.json"})
    EXPECT_FALSE(fs::exists(dir_ / "run" / f)) << f;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "run" / "summary.json")).size(), 1u);
  EXPECT_EQ(slurp(dir_ / "run" / "notes.txt"), "mine");  // other files stay
}

// A trace kept in --out under a name the outputs write or clear ("trace.json", as PyTorch's
// examples export it) is refused before anything is written: a summary-only import deleted it
// (a review found it), and with --scenario the Perfetto trace overwrote it.
TEST_F(ImportCli, AnInputTraceInsideOutUnderAnOutputsNameIsRefused) {
  generate_fsdp_traces();
  fs::create_directories(dir_ / "run");
  fs::copy_file(dir_ / "traces" / "rank-0.json.gz", dir_ / "run" / "trace.json.gz");
  ASSERT_EQ(run("import run/trace.json.gz --out run").code, 0) << err_;  // a name no output has: fine
  fs::copy_file(dir_ / "traces" / "rank-0.json.gz", dir_ / "run" / "trace.json");  // refused before it is read
  const std::string raw = slurp(dir_ / "run" / "trace.json");
  for (const std::string& scenario_flag : {std::string(), " --scenario " + scenario("host-tiny-fsdp.json")}) {
    const Result r = run("import run/trace.json --out run" + scenario_flag);
    EXPECT_EQ(r.code, 2) << scenario_flag << r.err;
    EXPECT_NE(r.err.find("--out: \"run\" holds the input run/trace.json"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir_ / "run" / "trace.json"), raw);
  }
}

}  // namespace
}  // namespace shardline::clitest
