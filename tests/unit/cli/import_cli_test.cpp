// `shardline import` end to end: a summary of a real profiler trace; the measured timeline of
// generated FSDP2 traces (the exact round trip is tests/integration/import_roundtrip.py); and
// exit 2 with the file or flag named for every bad input the issue lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "cli_test_support.h"

namespace shardline::clitest {
namespace {

const std::string kHta = std::string(SHARDLINE_SOURCE_DIR) + "/tests/data/hta/";

class ImportCli : public CliTest {
 protected:
  // FSDP2-shaped traces of host-tiny-fsdp (2 ranks) in dir_/traces.
  void generate_fsdp_traces() {
    ASSERT_EQ(run("simulate " + scenario("host-tiny-fsdp.json") + " --ranks all --trace-ranks all --out sim").code, 0) << err_;
    const std::string cmd = "cd " + dir_.string() + " && python3 " + SHARDLINE_SOURCE_DIR + "/scripts/fsdp2-trace sim --out traces";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  static void expect_one_error_line(const Result& r, const std::string& needle) {
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
};

TEST_F(ImportCli, SummarizesARealTraceWithoutAScenario) {
  const Result r = run("import " + kHta + "nccl_parser_config-nccl_data.json.gz --out summary");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("all_reduce 15 other 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ProfilerStep#4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "summary" / "summary.json"));
}

TEST_F(ImportCli, WritesTheMeasuredRunOfGeneratedTraces) {
  generate_fsdp_traces();
  const Result r = run("import traces/rank-0.json.gz traces/rank-1.json.gz --scenario " + scenario("host-tiny-fsdp.json") + " --out imported");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 2 profiler steps on 2 ranks"), std::string::npos) << r.out;
  for (const char* f : {"timeline.json", "metrics.json", "report.html", "trace.json", "import.json", "summary.json"})
    EXPECT_TRUE(fs::exists(dir_ / "imported" / f)) << f;
  EXPECT_EQ(run("compare sim imported --out cmp").code, 0) << out_ << err_;
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
  expect_one_error_line(run("import"), "TRACE: give at least one");
  expect_one_error_line(run("import cpu.json --set policy.comm_fusion=false"), "--set: needs --scenario");
}

}  // namespace
}  // namespace shardline::clitest
