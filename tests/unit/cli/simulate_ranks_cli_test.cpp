// `shardline simulate --ranks all`: every rank simulated; the summary, --json and --out carry
// the per-rank spread, and the timeline keeps rank 0, the slowest, the fastest and --trace-ranks.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"

namespace fs = std::filesystem;
using nlohmann::json;
using shardline::clitest::Result;
using shardline::clitest::scenario;
using shardline::clitest::slurp;

namespace {

class SimulateRanksCli : public shardline::clitest::CliTest {};

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

TEST_F(SimulateRanksCli, BadRankFlagsExitTwoNamingTheFlag) {
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"--ranks some", "--ranks"},
           {"--trace-ranks 1", "--trace-ranks"},  // needs --ranks all
           {"--ranks all --trace-ranks 4", "--trace-ranks"},
           {"--ranks all --trace-ranks 1,x", "--trace-ranks"},
           {"--ranks all --trace-ranks -1", "--trace-ranks"}}) {
    const Result r = run("simulate " + scenario("host-tiny-hsdp.json") + " " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
}

}  // namespace
