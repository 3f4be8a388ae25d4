// `shardline simulate` and `shardline schedule` end to end on shipped scenarios: every output
// written and readable, --json parsable and consistent with metrics.json, and bad scenarios,
// keys, overrides or flags exit 2 with one message naming the path and no output folder.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

const char* const kOutputs[] = {"metrics.json", "program.json", "timeline.json", "trace.json", "report.html"};
const char* const kMetricKeys[] = {"step_time_us", "compute_busy_us", "comm_busy_us", "exposed_comm_us", "overlap_efficiency",
                                   "peak_memory_bytes", "peak_reserved_bytes", "peak_allocator_reserved_bytes", "memory_capacity_bytes", "fits_memory",
                                   "forward_us", "backward_us", "by_kind", "throughput"};

using shardline::clitest::Result;
using shardline::clitest::scenario;
using shardline::clitest::slurp;

class SimulateCli : public shardline::clitest::CliTest {
 protected:
  // A user error: exit 2, one line on stderr naming `where`, nothing on stdout, no --out folder.
  void expect_input_error(const std::string& args, const std::string& where) {
    const fs::path out = dir_ / "out";
    const Result r = run(args + " --out " + out.string());
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(where), std::string::npos) << "expected the message to name " << where << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(out));
  }
};

// At long sequences the model FLOPs' full attention square (no causal discount, the MFU
// convention) can pass the dense peak; the summary says why rather than print an unexplained
// utilisation above 100%, and says nothing of it below.
TEST_F(SimulateCli, AUtilisationOverTheDensePeakIsExplained) {
  const std::string note = "over 100%: attention is counted over the full seq x seq square";
  Result r = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") +
                 " --set cluster.preset=h100-sxm-dgx-torch2.11 --set model.transformer.seq_len=262144");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const size_t hfu = r.out.find("\nHFU");
  ASSERT_NE(hfu, std::string::npos) << r.out;
  const std::string hfu_line = r.out.substr(hfu + 1, r.out.find('\n', hfu + 1) - hfu - 1);
  EXPECT_NE(hfu_line.find(note), std::string::npos) << hfu_line;
  const double hfu_percent = std::stod(hfu_line.substr(3));
  EXPECT_GT(hfu_percent, 100.0) << hfu_line;
  // The same run's MFU (78%) is under the peak: no note on its line.
  const size_t mfu = r.out.find("\nMFU");
  ASSERT_NE(mfu, std::string::npos) << r.out;
  const std::string mfu_line = r.out.substr(mfu + 1, r.out.find('\n', mfu + 1) - mfu - 1);
  EXPECT_LT(std::stod(mfu_line.substr(3)), 100.0) << mfu_line;
  EXPECT_EQ(mfu_line.find("over 100%"), std::string::npos) << mfu_line;
  r = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find(note), std::string::npos) << r.out;
  // Where halving the attention would not bring it under the peak, attention is not blamed: here
  // every rank computes in 0.3 of the time (at seq 8192 attention is a fifth of the FLOPs).
  r = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") +
          " --set 'variation.stragglers=[{\"group\": \"shard\", \"index\": 0, \"compute_factor\": 0.3}]'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find(note), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 100%: the predicted compute outruns the dense peak"), std::string::npos) << r.out;
}

// A straggler of factor 1 does not act: the run is the plain one, file for file (it had switched
// to every rank, writing ranks.json and a timeline of four ranks that recorded no variation).
TEST_F(SimulateCli, AStragglerOfFactorOneLeavesTheRunAsItWas) {
  const fs::path plain = dir_ / "plain", idle = dir_ / "idle";
  ASSERT_EQ(run("simulate " + scenario("host-tiny-hsdp.json") + " --out " + plain.string()).code, 0);
  const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " --straggler 1=1 --out " + idle.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(idle / "ranks.json"));
  for (const char* f : kOutputs) EXPECT_EQ(slurp(idle / f), slurp(plain / f)) << f;
}

TEST_F(SimulateCli, DefaultScenarioWritesEveryOutputAndPrintsTheSummary) {
  const fs::path out = dir_ / "default";
  const Result r = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* label : {"step time", "compute busy", "comm busy", "exposed comm", "overlap efficiency", "peak memory", "forward",
                            "tokens/s", "samples/s", "model TFLOP/s / GPU", "MFU", "HFU", "reserved (estimate)"}) {
    EXPECT_NE(r.out.find(label), std::string::npos) << label << "\n" << r.out;
  }
  EXPECT_TRUE(r.out.find(" fits") != std::string::npos || r.out.find("DOES NOT FIT") != std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 - exposed / comm busy"), std::string::npos) << r.out;
  // One GPU communicates nothing: its overlap efficiency is 1 by definition, and the line says so
  // beside the exposed time its copies and host gaps still make.
  const Result one = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --set mesh.shard=1 --set cluster.gpus_per_node=1");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("100.0%  no communication to hide (1 by definition); exposed time is copies and host gaps"), std::string::npos)
      << one.out;
  // The cluster line names the preset: the GPU has presets of different software (chip numbers).
  EXPECT_NE(r.out.find("1 x 8 H100 SXM5 80GB (h100-sxm-dgx), mesh shard 8 x replicate 1"), std::string::npos) << r.out;
  // A chip number changed on top of the preset: the line says the cluster is the preset with changes.
  const Result changed = run("simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --set cluster.gpu.peak_tflops.bf16=500");
  ASSERT_EQ(changed.code, 0) << changed.err;
  EXPECT_NE(changed.out.find("(h100-sxm-dgx, with changes), mesh shard 8"), std::string::npos) << changed.out;
  for (const char* f : kOutputs) ASSERT_TRUE(fs::is_regular_file(out / f)) << f;
  const json metrics = json::parse(slurp(out / "metrics.json"));
  for (const char* key : kMetricKeys) EXPECT_TRUE(metrics.contains(key)) << key;
  EXPECT_GT(metrics["step_time_us"].get<double>(), 0);
  EXPECT_GT(metrics["by_kind"]["all_gather"]["count"].get<int>(), 0);
  const json program = json::parse(slurp(out / "program.json"));
  EXPECT_EQ(program["format"], "shardline.program");
  const json timeline = json::parse(slurp(out / "timeline.json"));
  EXPECT_EQ(timeline["format"], "shardline.timeline");
  EXPECT_EQ(timeline["source"], "predicted");
  // seq 8192 x micro-batch 1 x 1 micro-batch x 8 data-parallel ranks.
  EXPECT_EQ(timeline["workload"]["tokens_per_step"].get<double>(), 65536.0);
  EXPECT_EQ(timeline["workload"]["gpus"].get<int>(), 8);
  EXPECT_TRUE(timeline.contains("memory_reserve"));
  const double step_s = metrics["step_time_us"].get<double>() / 1e6;
  EXPECT_DOUBLE_EQ(metrics["throughput"]["tokens_per_s"].get<double>(), 65536.0 / step_s);
  EXPECT_DOUBLE_EQ(metrics["throughput"]["tokens_per_s_per_gpu"].get<double>(), 65536.0 / step_s / 8);
  const double mfu = metrics["throughput"]["mfu"].get<double>();
  EXPECT_GT(mfu, 0.0);
  EXPECT_LT(mfu, 1.0);
  EXPECT_GE(metrics["throughput"]["hfu"].get<double>(), mfu);
  EXPECT_GE(metrics["peak_reserved_bytes"].get<double>(), metrics["peak_memory_bytes"].get<double>());
  // What the peak holds: parts that sum to it, the parameters' shards in fp32 (Llama 3 8B's
  // 8,030,261,248 parameters over 8 ranks, each tensor's shard rounded up), AdamW's two states
  // twice that; and the summary names them.
  int64_t parts = 0;
  for (const auto& [name, bytes] : metrics["memory_at_peak"].items()) parts += bytes.get<int64_t>();
  EXPECT_EQ(parts, metrics["peak_memory_bytes"].get<int64_t>());
  const int64_t shards = metrics["memory_at_peak"]["sharded_params"].get<int64_t>();
  EXPECT_NEAR(static_cast<double>(shards), 8030261248.0 / 8 * 4, 4.0 * 8 * 300);
  EXPECT_EQ(metrics["memory_at_peak"]["optimizer_state"].get<int64_t>(), 2 * shards);
  EXPECT_GT(metrics["memory_at_peak"]["activations"].get<int64_t>(), 0);
  EXPECT_NE(r.out.find("allocated at the peak: activations "), std::string::npos) << r.out;
  EXPECT_EQ(timeline["memory_at_peak"], metrics["memory_at_peak"]);
  const json trace = json::parse(slurp(out / "trace.json"));
  EXPECT_FALSE(trace["traceEvents"].empty());
  const std::string html = slurp(out / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http"), std::string::npos);
  // Exactly the output folder in the scratch dir, beside the captured streams: no temporary left.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) entries += e.path().filename().string().rfind("std", 0) == 0 ? 0 : 1;
  EXPECT_EQ(entries, 1u);
}

TEST_F(SimulateCli, JsonPrintsTheMetricsThatMetricsJsonHolds) {
  const fs::path out = dir_ / "tiny";
  const Result r = run("simulate " + scenario("host-tiny-fsdp.json") + " --json --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json printed = json::parse(r.out);
  for (const char* key : kMetricKeys) EXPECT_TRUE(printed.contains(key)) << key;
  EXPECT_EQ(printed, json::parse(slurp(out / "metrics.json")));
  EXPECT_GE(printed["overlap_efficiency"].get<double>(), 0.0);
  EXPECT_LE(printed["overlap_efficiency"].get<double>(), 1.0);
}

TEST_F(SimulateCli, IsDeterministic) {
  const Result a = run("simulate " + scenario("host-tiny-fsdp.json") + " --json");
  const Result b = run("simulate " + scenario("host-tiny-fsdp.json") + " --json");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST_F(SimulateCli, SetOverridesTheScenario) {
  const Result fused = run("simulate " + scenario("host-tiny-fsdp.json") + " --json");
  const Result unfused = run("simulate " + scenario("host-tiny-fsdp.json") + " --json --set policy.comm_fusion=false");
  ASSERT_EQ(fused.code, 0) << fused.err;
  ASSERT_EQ(unfused.code, 0) << unfused.err;
  // Without fusion every parameter gets its own all-gather: more collectives than units.
  EXPECT_GT(json::parse(unfused.out)["by_kind"]["all_gather"]["count"].get<int>(),
            json::parse(fused.out)["by_kind"]["all_gather"]["count"].get<int>());
}

// A calibrated profile replaces the analytical costs: with collectives measured 10x slower
// than with a 1x profile, the same scenario's all-gather busy time grows about tenfold; a profile
// without the group size the mesh needs is an input error naming --profile.
TEST_F(SimulateCli, ProfileReplacesTheAnalyticalCosts) {
  auto write_profile = [&](const std::string& name, double scale, int group_size) {
    json tables = json::array();
    for (const char* kind : {"all_gather", "reduce_scatter", "all_reduce"})
      tables.push_back({{"collective", kind}, {"group_size", group_size}, {"sizes_bytes", {1024, 1 << 20, 16 << 20}},
                        {"times_us", {10.0 * scale, 100.0 * scale, 1600.0 * scale}}, {"alpha_us", 10.0 * scale},
                        {"beta_us_per_byte", 1e-4 * scale}});
    const json profile = {{"format", "shardline-profile-1"}, {"backend", "mpi"}, {"copy_bandwidth_bytes_per_s", 1e10},
                          {"issue_overhead_us", 1.0}, {"comm_slowdown_during_compute", 1.0},
                          {"compute_slowdown_during_comm", 1.0}, {"copy_slowdown_during_comm", 1.0},
                          {"comm_slowdown_during_copy", 1.0}, {"collectives", tables}};
    std::ofstream(dir_ / name) << profile.dump();
    return (dir_ / name).string();
  };
  const std::string base = "simulate " + scenario("host-tiny-fsdp.json") + " --json --profile ";
  const Result fast = run(base + write_profile("fast.json", 1, 2));
  const Result slow = run(base + write_profile("slow.json", 10, 2));
  ASSERT_EQ(fast.code, 0) << fast.err;
  ASSERT_EQ(slow.code, 0) << slow.err;
  const auto comm = [](const Result& r) { return json::parse(r.out)["by_kind"]["all_gather"]["busy_us"].get<double>(); };
  // Each collective alone takes 10x as long; concurrent ones share bandwidth, which moves the
  // union of their intervals a little away from exactly 10x.
  EXPECT_GT(comm(slow) / comm(fast), 8.0);
  EXPECT_LT(comm(slow) / comm(fast), 14.0);
  const Result analytical = run("simulate " + scenario("host-tiny-fsdp.json") + " --json");
  ASSERT_EQ(analytical.code, 0) << analytical.err;
  EXPECT_NE(json::parse(analytical.out)["step_time_us"], json::parse(fast.out)["step_time_us"]);

  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --profile " + write_profile("g4.json", 1, 4), "--profile");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --profile " + (dir_ / "none.json").string(), "--profile");
}

// cluster.event_latency delays every op that waits for another stream's event, and
// cluster.compute_overhead lengthens each compute op: both make the step longer; a negative
// time is an input error naming the key.
TEST_F(SimulateCli, EventLatencyAndComputeOverheadLengthenTheStep) {
  const std::string base = "simulate " + scenario("host-tiny-fsdp.json") + " --json";
  const auto metrics = [&](const std::string& extra) {
    const Result r = run(base + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out);
  };
  const json plain = metrics("");
  const double plain_step = plain["step_time_us"].get<double>();
  EXPECT_GT(metrics(" --set cluster.event_latency=200us")["step_time_us"].get<double>(), plain_step);
  // The 12 compute ops (6 units, forward and backward) run one after another on the compute
  // stream, each at least 1 ms longer: the step is at least the old compute busy time + 12 ms.
  const json slower = metrics(" --set cluster.compute_overhead=1ms");
  EXPECT_GE(slower["step_time_us"].get<double>(), plain["compute_busy_us"].get<double>() + 12000 - 1e-6);
  EXPECT_GE(slower["compute_busy_us"].get<double>(), plain["compute_busy_us"].get<double>() + 12000 - 1e-6);
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set cluster.event_latency=-1us", "cluster.event_latency");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set cluster.comm_slowdown_during_compute=0.5",
                     "cluster.comm_slowdown_during_compute");
  // cluster.host_launch: a host that takes 20 ms per launch sets every one of the 12 compute ops'
  // end (one launch each, explicit units) and the copies' ops: the step is at least 12 x 20 ms.
  EXPECT_GE(metrics(" --set cluster.host_launch=20ms")["step_time_us"].get<double>(), 12 * 20000.0);
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set cluster.host_launch=-1us", "cluster.host_launch");
  // A misspelt key names itself and suggests the closest.
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set cluster.host_lanch=1us", "cluster.host_lanch");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set cluster.host_lanch=1us", "host_launch");
}

TEST_F(SimulateCli, MissingScenarioFileExits2NamingIt) {
  expect_input_error("simulate " + (dir_ / "nope.json").string(), "nope.json");
}

TEST_F(SimulateCli, UnknownScenarioKeyExits2NamingItsPath) {
  json j = json::parse(slurp(scenario("host-tiny-fsdp.json")));
  j["policy"]["bucket_byte"] = 1024;
  const fs::path bad = dir_ / "bad.json";  // its cluster is a built-in preset: it resolves anywhere
  std::ofstream(bad) << j.dump(2);
  expect_input_error("simulate " + bad.string(), "policy.bucket_byte");
}

// --out writes every op three times (about 4 KB each): a step of over 250,000 ops is refused
// before simulating, naming the key that made the ops, and nothing is written. Without --out
// the same step simulates.
TEST_F(SimulateCli, OutputsOfAHugeProgramAreRefusedNamingTheKey) {
  const std::string big = "simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --set policy.micro_batches=600";
  expect_input_error(big, "policy.micro_batches");  // with --out DIR/out, which must not appear
  EXPECT_NE(err_.find("stops at 250000 ops"), std::string::npos) << err_;
  EXPECT_EQ(run(big + " --json").code, 0) << err_;
  // When one micro-batch alone is over the limit, fewer micro-batches would not do: the key that
  // made its ops is named (it had named policy.micro_batches).
  expect_input_error("simulate " + scenario("llama3-8b-fsdp-h100x8.json") + " --set policy.bucket_bytes=1MiB --set policy.micro_batches=2",
                     "policy.bucket_bytes");
}

// schedule --json builds program.json whole in memory: refused the same way (it ran out of memory
// at 23 GB on a step of millions of ops). The text form of the same step is printed.
TEST_F(SimulateCli, ScheduleJsonOfAHugeProgramIsRefusedNamingTheKey) {
  const std::string big = "schedule " + scenario("llama3-8b-fsdp-h100x8.json") + " --set policy.micro_batches=600";
  EXPECT_EQ(run(big + " --json").code, 2);
  EXPECT_NE(err_.find("policy.micro_batches: this step has"), std::string::npos) << err_;
  EXPECT_NE(err_.find("leave out --json"), std::string::npos) << err_;
  EXPECT_TRUE(out_.empty());
  EXPECT_EQ(run(big).code, 0) << err_;
}

TEST_F(SimulateCli, BadSetExits2NamingThePath) {
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set policy.no_such_key=1", "--set");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set policy.bucket_bytes=lots", "policy.bucket_bytes");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set mesh.shard=0", "mesh.shard");
}

TEST_F(SimulateCli, BadArchitectureKnobsAndGpuNumbersExit2NamingPathValueAndChoices) {
  const std::string base = "simulate " + scenario("llama3-8b-fsdp-h100x8.json");
  const Result knob = run(base + " --set model.transformer.mlp=swigl");
  EXPECT_EQ(knob.code, 2);
  EXPECT_NE(knob.err.find("model.transformer.mlp"), std::string::npos) << knob.err;
  EXPECT_NE(knob.err.find("\"swigl\""), std::string::npos) << knob.err;
  EXPECT_NE(knob.err.find("did you mean \"swiglu\"?"), std::string::npos) << knob.err;
  const Result key = run(base + " --set model.transformer.posiiton=rope");
  EXPECT_EQ(key.code, 2);
  EXPECT_NE(key.err.find("did you mean \"position\"?"), std::string::npos) << key.err;
  const Result gpu = run(base + " --set cluster.gpu.attention_efficiency=2");
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.err.find("cluster.gpu.attention_efficiency"), std::string::npos) << gpu.err;
  EXPECT_NE(gpu.err.find("[0.001, 1]"), std::string::npos) << gpu.err;
  // A shape whose unit would compute for years names the knobs that set its work (an audit:
  // seq_len 1e8 was refused at model.transformer without saying which of its keys to check).
  const Result shape = run(base + " --set model.transformer.seq_len=100000000");
  EXPECT_EQ(shape.code, 2);
  EXPECT_NE(shape.err.find("over an hour; check its shape (seq_len 100000000 x micro_batch_size 1 tokens, hidden 4096"), std::string::npos)
      << shape.err;
}

TEST_F(SimulateCli, HostileFilesExit2NamingThemInsteadOfCrashing) {
  json j = json::parse(slurp(scenario("host-tiny-fsdp.json")));
  std::string text = j.dump();
  text.replace(text.find("\"micro_batches\":1"), 17, "\"micro_batches\":1e400");
  const fs::path huge = dir_ / "huge.json";
  std::ofstream(huge) << text;
  expect_input_error("simulate " + huge.string(), "huge.json");
  const fs::path deep = dir_ / "deep.json";
  j["description"] = "x";
  std::string nested = j.dump();
  nested.replace(nested.find("\"x\""), 3, std::string(100000, '[') + std::string(100000, ']'));
  std::ofstream(deep) << nested;
  expect_input_error("simulate " + deep.string(), "deep.json");
  expect_input_error("simulate " + dir_.string(), dir_.filename().string());
  expect_input_error("simulate /dev/zero", "/dev/zero");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --profile " + dir_.string(), "--profile");
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --set description=" + std::string(1000, '[') +
                         std::string(1000, ']'),
                     "--set");
}

// An --out folder that cannot be made is named as given, not as the temporary folder written first.
TEST_F(SimulateCli, AnOutFolderThatCannotBeMadeIsNamedAsGiven) {
  const Result r = run("simulate " + scenario("host-tiny-fsdp.json") + " --out /proc/shardline-out");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out: cannot create \"/proc/shardline-out\" (its folder /proc takes no new entry"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(".tmp"), std::string::npos) << r.err;
}

TEST_F(SimulateCli, UnknownFlagAndMissingScenarioExit2) {
  expect_input_error("simulate " + scenario("host-tiny-fsdp.json") + " --bogus", "--bogus");
  expect_input_error("simulate", "SCENARIO");
  const Result help = run("simulate --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--set"), std::string::npos);
}

TEST_F(SimulateCli, ScheduleListsOneLinePerOpAndItsJson) {
  const Result text = run("schedule " + scenario("host-tiny-fsdp.json"));
  const Result js = run("schedule " + scenario("host-tiny-fsdp.json") + " --json");
  ASSERT_EQ(text.code, 0) << text.err;
  ASSERT_EQ(js.code, 0) << js.err;
  const json program = json::parse(js.out);
  EXPECT_EQ(program["format"], "shardline.program");
  ASSERT_FALSE(program["ops"].empty());
  EXPECT_EQ(lines(text.out), program["ops"].size() + 2);  // summary line, column header, ops
  const json& first_ag = *std::find_if(program["ops"].begin(), program["ops"].end(), [](const json& op) { return op["kind"] == "all_gather"; });
  EXPECT_NE(text.out.find(first_ag["name"].get<std::string>()), std::string::npos);

  const Result unfused = run("schedule " + scenario("host-tiny-fsdp.json") + " --json --set policy.comm_fusion=false");
  ASSERT_EQ(unfused.code, 0) << unfused.err;
  auto all_gathers = [](const json& p) {
    return std::count_if(p["ops"].begin(), p["ops"].end(), [](const json& op) { return op["kind"] == "all_gather"; });
  };
  EXPECT_GT(all_gathers(json::parse(unfused.out)), all_gathers(program));  // one per parameter, not per unit

  const Result bad = run("schedule " + scenario("host-tiny-fsdp.json") + " --set policy.bucket_bytes=lots");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("policy.bucket_bytes"), std::string::npos) << bad.err;
}

}  // namespace
