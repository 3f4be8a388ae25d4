// Regression check against a baseline (injected regressions fail, improvements pass, missing
// files are reported) and the JSON-lines history (append and read back).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "reports/history.h"
#include "reports/regress.h"

namespace fs = std::filesystem;

namespace shardline {
namespace {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("shardline_regress_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

Metrics metrics(double step_us, double exposed_us, double efficiency) {
  Metrics m;
  m.step_time_us = step_us;
  m.exposed_comm_us = exposed_us;
  m.compute_busy_us = step_us - exposed_us;
  m.comm_busy_us = exposed_us / (1 - efficiency + 1e-12);
  m.overlap_efficiency = efficiency;
  m.peak_memory_bytes = 1 << 30;
  m.memory_capacity_bytes = 80LL << 30;
  m.memory_recorded = true;
  m.by_kind["all_gather"] = {10, 1 << 20, 100};
  return m;
}

void write(const fs::path& p, const nlohmann::json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(2);
}

void write_metrics(const fs::path& p, const Metrics& m) { write(p, metrics_to_json(m)); }

TEST(RegressRule, StepTimeIsRelativeEfficiencyIsAbsolute) {
  const Metrics base = metrics(1000, 100, 0.80);
  EXPECT_FALSE(step_time_regressed(base, metrics(1010, 100, 0.80), 0.01));  // exactly +1%
  EXPECT_TRUE(step_time_regressed(base, metrics(1011, 100, 0.80), 0.01));
  EXPECT_FALSE(step_time_regressed(base, metrics(900, 100, 0.80), 0.0));
  EXPECT_TRUE(step_time_regressed(base, metrics(1000.001, 100, 0.80), 0.0));
  EXPECT_FALSE(efficiency_regressed(base, metrics(1000, 100, 0.795), 0.01));
  EXPECT_TRUE(efficiency_regressed(base, metrics(1000, 100, 0.785), 0.01));
  EXPECT_FALSE(efficiency_regressed(base, metrics(1000, 100, 0.90), 0.0));
  EXPECT_TRUE(efficiency_regressed(base, metrics(1000, 100, 0.7999), 0.0));
}

TEST(Regress, InjectedRegressionFailsInDirectories) {
  TempDir t;
  write_metrics(t / "base/llama.json", metrics(1000, 100, 0.8));
  write_metrics(t / "base/gpt.json", metrics(2000, 200, 0.7));
  write_metrics(t / "cur/llama/metrics.json", metrics(1000, 100, 0.8));  // run-folder form
  write_metrics(t / "cur/gpt.json", metrics(2100, 300, 0.6));           // slower and less overlap
  const RegressReport r = regress_compare((t / "base").string(), (t / "cur").string(), 0.01);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.entries[0].name, "gpt");
  EXPECT_TRUE(r.entries[0].step_time_regressed);
  EXPECT_TRUE(r.entries[0].efficiency_regressed);
  EXPECT_EQ(r.entries[0].status(), "REGRESSED (step time, overlap efficiency)");
  EXPECT_EQ(r.entries[1].name, "llama");
  EXPECT_FALSE(r.entries[1].failed());
  const std::string table = regress_table(r);
  EXPECT_NE(table.find("+5.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("-0.1000"), std::string::npos) << table;
  EXPECT_NE(table.find("1 of 2 scenarios fail"), std::string::npos) << table;
}

// Tokens/s per GPU is in the table, baseline -> current, but the verdict stays on step time and
// overlap: a baseline written before throughput existed reads n/a.
TEST(Regress, TableShowsTokensPerGpuWithoutJudgingIt) {
  TempDir t;
  Metrics base = metrics(1000, 100, 0.8), cur = metrics(1000, 100, 0.8);
  base.throughput.tokens_per_s_per_gpu = 8000;
  cur.throughput.tokens_per_s_per_gpu = 6000;  // e.g. a file edited by hand: only step time decides
  base.throughput.mfu = 0.40;
  cur.throughput.mfu = 0.30;
  write_metrics(t / "base/a.json", base);
  write_metrics(t / "cur/a.json", cur);
  nlohmann::json old = metrics_to_json(metrics(1000, 100, 0.8));
  old.erase("throughput");
  old.erase("peak_reserved_bytes");
  write(t / "base/b.json", old);
  write_metrics(t / "cur/b.json", cur);
  const RegressReport r = regress_compare((t / "base").string(), (t / "cur").string(), 0.0);
  EXPECT_FALSE(r.failed());
  const std::string table = regress_table(r);
  EXPECT_NE(table.find("tokens/s/GPU"), std::string::npos) << table;
  EXPECT_NE(table.find("8,000 -> 6,000  -25.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("n/a -> 6,000"), std::string::npos) << table;
  EXPECT_NE(table.find("40.0% -> 30.0%  -10.0 pp"), std::string::npos) << table;
  EXPECT_NE(table.find("n/a -> 30.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("tokens/s per GPU is shown, not judged, where the tokens per step and the GPUs are the same"), std::string::npos)
      << table;
  EXPECT_NE(table.find("MFU is shown, never judged"), std::string::npos) << table;
}

// Metrics of a step of `step_us` that moves `tokens_per_step` tokens over `gpus` GPUs.
Metrics with_tokens(double step_us, double tokens_per_step, double gpus) {
  Metrics m = metrics(step_us, 100, 0.8);
  m.throughput.tokens_per_s = tokens_per_step / (step_us / 1e6);
  m.throughput.tokens_per_s_per_gpu = *m.throughput.tokens_per_s / gpus;
  return m;
}

// With a different amount of work per step (here twice the tokens: a larger micro-batch), a
// longer step is not a regression: tokens/s per GPU is judged instead, with the same relative
// tolerance, and a footnote says so. Same tokens per step: step time, as before.
TEST(Regress, ChangedTokensPerStepAreJudgedOnTokensPerGpu) {
  TempDir t;
  const Metrics base = with_tokens(1000, 1000, 8);  // 1e6 tokens/s, 125,000 per GPU
  const Metrics bigger = with_tokens(1980, 2000, 8);  // 1.98x the step for 2x the tokens: faster per GPU
  EXPECT_TRUE(tokens_per_step_changed(base, bigger));
  EXPECT_FALSE(tokens_per_step_changed(base, with_tokens(1500, 1000, 8)));
  EXPECT_FALSE(throughput_regressed(base, bigger, 0.0));
  EXPECT_TRUE(throughput_regressed(base, with_tokens(2040, 2000, 8), 0.01));  // 2% fewer tokens/s
  write_metrics(t / "base/a.json", base);
  write_metrics(t / "cur/a.json", bigger);
  write_metrics(t / "base/b.json", base);
  write_metrics(t / "cur/b.json", with_tokens(2040, 2000, 8));
  write_metrics(t / "base/c.json", base);
  write_metrics(t / "cur/c.json", with_tokens(1020, 1000, 8));  // same work, 2% slower: step time decides
  const RegressReport r = regress_compare((t / "base").string(), (t / "cur").string(), 0.01);
  ASSERT_EQ(r.entries.size(), 3u);
  EXPECT_TRUE(r.entries[0].judged_on_throughput);
  EXPECT_FALSE(r.entries[0].failed());
  EXPECT_EQ(r.entries[0].status(), "improved");
  EXPECT_EQ(r.entries[1].status(), "REGRESSED (tokens/s per GPU)");
  EXPECT_FALSE(r.entries[2].judged_on_throughput);
  EXPECT_EQ(r.entries[2].status(), "REGRESSED (step time)");
  const std::string table = regress_table(r);
  EXPECT_NE(table.find("a: the tokens per step differ (1,000 -> 2,000)"), std::string::npos) << table;
  EXPECT_EQ(table.find("c: the tokens per step"), std::string::npos) << table;
}

// Strong scaling (the same global batch on twice the GPUs): the step is shorter, yet tokens/s per
// GPU fell 2.8%: a regression, judged on tokens/s per GPU because the GPUs differ (an audit found
// it called "improved" on the shorter step).
TEST(Regress, ChangedGpuCountIsJudgedOnTokensPerGpu) {
  TempDir t;
  const Metrics base = with_tokens(1000, 1000, 8);     // 125,000 tokens/s per GPU
  const Metrics scaled = with_tokens(514.4, 1000, 16);  // 121,501 per GPU: 2.8% fewer
  EXPECT_TRUE(gpu_count_changed(base, scaled));
  EXPECT_FALSE(tokens_per_step_changed(base, scaled));
  write_metrics(t / "b.json", base);
  write_metrics(t / "c.json", scaled);
  const RegressReport r = regress_compare((t / "b.json").string(), (t / "c.json").string(), 0.01);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_TRUE(r.entries[0].judged_on_throughput);
  EXPECT_EQ(r.entries[0].status(), "REGRESSED (tokens/s per GPU)");
  EXPECT_NE(regress_table(r).find("the GPUs differ (8 -> 16)"), std::string::npos) << regress_table(r);
}

// Metrics of metrics(1000, 100, 0.8) holding `peak_gib` at its peak; `fits` as the memory model said.
Metrics with_peak(double peak_gib, bool fits = true) {
  Metrics m = metrics(1000, 100, 0.8);
  m.peak_memory_bytes = static_cast<int64_t>(peak_gib * (1LL << 30));
  m.fits_memory = fits;
  return m;
}

// Peak allocated memory is judged like step time (relative); losing the fit fails at any
// tolerance; a peak of 0 (a run that recorded no memory) is unknown and judges nothing.
TEST(RegressRule, PeakMemoryIsRelativeAndALostFitAlwaysFails) {
  const Metrics base = with_peak(50);
  EXPECT_FALSE(peak_memory_regressed(base, with_peak(50.5), 0.01));  // exactly +1%
  EXPECT_TRUE(peak_memory_regressed(base, with_peak(50.51), 0.01));
  EXPECT_FALSE(peak_memory_regressed(base, with_peak(40), 0.0));
  EXPECT_TRUE(peak_memory_regressed(base, with_peak(50.001), 0.0));
  Metrics unknown = with_peak(0);
  unknown.memory_recorded = false;
  EXPECT_FALSE(peak_memory_regressed(unknown, with_peak(70), 0.0));
  EXPECT_FALSE(peak_memory_regressed(with_peak(70), unknown, 0.0));
  EXPECT_TRUE(fit_lost(base, with_peak(50, false)));
  EXPECT_FALSE(fit_lost(with_peak(50, false), with_peak(50, false)));
  EXPECT_FALSE(fit_lost(base, base));
  unknown.fits_memory = false;
  EXPECT_FALSE(fit_lost(base, unknown));
}

// The shipped baselines' memory went stale for sessions because regress did not look at it: a
// grown peak now fails, a smaller one is an improvement, and the table shows both peaks and the fit.
TEST(Regress, PeakMemoryGrowthAndALostFitFail) {
  TempDir t;
  write_metrics(t / "base/grew.json", with_peak(50));
  write_metrics(t / "cur/grew.json", with_peak(52));
  write_metrics(t / "base/lost.json", with_peak(70));
  write_metrics(t / "cur/lost.json", with_peak(70, false));  // same peak, a larger reserve: no longer fits
  write_metrics(t / "base/shrank.json", with_peak(50));
  write_metrics(t / "cur/shrank.json", with_peak(45));
  const RegressReport r = regress_compare((t / "base").string(), (t / "cur").string(), 0.01);
  ASSERT_EQ(r.entries.size(), 3u);
  EXPECT_EQ(r.entries[0].status(), "REGRESSED (peak memory)");
  EXPECT_EQ(r.entries[1].status(), "REGRESSED (no longer fits)");
  EXPECT_EQ(r.entries[2].status(), "improved");
  EXPECT_FALSE(r.entries[2].failed());
  const std::string table = regress_table(r);
  EXPECT_NE(table.find("peak memory"), std::string::npos) << table;
  EXPECT_NE(table.find("50.0 GiB -> 52.0 GiB  +4.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("yes -> no"), std::string::npos) << table;
  EXPECT_NE(table.find("relative for step time and peak memory"), std::string::npos) << table;
  EXPECT_NE(table.find("no longer does fails at any tolerance"), std::string::npos) << table;
}

// A larger micro-batch holds more: with different work per GPU the peak is shown, not judged,
// but a run that no longer fits still fails.
TEST(Regress, ChangedWorkShowsPeakMemoryButStillJudgesTheFit) {
  TempDir t;
  Metrics base = with_tokens(1000, 1000, 8), bigger = with_tokens(1980, 2000, 8);
  base.peak_memory_bytes = 40LL << 30;
  bigger.peak_memory_bytes = 60LL << 30;
  write_metrics(t / "base/a.json", base);
  write_metrics(t / "cur/a.json", bigger);
  bigger.fits_memory = false;
  write_metrics(t / "base/b.json", base);
  write_metrics(t / "cur/b.json", bigger);
  const RegressReport r = regress_compare((t / "base").string(), (t / "cur").string(), 0.01);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_FALSE(r.entries[0].memory_regressed);
  EXPECT_EQ(r.entries[0].status(), "improved");
  EXPECT_EQ(r.entries[1].status(), "REGRESSED (no longer fits)");
  const std::string table = regress_table(r);
  EXPECT_NE(table.find("40.0 GiB -> 60.0 GiB  +50.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("and its peak memory is shown, not judged"), std::string::npos) << table;
}

// A metrics file without memory (peak 0) compares on time alone; its peak reads n/a.
TEST(Regress, UnknownPeakMemoryReadsNotAvailable) {
  TempDir t;
  nlohmann::json none = metrics_to_json(metrics(1000, 100, 0.8));
  none["peak_memory_bytes"] = 0;
  write(t / "b.json", none);
  write_metrics(t / "c.json", with_peak(70, false));
  const RegressReport r = regress_compare((t / "b.json").string(), (t / "c.json").string(), 0.0);
  EXPECT_FALSE(r.failed()) << regress_table(r);
  EXPECT_NE(regress_table(r).find("n/a -> 70.0 GiB"), std::string::npos) << regress_table(r);
  EXPECT_NE(regress_table(r).find("n/a -> no"), std::string::npos) << regress_table(r);
}

// Differences that round to zero print as +0, never "-0 ns" or "-0.0000".
TEST(Regress, NoNegativeZeros) {
  TempDir t;
  write_metrics(t / "b.json", metrics(1000, 100, 0.8));
  write_metrics(t / "c.json", metrics(1000, 100 - 1e-7, 0.8 - 1e-9));
  const std::string table = regress_table(regress_compare((t / "b.json").string(), (t / "c.json").string(), 0.0));
  EXPECT_EQ(table.find("-0"), std::string::npos) << table;
}

TEST(Regress, ImprovementPasses) {
  TempDir t;
  write_metrics(t / "base.json", metrics(1000, 100, 0.8));
  write_metrics(t / "cur.json", metrics(950, 50, 0.9));
  const RegressReport r = regress_compare((t / "base.json").string(), (t / "cur.json").string(), 0.0);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_FALSE(r.failed());
  EXPECT_EQ(r.entries[0].status(), "improved");
  EXPECT_NE(regress_table(r).find("\nthe scenario passes (tolerance"), std::string::npos) << regress_table(r);  // not "all 1 scenarios"
}

TEST(Regress, IdenticalPassesAtZeroTolerance) {
  TempDir t;
  write_metrics(t / "b/x.json", metrics(1234.5678, 12.5, 0.8125));
  write_metrics(t / "c/x.json", metrics(1234.5678, 12.5, 0.8125));
  EXPECT_FALSE(regress_compare((t / "b").string(), (t / "c").string(), 0.0).failed());
}

TEST(Regress, MissingScenariosOnEitherSideFail) {
  TempDir t;
  write_metrics(t / "b/old.json", metrics(1000, 100, 0.8));
  write_metrics(t / "c/new.json", metrics(1000, 100, 0.8));
  const RegressReport r = regress_compare((t / "b").string(), (t / "c").string(), 0.5);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.entries[0].status(), "NO BASELINE");
  EXPECT_EQ(r.entries[1].status(), "MISSING current");
}

TEST(Regress, MissingOrMismatchedPathsAreInputErrors) {
  TempDir t;
  write_metrics(t / "c.json", metrics(1000, 100, 0.8));
  try {
    regress_compare((t / "nope").string(), (t / "c.json").string(), 0.01);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--baseline");
  }
  fs::create_directories(t / "dir");
  EXPECT_THROW(regress_compare((t / "dir").string(), (t / "c.json").string(), 0.01), InputError);
  write(t / "bad.json", {{"step_time_us", 1}});
  EXPECT_THROW(regress_compare((t / "bad.json").string(), (t / "c.json").string(), 0.01), InputError);
}

TEST(Regress, MetricsWrappedInAnObjectAreRead) {
  TempDir t;
  write(t / "w.json", {{"scenario", "x"}, {"metrics", metrics_to_json(metrics(77, 7, 0.5))}});
  EXPECT_EQ(read_metrics_file((t / "w.json").string()).step_time_us, 77);
}

TEST(Regress, UpdateBaselineMakesTheCheckPass) {
  TempDir t;
  write_metrics(t / "b/x.json", metrics(1000, 100, 0.8));
  write_metrics(t / "c/x/metrics.json", metrics(1500, 400, 0.5));
  write_metrics(t / "c/y.json", metrics(10, 1, 0.9));
  ASSERT_TRUE(regress_compare((t / "b").string(), (t / "c").string(), 0).failed());
  const auto written = update_baseline((t / "b").string(), (t / "c").string());
  EXPECT_EQ(written.size(), 2u);
  EXPECT_TRUE(fs::exists(t / "b/y.json"));
  EXPECT_FALSE(regress_compare((t / "b").string(), (t / "c").string(), 0).failed());
  EXPECT_EQ(read_metrics_file((t / "b/x.json").string()).step_time_us, 1500);
}

TEST(History, AppendAndReadBack) {
  TempDir t;
  const std::string path = (t / "history.jsonl").string();
  HistoryRecord a{"llama", metrics(1000, 100, 0.8), "abc123", "2026-01-02T03:04:05Z", "sim"};
  HistoryRecord b{"llama", metrics(900, 50, 0.9), "def456", "2026-01-03T03:04:05Z", "mpi"};
  append_history(path, a);
  append_history(path, b);
  const auto recs = read_history(path);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].scenario, "llama");
  EXPECT_EQ(recs[0].commit, "abc123");
  EXPECT_EQ(recs[0].time_utc, "2026-01-02T03:04:05Z");
  EXPECT_EQ(recs[1].backend, "mpi");
  EXPECT_EQ(recs[1].metrics.step_time_us, 900);
  EXPECT_EQ(recs[1].metrics.overlap_efficiency, 0.9);
  EXPECT_EQ(recs[1].metrics.by_kind.at("all_gather").count, 10);
  const std::string html = history_html(recs);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("llama: overlap efficiency"), std::string::npos);
  EXPECT_NE(html.find("def456"), std::string::npos);
}

// The history page plots peak allocated memory beside time, with the GPU's memory as a line;
// a record that tracked no memory (peak 0) leaves no point rather than a drop to 0.
TEST(History, PeakMemoryIsPlottedAndUnknownPeaksLeaveNoPoint) {
  std::vector<HistoryRecord> recs = {{"llama", with_peak(50), "aaa", "2026-01-01T00:00:00Z", "sim"},
                                     {"llama", with_peak(60, false), "bbb", "2026-01-02T00:00:00Z", "sim"}};
  Metrics none = with_peak(0);
  none.memory_recorded = false;
  recs.push_back({"llama", none, "ccc", "2026-01-03T00:00:00Z", "sim"});
  const std::string html = history_html(recs);
  EXPECT_NE(html.find("llama: peak memory (allocated)"), std::string::npos);
  EXPECT_NE(html.find("peak allocated 50.0 GiB, fits"), std::string::npos);
  EXPECT_NE(html.find("peak allocated 60.0 GiB, does NOT fit"), std::string::npos);
  EXPECT_EQ(html.find("ccc 2026-01-03T00:00:00Z (sim): peak allocated"), std::string::npos);
  // Only time is known (no record carries memory): no memory chart at all.
  EXPECT_EQ(history_html({{"t", none, "ddd", "2026-01-01T00:00:00Z", "sim"}}).find("t: peak memory (allocated)"), std::string::npos);
}

TEST(History, MalformedLineNamesFileAndLine) {
  TempDir t;
  const std::string path = (t / "h.jsonl").string();
  append_history(path, {"s", metrics(1, 0, 1), "c", "2026-01-01T00:00:00Z", "sim"});
  std::ofstream(path, std::ios::app) << "{not json\n";
  try {
    read_history(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path + ":2");
  }
}

TEST(History, UtcTimeIsIso8601) {
  const std::string t = utc_now_iso8601();
  ASSERT_EQ(t.size(), 20u);
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

}  // namespace
}  // namespace shardline
