// `shardline simulate --ranks all`: every rank simulated; the summary, --json and --out carry
// the per-rank spread, and the timeline keeps rank 0, the slowest, the fastest and --trace-ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "core/variation.h"

namespace fs = std::filesystem;
using nlohmann::json;
using shardline::clitest::Result;
using shardline::clitest::scenario;
using shardline::clitest::slurp;

namespace {

class SimulateRanksCli : public shardline::clitest::CliTest {
 protected:
  // Each (arguments, flag): exit 2, one line on stderr naming the flag, nothing on stdout.
  void expect_flag_errors(const std::vector<std::pair<std::string, std::string>>& cases) {
    for (const auto& [args, flag] : cases) {
      const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " " + args);
      EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find(flag), std::string::npos) << args << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
    }
  }
};

std::set<int> timeline_ranks(const json& timeline) {
  std::set<int> ranks;
  for (const json& iv : timeline.at("intervals")) ranks.insert(iv.at(1).get<int>());
  return ranks;
}

TEST_F(SimulateRanksCli, EveryRankWithoutVariationMatchesTheRepresentativeRank) {
  const Result one = run("simulate " + scenario("host-tiny-hsdp.json") + " --json");
  const Result all = run("simulate " + scenario("host-tiny-hsdp.json") + " --ranks all --json");
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(all.code, 0) << all.err;
  json a = json::parse(all.out);
  const json ranks = a.at("ranks");
  a.erase("ranks");
  EXPECT_EQ(a, json::parse(one.out));
  EXPECT_EQ(ranks.at("ranks"), 4);
  EXPECT_EQ(ranks.at("straggler_cost"), 1.0);
  EXPECT_TRUE(ranks.at("most_waiting").is_null());
  EXPECT_EQ(ranks.at("critical_path").at("hops"), 0);
  EXPECT_EQ(ranks.at("step_us").at("max"), a.at("step_time_us"));
}

TEST_F(SimulateRanksCli, OutputsKeepTheRanksThatMatterAndTheOnesAskedFor) {
  const fs::path out = dir_ / "ranks";
  const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " --ranks all --trace-ranks 3 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* label : {"every rank", "straggler cost", "waiting in collectives", "critical path"})
    EXPECT_NE(r.out.find(label), std::string::npos) << label << "\n" << r.out;
  const json ranks = json::parse(slurp(out / "ranks.json"));
  EXPECT_EQ(ranks.at("ranks"), 4);
  const json timeline = json::parse(slurp(out / "timeline.json"));
  EXPECT_EQ(timeline.at("ranks"), 4);
  EXPECT_EQ(timeline_ranks(timeline), (std::set<int>{0, 3}));  // symmetric: slowest and fastest are rank 0
  const Result every = run("simulate " + scenario("host-tiny-hsdp.json") + " --ranks all --trace-ranks all --out " + (dir_ / "all").string());
  ASSERT_EQ(every.code, 0) << every.err;
  EXPECT_EQ(timeline_ranks(json::parse(slurp(dir_ / "all" / "timeline.json"))), (std::set<int>{0, 1, 2, 3}));
}

// A straggler that ties with the ranks that waited for it (FSDP: every rank ends at the last
// reduce-scatter) is neither the slowest nor the fastest by the lowest-rank rule; the timeline
// keeps it anyway, as it keeps every rank a variation names.
TEST_F(SimulateRanksCli, TheTimelineKeepsTheStragglerItWasAskedAbout) {
  const fs::path out = dir_ / "straggler";
  const Result r = run("simulate " + scenario("host-tiny-fsdp.json") +
                       " --set mesh.shard=4 --set cluster.gpus_per_node=4 --straggler 2=1.5 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json timeline = json::parse(slurp(out / "timeline.json"));
  EXPECT_EQ(timeline_ranks(timeline), (std::set<int>{0, 2}));
  // The run's folder says what variation it ran with (to reproduce it, or to compare against a
  // run of the same), and so does its summary.
  EXPECT_EQ(timeline.at("variation"), json::parse(R"({"stragglers": [{"rank": 2, "compute_factor": 1.5}]})"));
  EXPECT_NE(r.out.find("variation            straggler rank 2 computes x1.5\n"), std::string::npos) << r.out;
  EXPECT_NE(slurp(out / "report.html").find("straggler rank 2 computes x1.5"), std::string::npos);
  // Without variation: neither.
  const Result plain = run("simulate " + scenario("host-tiny-fsdp.json") + " --out " + (dir_ / "plain").string());
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(json::parse(slurp(dir_ / "plain" / "timeline.json")).at("variation"), json::object());  // recorded: none
  EXPECT_EQ(plain.out.find("variation "), std::string::npos) << plain.out;
}

TEST_F(SimulateRanksCli, BadRankFlagsExitTwoNamingTheFlag) {
  const std::string out = " --out " + (dir_ / "refused").string();
  expect_flag_errors({{"--ranks some", "--ranks"},
                      {"--trace-ranks 1" + out, "--trace-ranks"},  // needs --ranks all
                      {"--ranks all --trace-ranks 1", "--trace-ranks"},  // needs --out: it chooses what --out writes
                      {"--ranks all --trace-ranks 4" + out, "--trace-ranks"},
                      {"--ranks all --trace-ranks 1,x" + out, "--trace-ranks"},
                      {"--ranks all --trace-ranks -1" + out, "--trace-ranks"},
                      // digits only, as --straggler's rank: no sign, no padding
                      {"--ranks all --trace-ranks +1" + out, "--trace-ranks"},
                      {"--ranks all --trace-ranks '0, 1'" + out, "--trace-ranks"},
                      {"--ranks all --trace-ranks 1," + out, "--trace-ranks"},  // a trailing comma, as ",1" and "1,,2"
                      // every rank of 4,096 written out: refused before simulating, no folder left
                      {"--set cluster.nodes=2048 --set mesh.replicate=2048 --ranks all --trace-ranks all --out " + (dir_ / "big").string(),
                       "--trace-ranks"}});
  EXPECT_FALSE(fs::exists(dir_ / "big"));
  EXPECT_FALSE(fs::exists(dir_ / "refused"));
  EXPECT_NE(run("simulate " + scenario("host-tiny-hsdp.json") + " --ranks all --trace-ranks 1").err.find("give --out"), std::string::npos);
}

// Every rank keeps its start and end of every op (16 bytes each) and its own state: a million
// ranks of this small Program (7.6 GB) is refused before simulating, naming the mesh: its ranks,
// not the Program's ops, are what is large.
TEST_F(SimulateRanksCli, EveryRankOfAHugeWorldIsRefusedBeforeSimulating) {
  const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " --set cluster.nodes=524288 --set mesh.replicate=524288 --ranks all");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("shardline simulate: error: mesh: every rank is simulated", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("1048576 ranks x 290 ops"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // One representative rank of the same world is fine.
  EXPECT_EQ(run("simulate " + scenario("host-tiny-hsdp.json") + " --set cluster.nodes=524288 --set mesh.replicate=524288 --json").code, 0);
  // Spans alone would pass here (a million ranks x 151 ops: 2.5 GB of them, once 3 minutes and
  // 5.1 GB peak): each rank's state counts too.
  const Result fsdp = run("simulate " + scenario("host-tiny-fsdp.json") +
                          " --set cluster.nodes=1048576 --set cluster.gpus_per_node=1 --set mesh.shard=1048576 --ranks all");
  EXPECT_EQ(fsdp.code, 2) << fsdp.out << fsdp.err;
  EXPECT_EQ(fsdp.err.rfind("shardline simulate: error: mesh: every rank is simulated", 0), 0u) << fsdp.err;
  EXPECT_NE(fsdp.err.find("1048576 ranks x 151 ops is 5.3 GB"), std::string::npos) << fsdp.err;
}

// Too many ops for every rank: micro-batches are named only when one micro-batch would fit;
// here even one (1024 ranks x 1.36 M ops) is over, so the bucket size is named.
TEST_F(SimulateRanksCli, TheRefusalNamesAKeyThatCanFixIt) {
  const std::string base = "simulate " + scenario("llama3-405b-hsdp-h100x1024.json") + " --jitter 0.05 --set policy.bucket_bytes=16MiB";
  Result r = run(base + " --set policy.micro_batches=4");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("shardline simulate: error: policy.bucket_bytes: every rank is simulated", 0), 0u) << r.err;
  r = run(base + " --set policy.bucket_bytes=256MiB --set policy.micro_batches=4");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("shardline simulate: error: policy.micro_batches: every rank is simulated", 0), 0u) << r.err;
}

TEST_F(SimulateRanksCli, AStragglerFlagSimulatesEveryRankAndNamesIt) {
  const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " --straggler 1=1.5 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json ranks = json::parse(r.out).at("ranks");
  EXPECT_EQ(ranks.at("step_us").at("max_rank"), 1);
  EXPECT_GT(ranks.at("straggler_cost").get<double>(), 1.2);
  EXPECT_EQ(ranks.at("critical_path").at("rank"), 1);
  EXPECT_GT(ranks.at("most_waiting").at("wait_us").get<double>(), 0);
  // The same draw for the same seed: byte for byte.
  const Result a = run("simulate " + scenario("host-tiny-hsdp.json") + " --jitter 0.1 --seed 5 --json");
  const Result b = run("simulate " + scenario("host-tiny-hsdp.json") + " --jitter 0.1 --seed 5 --json");
  const Result c = run("simulate " + scenario("host-tiny-hsdp.json") + " --jitter 0.1 --seed 6 --json");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

// A spread of the ranks' speeds: each rank one factor of its own (core/variation.h), so the
// critical path runs on the slowest chip, and the step is longer than without the spread exactly
// when that chip is slower than the mean (four draws may all be faster). Another seed, another spread.
TEST_F(SimulateRanksCli, ARankComputeSpreadMakesTheSlowestDrawnRankTheStraggler) {
  std::vector<double> costs;
  for (uint64_t seed : {4, 5}) {
    const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " --set variation.rank_compute_spread.cv=0.3 --seed " +
                         std::to_string(seed) + " --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json ranks = json::parse(r.out).at("ranks");
    shardline::VariationSpec v;
    v.seed = seed;
    v.rank_compute_spread.cv = 0.3;
    int slowest = 0;
    for (int rank = 1; rank < 4; ++rank)
      if (shardline::rank_compute_spread_factor(v, rank) > shardline::rank_compute_spread_factor(v, slowest)) slowest = rank;
    EXPECT_EQ(ranks.at("critical_path").at("rank"), slowest) << seed << ": " << ranks.dump();
    EXPECT_EQ(ranks.at("compute_factor").at("max_rank"), slowest);
    EXPECT_DOUBLE_EQ(ranks.at("compute_factor").at("max").get<double>(), shardline::rank_compute_spread_factor(v, slowest));
    costs.push_back(ranks.at("straggler_cost").get<double>());
    EXPECT_EQ(costs.back() > 1.0, shardline::rank_compute_spread_factor(v, slowest) > 1.0) << seed << ": " << ranks.dump();
  }
  EXPECT_NE(costs[0], costs[1]);
}

TEST_F(SimulateRanksCli, BadVariationFlagsExitTwoNamingTheFlag) {
  expect_flag_errors({{"--straggler 4=1.5", "--straggler 4=1.5"},  // 4 ranks: 0..3
                      {"--straggler 1=0", "--straggler 1=0"},
                      // The value as given ("0", "3"), not as a double prints ("0.0", "3.0").
                      {"--straggler 1=0", "compute_factor: 0 is out of range"},
                      {"--jitter 3", "variation.compute_jitter.cv: 3 is out of range"},
                      // A flag given twice that is no positional argument is not called one.
                      {"--jitter 0.1 --jitter 0.2", "--jitter: given twice; give it once"},
                      // A flag whose value is missing, another flag after it.
                      {"--jitter --seed 3", "--jitter: needs a value; the next word, \"--seed\", is a flag"},
                      // Counts agree in number: "1 node", "2 GPUs".
                      {"--set cluster.nodes=1 --set mesh.shard=2 --set mesh.replicate=1 --set cluster.gpus_per_node=2 "
                       "--set 'variation.stragglers=[{\"node\":1,\"compute_factor\":2}]'",
                       "expected 0..0 (1 node of 2 GPUs)"},
                      {"--straggler 1", "--straggler"},
                      {"--straggler 1=2 --ranks one", "--ranks"},
                      {"--ranks all --trace-ranks ''", "--trace-ranks: give ranks"},
                      {"--jitter -0.1", "--jitter"},
                      {"--jitter 0.1 --seed -3", "--seed"},
                      // Not "null is out of range": JSON has no NaN, the flag says what it needs.
                      {"--straggler 1=nan", "--straggler: \"1=nan\": the factor must be a finite number"},
                      {"--straggler 1=inf", "--straggler: \"1=inf\": the factor must be a finite number"},
                      {"--jitter nan", "--jitter: the coefficient of variation must be a finite number"},
                      // The range says its upper end.
                      {"--straggler 1=1e7", "expected a factor in [0.001, 1000]"},
                      {"--straggler 1=0.0001", "expected a factor in [0.001, 1000]"},
                      // Entries naming one rank multiply; so does their bound.
                      {"--straggler 1=40 --straggler 1=40", "--straggler: variation.stragglers: the entries naming rank 1 multiply to 1600"},
                      {"--straggler 1=1e999", "--straggler: \"1=1e999\": the factor must be a finite number"},
                      // Plain decimals only: not hex, signs or padding that std::stod would read.
                      {"--straggler 1=0x10", "--straggler: \"1=0x10\" is not RANK=FACTOR"},
                      {"--straggler +1=1.5", "--straggler: \"+1=1.5\" is not RANK=FACTOR"},
                      {"--straggler ' 1=1.5'", "--straggler: \" 1=1.5\" is not RANK=FACTOR"},
                      {"--straggler 1=1.5.2", "--straggler: \"1=1.5.2\" is not RANK=FACTOR"},
                      {"--straggler 0=-1", "--straggler: \"0=-1\": the factor must be a number in [0.001, 1000], written without a sign"},
                      {"--straggler 99999999999=1.5", "--straggler: \"99999999999=1.5\": rank 99999999999 is out of range"},
                      // A seed with nothing to seed.
                      {"--straggler 1=1.5 --seed 3", "--seed: seeds the draws of a jitter or a rank compute spread, and neither is asked for"}});
  // Accepted spellings of a factor.
  for (const char* f : {"1=1.5", "1=2", "1=.5", "1=2.", "1=1e-1", "1=15E-1"})
    EXPECT_EQ(run("simulate " + scenario("host-tiny-hsdp.json") + " --straggler " + f + " --json").code, 0) << f;
  // A jitter of 0 with a seed is asked for and harmless, from the flags as from the scenario
  // (a sweep over the cv with one seed has a cv 0 point).
  EXPECT_EQ(run("simulate " + scenario("host-tiny-hsdp.json") + " --jitter 0 --seed 3 --json").code, 0);
  EXPECT_EQ(run("simulate " + scenario("host-tiny-hsdp.json") + " --set 'variation={\"compute_jitter\":{\"cv\":0},\"seed\":3}' --json").code, 0);
}

}  // namespace

namespace {

// A sweep point with a variation is simulated on every rank: the cv 0 row is the plain step,
// and a jittered one is the slowest rank's step of `simulate --jitter`.
TEST_F(SimulateRanksCli, SweepPointsWithAVariationSimulateEveryRank) {
  const fs::path out = dir_ / "sweep";
  const Result r = run("sweep " + scenario("host-tiny-hsdp.json") + " --vary variation.compute_jitter.cv=0,0.2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json rows = json::parse(slurp(out / "sweep.json")).at("rows");
  ASSERT_EQ(rows.size(), 2u);
  const Result plain = run("simulate " + scenario("host-tiny-hsdp.json") + " --json");
  const Result jittered = run("simulate " + scenario("host-tiny-hsdp.json") + " --jitter 0.2 --json");
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(jittered.code, 0) << jittered.err;
  EXPECT_EQ(rows[0].at("metrics").at("step_time_us"), json::parse(plain.out).at("step_time_us"));
  EXPECT_EQ(rows[1].at("metrics").at("step_time_us"), json::parse(jittered.out).at("step_time_us"));
  EXPECT_NE(rows[0].at("metrics").at("step_time_us"), rows[1].at("metrics").at("step_time_us"));
  // The cv 0 row is the column's baseline: straggler cost 1, not blank; the jittered row's is
  // simulate's.
  EXPECT_EQ(rows[0].at("straggler_cost"), 1.0);
  EXPECT_EQ(rows[1].at("straggler_cost"), json::parse(jittered.out).at("ranks").at("straggler_cost"));
  // A sweep that varies no variation key has no straggler cost at all.
  ASSERT_EQ(run("sweep " + scenario("host-tiny-hsdp.json") + " --vary policy.forward_prefetch=0,1 --out " + (dir_ / "plain").string()).code, 0);
  // Parsed into a name first: a range-for over .at() of a temporary reads it after it is freed (ASan).
  const json plain_sweep = json::parse(slurp(dir_ / "plain" / "sweep.json"));
  for (const json& row : plain_sweep.at("rows")) EXPECT_FALSE(row.contains("straggler_cost")) << row;
}

}  // namespace
