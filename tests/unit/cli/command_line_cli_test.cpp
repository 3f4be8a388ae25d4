// What every subcommand gets from cli/command_line.h, end to end: --help (usage first, SCENARIO
// last, test hooks unlisted), a missing SCENARIO, repeated --set, and flag errors as one exit-2
// message.
#include <string>
#include <vector>

#include "cli_test_support.h"

namespace shardline::clitest {
namespace {

const std::vector<std::string> kScenarioCommands = {"simulate", "schedule", "exec", "validate", "sweep"};

class CommandLineCli : public CliTest {};

TEST_F(CommandLineCli, HelpStartsWithTheUsageAndListsSetAndScenarioLast) {
  for (const auto& name : kScenarioCommands) {
    const Result r = run(name + " --help");
    EXPECT_EQ(r.code, 0) << name;
    EXPECT_EQ(r.out.rfind("shardline " + name + " SCENARIO", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("  -h [ --help ]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  --set arg"), std::string::npos) << r.out;
    const size_t scenario = r.out.find("  --scenario arg");
    ASSERT_NE(scenario, std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\n  --", scenario + 1), std::string::npos) << name << ": SCENARIO is not last\n" << r.out;
    EXPECT_EQ(r.err, "") << name;
  }
}

TEST_F(CommandLineCli, HelpLeavesOutTestHooks) {
  const Result r = run("exec --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--no-verify"), std::string::npos) << r.out;
  for (const char* hook : {"--stall-rank", "--stall-op", "--kill-rank", "--corrupt-op"})
    EXPECT_EQ(r.out.find(hook), std::string::npos) << hook;
}

TEST_F(CommandLineCli, MissingScenarioExitsTwoWithOneMessage) {
  for (const auto& name : kScenarioCommands) {
    const Result r = run(name);
    EXPECT_EQ(r.code, 2) << name;
    EXPECT_EQ(r.err.rfind("shardline " + name + ": error: SCENARIO: give a scenario JSON file", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_EQ(r.out, "") << name;
  }
  EXPECT_EQ(run("simulate").err,
            "shardline simulate: error: SCENARIO: give a scenario JSON file, e.g. scenarios/llama3-8b-fsdp-h100x8.json\n");
  EXPECT_EQ(run("sweep").err, "shardline sweep: error: SCENARIO: give a scenario JSON file\n");
}

// The positional SCENARIO and --scenario are one argument: both given is named that way (it
// read "option '--scenario' cannot be specified more than once").
TEST_F(CommandLineCli, AScenarioGivenTwiceExitsTwoNamingScenario) {
  const Result r = run("simulate a.json --scenario b.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "shardline simulate: error: SCENARIO: given twice (as SCENARIO and as --scenario, or twice); give one scenario file\n");
}

// The same for the other positional arguments (compare's PREDICTED_DIR is --predicted).
TEST_F(CommandLineCli, APositionalGivenAlsoAsItsFlagIsNamed) {
  const Result r = run("compare a b --predicted c");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "shardline compare: error: --predicted: given twice (as a positional argument and as the flag, or twice); give it once\n");
}

TEST_F(CommandLineCli, EveryRepeatedSetApplies) {
  const std::string base = "simulate " + scenario("host-tiny-fsdp.json") + " --json";
  const Result unfused = run(base + " --set policy.comm_fusion=false");
  const Result kept = run(base + " --set policy.reshard_after_forward=false");
  const Result both = run(base + " --set policy.comm_fusion=false --set policy.reshard_after_forward=false");
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out, unfused.out);
  EXPECT_NE(both.out, kept.out);
  const Result bad_second = run(base + " --set policy.comm_fusion=false --set policy.no_such_key=1");
  EXPECT_EQ(bad_second.code, 2);
  EXPECT_NE(bad_second.err.find("no_such_key"), std::string::npos) << bad_second.err;
}

TEST_F(CommandLineCli, FlagErrorsExitTwoNamingTheFlag) {
  // Exit 2 with exactly this one-line message.
  const auto expect_refused = [&](const std::string& args, const std::string& err) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err, err) << args;
  };
  const std::string tiny = scenario("host-tiny-fsdp.json");
  expect_refused("schedule " + tiny + " --bogus", "shardline schedule: error: --bogus: unknown flag; see --help\n");
  expect_refused("simulate " + tiny + " --jsn", "shardline simulate: error: --jsn: unknown flag; did you mean --json?\n");
  // Boost's "the argument ('abc') for option ... is invalid" said nothing of what is wanted.
  expect_refused("sweep " + tiny + " --vary policy.micro_batches=1,2 --jobs abc",
                 "shardline sweep: error: --jobs: \"abc\" is not a number; see --help\n");
  expect_refused("simulate " + tiny + " --ranks all --seed 1.5", "shardline simulate: error: --seed: \"1.5\" is not a whole number; see --help\n");
  // The short spelling quotes its value too; a whole number too large for the flag says so.
  expect_refused("sweep " + tiny + " --vary policy.micro_batches=1,2 -j abc",
                 "shardline sweep: error: --jobs: \"abc\" is not a number; see --help\n");
  expect_refused("simulate " + tiny + " --ranks all --seed 9223372036854775808",
                 "shardline simulate: error: --seed: \"9223372036854775808\" is out of range; see --help\n");
  // A number too large for a real-valued flag is out of range, not "not a whole number"; hex is
  // not a (decimal) number.
  expect_refused("compare a b --tolerance 1e400", "shardline compare: error: --tolerance: \"1e400\" is out of range; see --help\n");
  expect_refused("compare a b --tolerance 0x10", "shardline compare: error: --tolerance: \"0x10\" is not a number; see --help\n");
  expect_refused("simulat " + tiny, "shardline: error: unknown command \"simulat\"; did you mean \"simulate\"? (shardline --help lists them)\n");
  const Result no_value = run("simulate " + scenario("host-tiny-fsdp.json") + " --set");
  EXPECT_EQ(no_value.code, 2);
  EXPECT_NE(no_value.err.find("'--set'"), std::string::npos) << no_value.err;
  const Result two = run("schedule " + scenario("host-tiny-fsdp.json") + " " + scenario("host-tiny-hsdp.json"));
  EXPECT_EQ(two.code, 2);
  EXPECT_EQ(two.err, "shardline schedule: error: unexpected argument \"" + scenario("host-tiny-hsdp.json") +
                         "\": it takes 1 (scenario); see --help\n");
}

// Subcommands without positional arguments refuse a stray word too (regress and calibrate used
// to ignore it and go on).
TEST_F(CommandLineCli, AStrayWordIsRefusedBySubcommandsWithoutPositionals) {
  for (const char* command : {"regress stray --baseline a.json --current b.json", "calibrate stray --np 2"}) {
    const Result r = run(command);
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_NE(r.err.find("error: unexpected argument \"stray\": it takes no positional arguments; see --help\n"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

}  // namespace
}  // namespace shardline::clitest
