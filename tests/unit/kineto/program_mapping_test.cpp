// Mapping traces onto a Program, on what needs no FSDP2-shaped trace: how many profiler steps a
// timeline takes (at most kMaxTimelineIterations, a window of them with --steps), and the report
// of a long run staying short. (The mapping itself: tests/unit/cli/import_cli_test.cpp and
// tests/integration/import_roundtrip.py, on generated FSDP2 traces.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/program.h"
#include "core/timeline.h"
#include "kineto/program_mapping.h"

namespace shardline::kineto {
namespace {

// One rank's trace of `steps` profiler steps, each with one kernel launched in it: every step
// matches a Program without ops (the kernel is work the Program has no op for).
KinetoTrace trace_of_steps(int steps) {
  KinetoTrace t;
  t.path = "rank-0.json";
  t.rank = 0;
  t.world_size = 1;
  t.names = {"gemm"};
  for (int s = 0; s < steps; ++s) {
    const int64_t start_ns = int64_t{1'000'000} * s;
    t.names.push_back("ProfilerStep#" + std::to_string(s + 1));
    t.ranges.push_back(CpuRange{start_ns, 900'000, 1, static_cast<int>(t.names.size()) - 1});
    t.launches.push_back(Launch{s, start_ns + 10, 1});
    GpuActivity a;
    a.ts_ns = start_ns + 100;
    a.dur_ns = 1000;
    a.correlation = s;
    a.stream = 7;
    a.name = 0;
    t.gpu.push_back(a);
  }
  return t;
}

Program empty_program() {
  Program p;
  p.world_size = 1;
  return p;
}

std::string error_of(const std::vector<KinetoTrace>& traces, const ImportOptions& options) {
  try {
    map_traces_to_program(traces, empty_program(), options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A [memory] event with the allocator's totals, on a CUDA device unless `device_type` says otherwise.
MemoryEvent allocator_event(int64_t ts_ns, int64_t allocated, int64_t reserved, int device_type = MemoryEvent::kCudaDeviceType) {
  return MemoryEvent{ts_ns, 64, allocated, reserved, device_type};
}

// The measured run's allocator figures: the largest totals over the reported step, counting the
// level it starts at (the last event before it) and not what follows it, nor CPU allocations.
TEST(ProgramMapping, TheAllocatorsPeaksOverTheReportedStepAreTheMeasuredMemory) {
  KinetoTrace t = trace_of_steps(1);  // one step: [0, 900 us)
  t.memory = {allocator_event(-5'000, 100, 1000), allocator_event(10'000, 300, 1000), allocator_event(20'000, 200, 1500),
              allocator_event(30'000, 999'999, 999'999, 0), allocator_event(950'000, 5000, 5000)};
  const ImportResult r = map_traces_to_program({t}, empty_program(), {});
  ASSERT_TRUE(r.timeline.allocator_measured.has_value());
  EXPECT_EQ(r.timeline.allocator_measured->peak_allocated_bytes, 300);
  EXPECT_EQ(r.timeline.allocator_measured->peak_reserved_bytes, 1500);
  EXPECT_EQ(r.report.allocator_ranks, 1);
  EXPECT_NE(import_report_text(r.report).find("peak allocated 300 B, peak reserved 1.5 KiB"), std::string::npos) << import_report_text(r.report);
  // Only the level before the step: the step holds that much throughout.
  t.memory = {allocator_event(-5'000, 100, 1000)};
  EXPECT_EQ(map_traces_to_program({t}, empty_program(), {}).timeline.allocator_measured->peak_allocated_bytes, 100);
}

// A rank whose trace has no totals might have held the most: no measured figure, and the report
// says how many ranks had one.
TEST(ProgramMapping, WithoutTheTotalsOnEveryRankNoAllocatorFigureIsKept) {
  KinetoTrace a = trace_of_steps(1), b = trace_of_steps(1);
  b.rank = 1;
  b.path = "rank-1.json";
  a.memory = {allocator_event(10'000, 300, 1000)};
  b.memory = {MemoryEvent{10'000, 64}};  // profiled without the totals
  Program p = empty_program();
  p.world_size = 2;
  const ImportResult r = map_traces_to_program({a, b}, p, {});
  EXPECT_FALSE(r.timeline.allocator_measured.has_value());
  EXPECT_EQ(r.report.allocator_ranks, 1);
  EXPECT_NE(import_report_text(r.report).find("allocator: 1 of 2 ranks' traces carry its totals"), std::string::npos)
      << import_report_text(r.report);
}

// A long trace was refused with "profile fewer steps" only; --steps imports a window of it.
TEST(ProgramMapping, MoreStepsThanATimelineHoldsAreRefusedSuggestingAWindow) {
  const std::vector<KinetoTrace> traces{trace_of_steps(kMaxTimelineIterations + 6)};
  const std::string e = error_of(traces, {});
  EXPECT_NE(e.find("the traces match 1030 profiler steps; a timeline holds at most 1024"), std::string::npos) << e;
  EXPECT_NE(e.find("--steps FIRST..LAST"), std::string::npos) << e;
  ImportOptions window;
  window.first_step = 7;
  window.last_step = 1030;
  const ImportResult r = map_traces_to_program(traces, empty_program(), window);
  EXPECT_EQ(r.timeline.iterations, 1024);
  ASSERT_EQ(r.report.steps.size(), 1024u);
  EXPECT_EQ(r.report.steps.front(), "ProfilerStep#7");
  EXPECT_EQ(r.report.steps.back(), "ProfilerStep#1030");
  EXPECT_EQ(r.report.matched_steps, 1030);
  EXPECT_EQ(r.report.first_step, 7);
  // The work of the steps outside the window is not counted.
  EXPECT_EQ(r.report.not_in_program.at("GPU work outside every FSDP unit window").count, 1024);
}

TEST(ProgramMapping, AStepWindowCountsMatchedStepsAndMustEndWithinThem) {
  const std::vector<KinetoTrace> traces{trace_of_steps(5)};
  ImportOptions window;
  window.first_step = 2;
  window.last_step = 3;
  const ImportResult r = map_traces_to_program(traces, empty_program(), window);
  EXPECT_EQ(r.report.steps, (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"}));
  EXPECT_NE(import_report_text(r.report).find("imported 2 profiler steps on 1 rank (--steps 2..3 of the 5 matching on every rank)"),
            std::string::npos)
      << import_report_text(r.report);
  window.last_step = 6;
  const std::string e = error_of(traces, window);
  EXPECT_NE(e.find("--steps: 2..6 ends beyond the steps: the traces match 5 profiler steps"), std::string::npos) << e;
}

// The report once listed every imported step on one line (18 KB for 1,000 steps).
TEST(ProgramMapping, TheReportNamesTheFirstAndLastFewOfManySteps) {
  ImportReport report;
  report.ranks = 2;
  for (int s = 1; s <= 1000; ++s) report.steps.push_back("ProfilerStep#" + std::to_string(s));
  report.matched_steps = 1000;
  const std::string text = import_report_text(report);
  const std::string first_line = text.substr(0, text.find('\n'));
  EXPECT_EQ(first_line,
            "imported 1000 profiler steps on 2 ranks: ProfilerStep#1 ProfilerStep#2 ProfilerStep#3 ... ProfilerStep#998 ProfilerStep#999 "
            "ProfilerStep#1000");
  report.steps.resize(7);
  report.matched_steps = 7;
  const std::string seven = import_report_text(report);
  EXPECT_NE(seven.find("ProfilerStep#4 ProfilerStep#5"), std::string::npos) << seven;  // a short run: every name
  EXPECT_EQ(seven.find("..."), std::string::npos) << seven;
}

}  // namespace
}  // namespace shardline::kineto
