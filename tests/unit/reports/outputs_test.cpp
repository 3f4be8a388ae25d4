// write_run_outputs: every file written and readable, no partial folder on error, an existing
// folder updated file by file.
#include "reports/outputs.h"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/program_json.h"
#include "report_fixtures.h"

namespace shardline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace testing_fixtures;

const char* const kFiles[] = {"metrics.json", "program.json", "timeline.json", "trace.json", "report.html"};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// `t` with an interval naming an op the timeline lacks: rendering its trace fails mid-write.
Timeline unrenderable(Timeline t) {
  t.intervals.push_back({99, 0, 0, 0, 0, 1});
  return t;
}

TEST(RunOutputs, WritesAllFiveFilesThatReadBack) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "nested" / "run";
  Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);
  write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, m);
  for (const char* f : kFiles) ASSERT_TRUE(fs::is_regular_file(out / f)) << f;
  EXPECT_EQ(entries(out), 5u);
  EXPECT_EQ(entries(out.parent_path()), 1u);  // no temporary folder left beside it

  EXPECT_DOUBLE_EQ(metrics_from_json(json::parse(slurp(out / "metrics.json"))).step_time_us, m.step_time_us);
  EXPECT_EQ(program_from_json(json::parse(slurp(out / "program.json"))).ops.size(), tiny_program().ops.size());
  EXPECT_EQ(timeline_from_json(json::parse(slurp(out / "timeline.json"))).intervals.size(), t.intervals.size());
  EXPECT_TRUE(json::parse(slurp(out / "trace.json")).contains("traceEvents"));
  EXPECT_EQ(slurp(out / "report.html").rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(RunOutputs, AnErrorLeavesNoPartialFolder) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  const Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);
  EXPECT_ANY_THROW(write_run_outputs(out.string(), tiny_scenario(), tiny_program(), unrenderable(t), m));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(entries(scratch.path()), 0u);  // the temporary folder is gone too
}

TEST(RunOutputs, ReplacesAnExistingFolderFileByFile) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  fs::create_directories(out);
  std::ofstream(out / "metrics.json") << "stale";
  std::ofstream(out / "notes.txt") << "mine";
  Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);

  EXPECT_ANY_THROW(write_run_outputs(out.string(), tiny_scenario(), tiny_program(), unrenderable(t), m));
  EXPECT_EQ(slurp(out / "metrics.json"), "stale");  // a failed run changes nothing
  EXPECT_FALSE(fs::exists(out / "report.html"));

  write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, m);
  EXPECT_NO_THROW(json::parse(slurp(out / "metrics.json")));
  EXPECT_EQ(slurp(out / "notes.txt"), "mine");
  for (const char* f : kFiles) EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  EXPECT_EQ(entries(scratch.path()), 1u);
}

// An every-rank run's ranks.json does not outlive it: a later one-rank run into the same folder
// removes it (it would describe another run beside these metrics); a failed run keeps it. So do
// a failed exec's partial timelines and rank reports; the user's own files stay.
TEST(RunOutputs, AStaleRanksFileGoesWithTheRunItDescribed) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  fs::create_directories(out);
  std::ofstream(out / "ranks.json") << "earlier every-rank run";
  Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);
  EXPECT_ANY_THROW(write_run_outputs(out.string(), tiny_scenario(), tiny_program(), unrenderable(t), m));
  EXPECT_EQ(slurp(out / "ranks.json"), "earlier every-rank run");
  std::ofstream(out / "timeline.partial.rank1.json") << "{}";  // a failed exec's leftovers
  std::ofstream(out / "error.rank1.txt") << "rank 1 timed out";
  std::ofstream(out / "compare.json") << "{}";  // a compare of the earlier run (compare's default --out)
  std::ofstream(out / "compare.html") << "earlier";
  std::ofstream(out / "sweep.csv") << "a sweep written here before";
  std::ofstream(out / "sweep.json") << "{}";
  std::ofstream(out / "notes.txt") << "mine";
  write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, m);
  EXPECT_FALSE(fs::exists(out / "ranks.json"));
  EXPECT_FALSE(fs::exists(out / "timeline.partial.rank1.json"));
  EXPECT_FALSE(fs::exists(out / "error.rank1.txt"));
  EXPECT_FALSE(fs::exists(out / "compare.json"));
  EXPECT_FALSE(fs::exists(out / "compare.html"));
  EXPECT_FALSE(fs::exists(out / "sweep.csv"));
  EXPECT_FALSE(fs::exists(out / "sweep.json"));
  EXPECT_EQ(slurp(out / "notes.txt"), "mine");
  EXPECT_TRUE(fs::is_regular_file(out / "metrics.json"));
}

// A folder where the run writes a file (report.html/ holding the user's notes) is not set aside
// and deleted with the old files: the run is refused and the folder stays as it was.
TEST(RunOutputs, AFolderNamedLikeAnOutputFileIsRefusedNotDeleted) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  fs::create_directories(out / "report.html" / "assets");
  std::ofstream(out / "report.html" / "assets" / "notes.txt") << "mine";
  Timeline t = tiny_timeline();
  try {
    write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, compute_metrics(t));
    ADD_FAILURE() << "a folder named report.html was replaced";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--out");
    EXPECT_NE(std::string(e.what()).find("report.html\" is a folder, where this run writes a file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(out / "report.html" / "assets" / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(out / "metrics.json"));
}

// SIGTERM while the files are written: the process ends by that signal, the temporary folder
// is removed, and an existing output folder keeps its old files.
TEST(RunOutputs, ASignalDuringTheWriteLeavesNothingBehind) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  fs::create_directories(out);
  std::ofstream(out / "metrics.json") << "old";
  Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);
  EXPECT_EXIT(
      {
        ::setenv("SHARDLINE_TEST_SIGNAL_AFTER_FILE", "timeline.json", 1);
        write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, m);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_EQ(entries(scratch.path()), 1u);  // no .run.tmp-* beside it
  EXPECT_EQ(entries(out), 1u);
  EXPECT_EQ(slurp(out / "metrics.json"), "old");
}

TEST(RunOutputs, TheCurrentOrParentFolderIsAnInputError) {
  Timeline t = tiny_timeline();
  // However written: the root and the current folder's absolute path name it or a folder above.
  const std::string here = std::filesystem::current_path().string();
  const std::string above = std::filesystem::current_path().parent_path().string();
  for (const std::string& dir : {std::string("."), std::string(".."), std::string("a/.."), std::string("/"), here, here + "/",
                                 above}) {
    try {
      write_run_outputs(dir, tiny_scenario(), tiny_program(), t, compute_metrics(t));
      FAIL() << "expected InputError for " << dir;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "--out");
      EXPECT_NE(std::string(e.what()).find("the current folder or one above it"), std::string::npos) << e.what();
    }
  }
  // A folder inside the current one is the run's own.
  EXPECT_EQ(checked_output_folder(here + "/out/run", "--out"), std::filesystem::path(here + "/out/run"));
  EXPECT_EQ(checked_output_folder("out/run/", "--out"), std::filesystem::path("out/run"));
}

// Any folder of outputs (compare's, sweep's) goes through the same writer: a failed render
// changes nothing, other files in the folder stay.
TEST(OutputFolder, AFailedRenderLeavesTheExistingFolderAsItWas) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "cmp";
  write_output_folder(out.string(), {{"a.json", [] { return std::string("1"); }}, {"b.html", [] { return std::string("2"); }}},
                      "--out");
  std::ofstream(out / "mine.txt") << "mine";
  EXPECT_ANY_THROW(write_output_folder(
      out.string(), {{"a.json", [] { return std::string("new"); }}, {"b.html", []() -> std::string { throw InputError("x", "y"); }}},
      "--out"));
  EXPECT_EQ(slurp(out / "a.json"), "1");
  EXPECT_EQ(slurp(out / "b.html"), "2");
  EXPECT_EQ(slurp(out / "mine.txt"), "mine");
  EXPECT_EQ(entries(scratch.path()), 1u);
}

TEST(OutputFolder, OneFileIsReplacedWholeOrNotAtAll) {
  ScratchDir scratch;
  const fs::path file = scratch.path() / "profile.json";
  write_file_atomically(file.string(), "old", "--out");
  write_file_atomically(file.string(), "new", "--out");
  EXPECT_EQ(slurp(file), "new");
  EXPECT_EQ(entries(scratch.path()), 1u);  // no temporary file beside it
  try {
    write_file_atomically(scratch.path().string(), "x", "--html");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--html");
  }
}

TEST(RunOutputs, AFileInTheWayIsAnInputError) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "run";
  std::ofstream(out) << "not a folder";
  Timeline t = tiny_timeline();
  try {
    write_run_outputs(out.string(), tiny_scenario(), tiny_program(), t, compute_metrics(t));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--out");
  }
}

}  // namespace
}  // namespace shardline
