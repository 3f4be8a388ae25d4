// The HTML report and its SVG timeline: self-contained, one lane per stream, a hover title per
// op, narrow ops merged without losing any, and the summary table's verdicts.
#include "reports/html.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <gtest/gtest.h>

#include "core/metrics.h"
#include "reports/outputs.h"
#include "reports/svg_timeline.h"
#include "report_fixtures.h"

namespace shardline {
namespace {

using namespace testing_fixtures;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST(HtmlReport, IsSelfContainedWithOneLanePerStreamAndATitlePerOp) {
  Timeline t = tiny_timeline();
  const std::string html = html_report(tiny_scenario(), t, compute_metrics(t));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(lower(html).find("http"), std::string::npos);
  EXPECT_EQ(lower(html).find("<script"), std::string::npos);
  EXPECT_EQ(lower(html).find("<link"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"lane\""), static_cast<size_t>(kNumStreams));
  for (int s = 0; s < kNumStreams; ++s) {
    EXPECT_NE(html.find("data-stream=\"" + std::string(stream_name(static_cast<StreamId>(s))) + "\""), std::string::npos);
  }
  // The slowest rank's step: 6 drawn ops (the free marker is not drawn), each with its own title.
  EXPECT_EQ(count(html, "</title></rect>"), 6u);
  for (const char* name : {"ci u0", "ag u0", "fwd u0", "bwd u0", "rs u0", "ar u0"}) {
    EXPECT_NE(html.find("<title>" + std::string(name) + " ("), std::string::npos) << name;
  }
  EXPECT_NE(html.find("rank 1, iteration 0"), std::string::npos);  // rank 1 is the slower one
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("class=\"capacity\""), std::string::npos);
  EXPECT_NE(html.find("two units &lt;on&gt; one &amp; only node"), std::string::npos);  // escaped
  EXPECT_NE(html.find("Memory: live (allocated) bytes"), std::string::npos);
  // A timeline without memory samples (a measured run) draws no memory panel, and its note says nothing of one.
  t.memory.clear();
  const std::string measured = html_report(tiny_scenario(), t, compute_metrics(t));
  EXPECT_EQ(measured.find("<polyline"), std::string::npos);
  EXPECT_EQ(measured.find("Memory: live"), std::string::npos);
}

TEST(HtmlReport, OpTitleNamesUnitBucketBytesAndDuration) {
  Timeline t = tiny_timeline();
  const StepWindow w = step_window(t, 0, 0);
  const std::string svg = svg_timeline(t, w, shared_axis({w}));
  // ag u0: unit 0, bucket 0, 16 bytes, [3, 10] -> 7 us, starting 3 us after the step start (0).
  EXPECT_NE(svg.find("<title>ag u0 (all_gather) unit 0 bucket 0, 16 B, shard group of 2, 7.00 us at 3.00 us"), std::string::npos) << svg;
}

TEST(SvgTimeline, SharedAxisDrawsTwoTimelinesOnOneScale) {
  Timeline fast = tiny_timeline();
  Timeline slow = tiny_timeline();
  for (auto& iv : slow.intervals) {
    iv.issue_us = iv.issue_us * 2 + 1000;  // another clock, twice as slow
    iv.start_us = iv.start_us * 2 + 1000;
    iv.end_us = iv.end_us * 2 + 1000;
  }
  const StepWindow wf = step_window(fast, 0, 0);
  const StepWindow ws = step_window(slow, 0, 0);
  SvgAxis axis = shared_axis({wf, ws}, 1000);
  EXPECT_DOUBLE_EQ(axis.span_us, 140.0);
  // Each is drawn from its own step start: the slow AG starts at 6 us -> 6/140 of the plot.
  const std::string svg = svg_timeline(slow, ws, axis);
  const double x = axis.label_width_px + 6.0 / 140.0 * 1000.0;
  char needle[64];
  std::snprintf(needle, sizeof needle, "<rect x=\"%.1f\"", x);
  EXPECT_NE(svg.find(needle), std::string::npos) << needle;
  // The fast one's last op ends halfway along the plot.
  const std::string fsvg = svg_timeline(fast, wf, axis);
  std::snprintf(needle, sizeof needle, "<rect x=\"%.1f\"", axis.label_width_px + 60.0 / 140.0 * 1000.0);
  EXPECT_NE(fsvg.find(needle), std::string::npos) << needle;
}

TEST(SvgTimeline, MergesSubPixelOpsWithoutLosingAny) {
  Timeline t;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    Op o;
    o.kind = i % 2 ? OpKind::AllGather : OpKind::Compute;
    o.stream = i % 2 ? StreamId::AllGather : StreamId::Compute;
    t.set_name(o, "op" + std::to_string(i));
    t.ops.push_back(o);
    // Ops of 1 us every 10 us over 200 ms; ops 0 and 1 are long.
    const double start = i * 10.0;
    const double len = i < 2 ? 50000.0 : 1.0;
    t.intervals.push_back({i, 0, 0, 0, start, start + len});
  }
  const StepWindow w = step_window(t);
  const std::string svg = svg_timeline(t, w, shared_axis({w}, 1000));
  const size_t single = count(svg, "</title></rect>") - count(svg, "short ops (");
  EXPECT_EQ(single, 2u);  // only the two long ops get their own rectangle
  size_t merged_ops = 0;
  std::regex re("(\\d+) short ops \\(");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) merged_ops += std::stoul((*it)[1]);
  EXPECT_EQ(merged_ops + single, static_cast<size_t>(n));
  EXPECT_LT(count(svg, "<rect"), 3000u);  // about one merged rectangle per pixel column and lane
}

TEST(SummaryTable, ReportsTheMetricsAndTheMemoryVerdict) {
  Timeline t = tiny_timeline();
  Metrics m = compute_metrics(t);
  std::string table = summary_table(tiny_scenario(), t, m);
  EXPECT_NE(table.find("tiny-report (predicted, sim)"), std::string::npos) << table;
  EXPECT_NE(table.find("step time"), std::string::npos);
  EXPECT_NE(table.find("75.00 us"), std::string::npos) << table;  // rank 1: issue 0 .. 75
  EXPECT_NE(table.find("exposed comm"), std::string::npos);
  EXPECT_NE(table.find("overlap efficiency"), std::string::npos);
  std::regex ag_row("  all_gather +7\\.00 us +1 ops +16 B");
  EXPECT_TRUE(std::regex_search(table, ag_row)) << table;
  EXPECT_NE(table.find("fits"), std::string::npos);
  EXPECT_EQ(table.find("DOES NOT FIT"), std::string::npos);
  // The launches the Program counts, and what the host term charges for them; none shown where
  // the timeline does not know them (one written before they were counted).
  t.host_launches_per_step = 30;
  Scenario s = tiny_scenario();
  table = summary_table(s, t, compute_metrics(t));
  EXPECT_TRUE(std::regex_search(table, std::regex("\n  launches +30  per step, as the Program counts them \\(cluster.host_launch: 0"))) << table;
  s.cluster.host_launch_us = 50;
  table = summary_table(s, t, compute_metrics(t));
  EXPECT_TRUE(std::regex_search(table, std::regex("\n  launches +30  per step, as the Program counts them; x host_launch 50.00 us = 1.50 ms"))) << table;
  t.host_launches_per_step = 0;
  EXPECT_EQ(summary_table(s, t, compute_metrics(t)).find("  launches"), std::string::npos);

  Timeline big = tiny_timeline(950);  // above 1000 * (1 - 0.1)
  table = summary_table(tiny_scenario(), big, compute_metrics(big));
  EXPECT_NE(table.find("DOES NOT FIT"), std::string::npos) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("peak memory +allocated 950 B, reserved \\(estimate\\) 950 B of 1000 B"))) << table;

  Timeline none = tiny_timeline();
  none.memory.clear();
  table = summary_table(tiny_scenario(), none, compute_metrics(none));
  EXPECT_NE(table.find("not recorded"), std::string::npos) << table;
}

// Step 75 us; 2 GPUs, 2 samples of 1500 tokens, 3e9 model and 4.5e9 hardware FLOPs per step,
// a 100 TFLOP/s dense peak.
Timeline timeline_with_workload() {
  Timeline t = tiny_timeline();
  t.workload.gpus = 2;
  t.workload.samples_per_step = 2;
  t.workload.tokens_per_step = 3000;
  t.workload.model_flops_per_step = 3e9;
  t.workload.hardware_flops_per_step = 4.5e9;
  t.workload.peak_flops_per_gpu = 100e12;
  return t;
}

TEST(SummaryTable, ShowsEveryThroughputValue) {
  const Timeline t = timeline_with_workload();
  const std::string table = summary_table(tiny_scenario(), t, compute_metrics(t));
  EXPECT_TRUE(std::regex_search(table, std::regex("\ntokens/s +40,000,000  global: 3,000 tokens per step"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\n  per GPU +20,000,000  over 2 GPUs"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nsamples/s +26,667 "))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nmodel TFLOP/s / GPU +20\\.0 "))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nMFU +20\\.0%  model FLOPs / \\(2 GPUs x 100\\.0 TFLOP/s dense peak\\)"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nHFU +30\\.0% "))) << table;
  EXPECT_EQ(table.find("n/a"), std::string::npos) << table;
}

TEST(SummaryTable, UnknownThroughputSaysWhichKeyIsMissing) {
  Timeline t = timeline_with_workload();
  t.workload.tokens_per_step = 0;
  t.workload.samples_per_step = 0;
  t.workload.peak_flops_per_gpu = 0;
  const std::string table = summary_table(tiny_scenario(), t, compute_metrics(t));
  EXPECT_TRUE(std::regex_search(table, std::regex("\ntokens/s +n/a  give model.seq_len and model.micro_batch_size"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nsamples/s +n/a  give model.micro_batch_size"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\nmodel TFLOP/s / GPU +20\\.0 "))) << table;  // FLOPs are still known
  EXPECT_TRUE(std::regex_search(table, std::regex("\nMFU +n/a  the GPU has no dense peak"))) << table;
}

// The verdict follows the reserved estimate: 600 B allocated fits under 900 B, but reserved
// 600 x 1.5 + 50 = 950 B does not.
TEST(SummaryTable, MemoryVerdictIsOnTheReservedEstimate) {
  Timeline t = tiny_timeline(600);
  t.memory_reserve.fragmentation = t.memory_reserve.fragmentation_at_capacity = 0.5;
  t.memory_reserve.fixed_bytes = 50;
  const std::string table = summary_table(tiny_scenario(), t, compute_metrics(t));
  EXPECT_NE(table.find("peak memory          allocated 600 B, reserved (estimate) 950 B of 1000 B (limit 900 B with 10.0% margin)  DOES NOT FIT"),
            std::string::npos) << table;
  EXPECT_NE(table.find("needs at least 950 B reserved (the allocator at capacity), over the limit"), std::string::npos) << table;
  // What torch.cuda.max_memory_reserved() would log: the reserve without the fixed 50 B.
  EXPECT_NE(table.find("900 B of it the caching allocator's (torch.cuda.max_memory_reserved)"), std::string::npos) << table;
}

// A step of `allocated` bytes whose allocator holds half as much again typically, a fifth at the
// GPU's capacity, plus 50 B of context and NCCL buffers.
Timeline with_reserve(int64_t allocated) {
  Timeline t = tiny_timeline(allocated);
  t.memory_reserve.fragmentation = 0.5;
  t.memory_reserve.fragmentation_at_capacity = 0.2;
  t.memory_reserve.fixed_bytes = 50;
  return t;
}

// Typical reserve 700 x 1.5 + 50 = 1100 B over the 1000 B GPU, least 700 x 1.2 + 50 = 890 B under
// the 900 B limit: it fits by the allocator flushing its cache, and the table says so.
TEST(SummaryTable, AFitThatNeedsTheAllocatorToFlushItsCacheSaysSo) {
  const Timeline t = with_reserve(700);
  const Metrics m = compute_metrics(t);
  EXPECT_EQ(m.peak_reserved_bytes, 1000);
  EXPECT_EQ(m.min_reserved_bytes, 890);
  EXPECT_TRUE(m.allocator_cache_flushes);
  EXPECT_TRUE(m.fits_memory);
  const std::string table = summary_table(tiny_scenario(), t, m);
  EXPECT_NE(table.find("reserved (estimate) 1000 B of 1000 B (limit 900 B with 10.0% margin)  fits"), std::string::npos) << table;
  EXPECT_NE(table.find("freeing its cache and retrying (needs at least 890 B"), std::string::npos) << table;
}

// Over the margin but within the GPU: the verdict and its line speak of the limit, not of a fit
// by cache flushes, though the allocator at the GPU's capacity would flush.
TEST(SummaryTable, OverTheMarginSaysSoEvenWhenTheGpuWouldFlush) {
  const Timeline t = with_reserve(710);  // least 710 x 1.2 + 50 = 902 > the 900 B limit; typical 1115
  const Metrics m = compute_metrics(t);
  EXPECT_FALSE(m.fits_memory);
  const std::string table = summary_table(tiny_scenario(), t, m);
  EXPECT_NE(table.find("DOES NOT FIT"), std::string::npos) << table;
  EXPECT_NE(table.find("needs at least 902 B reserved (the allocator at capacity), over the limit"), std::string::npos) << table;
  EXPECT_EQ(table.find("fits by freeing its cache"), std::string::npos) << table;
  // metrics.json's allocator_cache_flushes (true: about the GPU itself) is explained, not left bare.
  EXPECT_TRUE(m.allocator_cache_flushes);
  EXPECT_NE(table.find("over the limit; on the GPU without the margin it would fit only by the caching allocator freeing its cache"),
            std::string::npos) << table;
}

// Typical reserve 600 x 1.5 + 50 = 950 B: over the 900 B limit, within the 1000 B GPU (no flush);
// least 600 x 1.2 + 50 = 770 B within the limit, so it fits, and the table says why beside an
// estimate over the limit (an audit found "950 B ... (limit 900 B ...) fits" unexplained).
TEST(SummaryTable, AnEstimateOverTheLimitBesideFitsSaysWhatTheVerdictJudged) {
  const Timeline t = with_reserve(600);
  const Metrics m = compute_metrics(t);
  EXPECT_TRUE(m.fits_memory);
  EXPECT_FALSE(m.allocator_cache_flushes);
  const std::string table = summary_table(tiny_scenario(), t, m);
  EXPECT_NE(table.find("reserved (estimate) 950 B of 1000 B (limit 900 B with 10.0% margin)  fits"), std::string::npos) << table;
  EXPECT_NE(table.find("the estimate is over the limit, but the step needs at least 770 B reserved (the allocator at capacity), within it"),
            std::string::npos) << table;
  // Within the limit, no such line.
  const Timeline small = with_reserve(500);  // 500 x 1.5 + 50 = 800 B
  EXPECT_EQ(summary_table(tiny_scenario(), small, compute_metrics(small)).find("over the limit"), std::string::npos);
}

TEST(HtmlReport, ShowsTheThroughputOfTheSummary) {
  const Timeline t = timeline_with_workload();
  const std::string html = html_report(tiny_scenario(), t, compute_metrics(t));
  EXPECT_NE(html.find("20,000,000"), std::string::npos);
  EXPECT_NE(html.find("MFU"), std::string::npos);
  EXPECT_NE(html.find("reserved (estimate)"), std::string::npos);
}

}  // namespace
}  // namespace shardline
