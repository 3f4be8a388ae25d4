// Metrics and history files with impossible values or damage: refused with the file, line and
// key named, before anything is judged or appended.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "reports/history.h"
#include "reports/regress.h"
#include "report_fixtures.h"

namespace shardline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_fixtures::ScratchDir;

Metrics good() {
  Metrics m;
  m.step_time_us = 1000;
  m.compute_busy_us = 900;
  m.comm_busy_us = 400;
  m.exposed_comm_us = 100;
  m.overlap_efficiency = 0.75;
  m.forward_us = 300;
  m.backward_us = 700;
  m.peak_memory_bytes = 1 << 20;
  m.memory_capacity_bytes = 1 << 30;
  m.by_kind["all_gather"] = {4, 4096, 200};
  return m;
}

std::string where_of(const json& j) {
  try {
    metrics_from_json(j);
  } catch (const InputError& e) {
    return e.where();
  }
  return "";
}

TEST(MetricsReaderRobust, ValuesComputeMetricsNeverWritesAreRefused) {
  const json base = metrics_to_json(good());
  EXPECT_EQ(where_of(base), "");
  const std::pair<const char*, json> bad[] = {
      {"step_time_us", -5},           {"step_time_us", 0},          {"overlap_efficiency", 2},
      {"overlap_efficiency", -0.01},  {"compute_busy_us", -1},      {"comm_busy_us", -1e-9},
      {"exposed_comm_us", -100},      {"forward_us", -1},           {"backward_us", -1},
      {"peak_memory_bytes", -1},      {"peak_reserved_bytes", -1},  {"memory_capacity_bytes", -1}};
  for (const auto& [key, value] : bad) {
    json j = base;
    j[key] = value;
    EXPECT_EQ(where_of(j), key) << key << " = " << value;
  }
  json j = base;
  j["by_kind"]["all_gather"]["busy_us"] = -1;
  EXPECT_EQ(where_of(j), "by_kind.all_gather.busy_us");
  j = base;
  j["by_kind"]["all_gather"]["bytes"] = -1;
  EXPECT_EQ(where_of(j), "by_kind.all_gather.bytes");
  j = base;
  j["by_kind"]["all_gather"]["count"] = -1;
  EXPECT_EQ(where_of(j), "by_kind.all_gather.count");
  // The edges are fine: no overlap at all, or all of it.
  for (const double e : {0.0, 1.0}) {
    j = base;
    j["overlap_efficiency"] = e;
    EXPECT_EQ(where_of(j), "") << e;
  }
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RegressRobust, ImpossibleMetricsNameTheFileAndKey) {
  ScratchDir t;
  Metrics cur = good();
  cur.step_time_us = -5;  // was "improved"
  write(t.path() / "b/a.json", metrics_to_json(good()).dump());
  write(t.path() / "c/a.json", metrics_to_json(cur).dump());
  try {
    regress_compare((t.path() / "b").string(), (t.path() / "c").string(), 0.01);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), (t.path() / "c/a.json").string());
    EXPECT_NE(std::string(e.what()).find("step_time_us"), std::string::npos) << e.what();
  }
}

TEST(RegressRobust, NothingToCompareIsAnError) {
  ScratchDir t;
  fs::create_directories(t.path() / "b");
  fs::create_directories(t.path() / "c");
  try {
    regress_compare((t.path() / "b").string(), (t.path() / "c").string(), 0.01);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--current");
    EXPECT_NE(std::string(e.what()).find("nothing was compared"), std::string::npos) << e.what();
  }
  // One side alone still reports (and fails) per scenario.
  write(t.path() / "b/a.json", metrics_to_json(good()).dump());
  EXPECT_TRUE(regress_compare((t.path() / "b").string(), (t.path() / "c").string(), 0.01).failed());
}

HistoryRecord record(const std::string& commit) { return {"s", good(), commit, "2026-01-01T00:00:00Z", "sim"}; }

TEST(HistoryRobust, AppendRefusesADamagedFileAndLeavesItAlone) {
  ScratchDir t;
  const std::string path = (t.path() / "h.jsonl").string();
  append_history(path, record("a"));
  std::ofstream(path, std::ios::app) << "\n{\"scenario\": 3}\n";  // a blank line is fine; line 3 is not
  const std::string before = slurp(path);
  try {
    append_history(path, record("b"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path + ":3");
  }
  EXPECT_EQ(slurp(path), before);
}

TEST(HistoryRobust, AppendCompletesALastLineWithoutItsNewline) {
  ScratchDir t;
  const std::string path = (t.path() / "h.jsonl").string();
  write(path, history_record_to_line(record("a")));  // no final newline
  append_history(path, record("b"));
  const auto recs = read_history(path);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].commit, "a");
  EXPECT_EQ(recs[1].commit, "b");
}

TEST(HistoryRobust, AFolderIsNoHistory) {
  ScratchDir t;
  for (auto* call : {+[](const std::string& p) { read_history(p); },
                     +[](const std::string& p) { append_history(p, record("a")); }}) {
    try {
      call(t.path().string());
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "--history");
      EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(fs::is_empty(t.path()));
}

}  // namespace
}  // namespace shardline
