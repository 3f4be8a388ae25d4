// Step metrics on hand-built timelines with hand-computed numbers.
#include "core/metrics.h"

#include <algorithm>
#include <array>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace shardline {
namespace {

Op make_op(OpKind kind, Phase phase, int64_t bytes = 0, int microbatch = 0) {
  Op op;
  op.kind = kind;
  op.phase = phase;
  if (kind != OpKind::Compute) op.set_bytes(bytes);
  op.microbatch = microbatch;
  return op;
}

OpInterval iv(int op, double issue, double start, double end, int rank = 0, int iteration = 0) {
  return OpInterval{op, rank, iteration, issue, start, end};
}

// Forward AG, hidden second AG, forward and backward compute with a gap, an RS that overlaps the
// end of backward compute, and an alloc marker.
Timeline basic_timeline() {
  Timeline t;
  t.memory_capacity_bytes = 1000;
  t.memory_margin = 0.1;
  t.ops = {make_op(OpKind::AllGather, Phase::Forward, 100), make_op(OpKind::Compute, Phase::Forward),
           make_op(OpKind::AllGather, Phase::Forward, 50), make_op(OpKind::Compute, Phase::Backward),
           make_op(OpKind::ReduceScatter, Phase::Backward, 200), make_op(OpKind::Alloc, Phase::Forward, 4096)};
  t.intervals = {iv(0, 0, 0, 10), iv(1, 1, 10, 30), iv(2, 2, 12, 28), iv(3, 3, 32, 52), iv(4, 4, 50, 60), iv(5, 5, 5, 5)};
  t.memory = {{0, 100}, {10, 700}, {30, 900}, {60, 200}};
  return t;
}

TEST(UnionLength, MergesOverlapsNestingAndTouchingIntervals) {
  EXPECT_DOUBLE_EQ(union_length_us({}), 0.0);
  EXPECT_DOUBLE_EQ(union_length_us({{5, 10}, {0, 3}, {2, 4}}), 4.0 + 5.0);   // unsorted, overlapping
  EXPECT_DOUBLE_EQ(union_length_us({{0, 10}, {2, 3}, {4, 9}}), 10.0);        // nested
  EXPECT_DOUBLE_EQ(union_length_us({{0, 1}, {1, 2}, {2, 3}}), 3.0);          // touching
  EXPECT_DOUBLE_EQ(union_length_us({{0, 0}, {7, 7}, {1, 2}}), 1.0);          // zero length
}

TEST(Metrics, HandComputedStepOnOneRank) {
  Metrics m = compute_metrics(basic_timeline());
  EXPECT_DOUBLE_EQ(m.step_time_us, 60.0);            // issue 0 .. RS end 60
  EXPECT_DOUBLE_EQ(m.compute_busy_us, 40.0);         // [10,30] + [32,52]
  EXPECT_DOUBLE_EQ(m.comm_busy_us, 36.0);            // [0,10] + [12,28] + [50,60]
  EXPECT_DOUBLE_EQ(m.exposed_comm_us, 20.0);         // 60 - 40
  EXPECT_NEAR(m.overlap_efficiency, 1.0 - 20.0 / 36.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.forward_us, 30.0);              // to the end of the forward compute
  EXPECT_DOUBLE_EQ(m.backward_us, 30.0);
  EXPECT_DOUBLE_EQ(m.host_issue_us, 5.0);            // the marker, the last op issued, at 5
  EXPECT_EQ(m.peak_memory_bytes, 900);
  EXPECT_EQ(m.memory_capacity_bytes, 1000);
  EXPECT_TRUE(m.fits_memory);                        // 900 <= 1000 * 0.9

  ASSERT_EQ(m.by_kind.count("alloc"), 0u);
  ASSERT_EQ(m.by_kind.count("free"), 0u);
  EXPECT_EQ(m.by_kind.at("all_gather").count, 2);
  EXPECT_EQ(m.by_kind.at("all_gather").bytes, 150);
  EXPECT_DOUBLE_EQ(m.by_kind.at("all_gather").busy_us, 26.0);
  EXPECT_EQ(m.by_kind.at("reduce_scatter").count, 1);
  EXPECT_EQ(m.by_kind.at("reduce_scatter").bytes, 200);
  EXPECT_DOUBLE_EQ(m.by_kind.at("reduce_scatter").busy_us, 10.0);
  EXPECT_EQ(m.by_kind.at("compute").count, 2);
  EXPECT_DOUBLE_EQ(m.by_kind.at("compute").busy_us, 40.0);
  EXPECT_EQ(m.by_kind.at("copy_in").count, 0);
  EXPECT_EQ(m.by_kind.at("all_reduce").count, 0);
  EXPECT_EQ(m.by_kind.size(), 6u);
}

// The accumulator takes ops in any order (the simulator feeds them as they end): the metrics
// are those of the Timeline, bit for bit, with touching, overlapping, nested and empty spans.
TEST(StepAccumulator, AnyOrderGivesTheTimelinesMetrics) {
  Timeline t = basic_timeline();
  t.ops.push_back(make_op(OpKind::AllGather, Phase::Forward, 10));     // touches op 0's end
  t.ops.push_back(make_op(OpKind::AllGather, Phase::Forward, 10));     // inside op 2
  t.ops.push_back(make_op(OpKind::AllReduce, Phase::Backward, 10));    // overlaps the RS
  t.ops.push_back(make_op(OpKind::Compute, Phase::Backward, 0, 1));    // empty, micro-batch 1
  t.ops.push_back(make_op(OpKind::Compute, Phase::Forward, 0, 1));
  t.intervals.push_back(iv(6, 6, 10, 11));
  t.intervals.push_back(iv(7, 7, 13, 20));
  t.intervals.push_back(iv(8, 8, 55, 70));
  t.intervals.push_back(iv(9, 9, 71, 71));
  t.intervals.push_back(iv(10, 9, 60.5, 64.25));
  const std::string expected = metrics_to_json(compute_metrics(t)).dump();
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, std::vector<int>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
                                        std::vector<int>{6, 0, 7, 2, 1, 8, 4, 3, 9, 5, 10}}) {
    StepAccumulator acc;
    for (int i : order) {
      acc.issue(t.intervals[i].issue_us);
      acc.add(t.ops[static_cast<size_t>(t.intervals[i].op)], t.intervals[i].start_us, t.intervals[i].end_us);
    }
    EXPECT_EQ(acc.op_count(), 11u);
    const Metrics m = acc.finish(t, 900);
    EXPECT_EQ(metrics_to_json(m).dump(), expected);
    EXPECT_DOUBLE_EQ(m.comm_busy_us, 11.0 + 16.0 + 20.0);  // [0,11] + [12,28] + [50,70]
    EXPECT_EQ(m.by_kind.at("all_gather").count, 4);
  }
}

// A simulation settles the spans that started before the earliest op still to come, as ops end
// (StepAccumulator::settle): thousands of ops on five streams, with times whose sums depend on
// their order, give the Timeline's metrics bit for bit however often it settles.
TEST(StepAccumulator, SettlingAsOpsEndGivesTheTimelinesMetrics) {
  Timeline t;
  uint32_t x = 2024;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  const OpKind kinds[] = {OpKind::Compute, OpKind::CopyIn, OpKind::AllGather, OpKind::ReduceScatter, OpKind::AllReduce};
  std::array<double, 5> free_at{};
  for (int i = 0; i < 6000; ++i) {
    const size_t k = next() % 5;
    // A stream runs one op at a time; copy-ins also run on the reduce-scatter stream.
    const size_t stream = kinds[k] == OpKind::CopyIn && next() % 2 ? 3 : k;
    const double start = free_at[stream] + (next() % 4) * 0.1 + 1.0 / 3.0;
    const double end = start + (next() % 5) * 0.7 + 0.01 * (next() % 7);
    free_at[stream] = end;
    t.ops.push_back(make_op(kinds[k], Phase::Forward, k == 0 ? 0 : 64));
    t.intervals.push_back(iv(i, start - 0.5, start, end));
  }
  const std::string expected = metrics_to_json(compute_metrics(t)).dump();
  // Fed as they end; the bound is the earliest start among the ops not fed yet.
  std::vector<size_t> by_end(t.intervals.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  std::stable_sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return t.intervals[a].end_us < t.intervals[b].end_us; });
  std::vector<double> earliest_after(by_end.size() + 1, std::numeric_limits<double>::infinity());
  for (size_t j = by_end.size(); j-- > 0;) earliest_after[j] = std::min(earliest_after[j + 1], t.intervals[by_end[j]].start_us);
  for (size_t every : {size_t{1}, size_t{7}, size_t{1000}}) {
    StepAccumulator acc;
    for (size_t j = 0; j < by_end.size(); ++j) {
      const OpInterval& v = t.intervals[by_end[j]];
      acc.issue(v.issue_us);
      acc.add(t.ops[static_cast<size_t>(v.op)], v.start_us, v.end_us);
      if (j % every == 0) acc.settle(earliest_after[j + 1]);
    }
    EXPECT_EQ(metrics_to_json(acc.finish(t, std::nullopt)).dump(), expected) << "settling every " << every;
  }
}

TEST(StepAccumulator, WithoutMemoryTheFitIsOnNothingAndMemoryIsUnknown) {
  const Timeline t = basic_timeline();
  StepAccumulator acc;
  acc.add(t.ops[1], 10, 30);
  const Metrics m = acc.finish(t, std::nullopt);
  EXPECT_FALSE(m.memory_recorded);
  EXPECT_EQ(m.peak_memory_bytes, 0);
  EXPECT_EQ(m.peak_reserved_bytes, 0);
  EXPECT_TRUE(m.fits_memory);
  EXPECT_TRUE(compute_metrics(t).memory_recorded);
}

TEST(Metrics, MemoryAboveTheMarginDoesNotFit) {
  Timeline t = basic_timeline();
  t.memory.push_back({61, 901});
  Metrics m = compute_metrics(t);
  EXPECT_EQ(m.peak_memory_bytes, 901);
  EXPECT_FALSE(m.fits_memory);
}

TEST(Metrics, NoMemorySamplesMeansPeakZero) {
  Timeline t = basic_timeline();
  t.memory.clear();
  EXPECT_EQ(compute_metrics(t).peak_memory_bytes, 0);
}

// A measured run without memory samples whose allocator reported its peaks (an imported trace):
// they are its memory, the scenario's context and NCCL buffers added to the reserve, judged
// against the GPU with the margin.
TEST(Metrics, AMeasuredAllocatorsPeaksAreTheRunsMemory) {
  Timeline t = basic_timeline();
  t.memory.clear();
  t.allocator_measured = AllocatorPeaks{700, 800};
  t.memory_reserve.fixed_bytes = 50;
  Metrics m = compute_metrics(t);
  EXPECT_TRUE(m.memory_recorded);
  EXPECT_EQ(m.peak_memory_bytes, 700);
  EXPECT_EQ(m.peak_allocator_reserved_bytes, 800);
  EXPECT_EQ(m.peak_reserved_bytes, 850);
  EXPECT_EQ(m.min_reserved_bytes, 850);
  EXPECT_FALSE(m.memory_at_peak.has_value());
  EXPECT_TRUE(m.fits_memory);  // 850 <= 1000 x 0.9
  t.allocator_measured = AllocatorPeaks{700, 860};
  EXPECT_FALSE(compute_metrics(t).fits_memory);  // 910 > 900
  // Samples, where the timeline has them, are what is counted.
  t = basic_timeline();
  t.allocator_measured = AllocatorPeaks{5, 5};
  EXPECT_EQ(compute_metrics(t).peak_memory_bytes, 900);
}

TEST(Metrics, WithoutIssueTimesTheStepStartsAtTheFirstStart) {
  Timeline t = basic_timeline();
  for (auto& i : t.intervals) {
    i.issue_us = 0;
    i.start_us += 100;
    i.end_us += 100;
  }
  Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.step_time_us, 60.0);  // 100 .. 160, not 0 .. 160
  EXPECT_DOUBLE_EQ(m.forward_us, 30.0);
}

TEST(Metrics, HostIssueBeforeTheFirstStartCountsInTheStep) {
  Timeline t = basic_timeline();
  t.intervals[0].issue_us = -5;  // issued 5 us before anything ran... and that is the step start
  t.intervals[1].issue_us = 0.5;
  Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.step_time_us, 65.0);
  EXPECT_DOUBLE_EQ(m.exposed_comm_us, 25.0);
}

TEST(Metrics, OverlapEfficiencyClampsAtZeroWhenHostGapsExceedComm) {
  Timeline t;
  t.ops = {make_op(OpKind::Compute, Phase::Forward), make_op(OpKind::AllGather, Phase::Forward, 8),
           make_op(OpKind::Compute, Phase::Backward)};
  // Compute [0,10], a 100 us host gap, AG [110,112], compute [112,122].
  t.intervals = {iv(0, 0, 0, 10), iv(1, 110, 110, 112), iv(2, 111, 112, 122)};
  Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.step_time_us, 122.0);
  EXPECT_DOUBLE_EQ(m.exposed_comm_us, 102.0);
  EXPECT_DOUBLE_EQ(m.comm_busy_us, 2.0);
  EXPECT_DOUBLE_EQ(m.overlap_efficiency, 0.0);
}

TEST(Metrics, NoCommunicationMeansFullOverlap) {
  Timeline t;
  t.ops = {make_op(OpKind::Compute, Phase::Forward), make_op(OpKind::Compute, Phase::Backward)};
  t.intervals = {iv(0, 0, 0, 10), iv(1, 1, 15, 30)};
  Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.comm_busy_us, 0.0);
  EXPECT_DOUBLE_EQ(m.exposed_comm_us, 5.0);
  EXPECT_DOUBLE_EQ(m.overlap_efficiency, 1.0);
}

TEST(Metrics, ForwardSplitSumsEachMicroBatchForward) {
  Timeline t;
  t.ops = {make_op(OpKind::Compute, Phase::Forward, 0, 0), make_op(OpKind::Compute, Phase::Backward, 0, 0),
           make_op(OpKind::Compute, Phase::Forward, 0, 1), make_op(OpKind::Compute, Phase::Backward, 0, 1),
           make_op(OpKind::ReduceScatter, Phase::Backward, 64, 1)};
  t.intervals = {iv(0, 0, 0, 10), iv(1, 1, 10, 30), iv(2, 2, 30, 42), iv(3, 3, 42, 60), iv(4, 4, 60, 70)};
  Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.step_time_us, 70.0);
  EXPECT_DOUBLE_EQ(m.forward_us, 10.0 + 12.0);
  EXPECT_DOUBLE_EQ(m.backward_us, 70.0 - 22.0);
}

TEST(Metrics, RankMinusOneReportsTheSlowestRankAndIterationMinusOneTheReportedOne) {
  Timeline t;
  t.ranks = 2;
  t.iterations = 2;
  t.reported_iteration = 1;
  t.ops = {make_op(OpKind::Compute, Phase::Forward), make_op(OpKind::AllGather, Phase::Forward, 8)};
  t.intervals = {
      iv(0, 0, 0, 10, 0, 0), iv(1, 0, 0, 4, 0, 0),            // rank 0, iteration 0: 10
      iv(0, 0, 0, 50, 1, 0), iv(1, 0, 0, 4, 1, 0),            // rank 1, iteration 0: 50
      iv(0, 100, 100, 120, 0, 1), iv(1, 100, 100, 130, 0, 1), // rank 0, iteration 1: 30
      iv(0, 100, 100, 115, 1, 1), iv(1, 100, 100, 104, 1, 1), // rank 1, iteration 1: 15
  };
  EXPECT_DOUBLE_EQ(compute_metrics(t).step_time_us, 30.0);
  EXPECT_DOUBLE_EQ(compute_metrics(t, -1, 0).step_time_us, 50.0);
  EXPECT_DOUBLE_EQ(compute_metrics(t, 0, 0).step_time_us, 10.0);
  EXPECT_DOUBLE_EQ(compute_metrics(t, 1, -1).step_time_us, 15.0);
  EXPECT_THROW(compute_metrics(t, 2, 0), InputError);
  EXPECT_THROW(compute_metrics(t, 0, 2), InputError);
}

TEST(StepWindow, IsTheWindowStepTimeMeasures) {
  Timeline t;
  t.ranks = 2;
  t.ops = {make_op(OpKind::Compute, Phase::Forward)};
  t.intervals = {iv(0, 3, 5, 10, 0, 0), iv(0, 2, 4, 40, 1, 0)};
  StepWindow w = step_window(t);
  EXPECT_EQ(w.rank, 1);
  EXPECT_DOUBLE_EQ(w.start_us, 2.0);
  EXPECT_DOUBLE_EQ(w.end_us, 40.0);
  EXPECT_DOUBLE_EQ(w.end_us - w.start_us, compute_metrics(t).step_time_us);
  StepWindow w0 = step_window(t, 0, -1);
  EXPECT_EQ(w0.rank, 0);
  EXPECT_DOUBLE_EQ(w0.start_us, 3.0);
}

TEST(Metrics, RankMinusOneSkipsRanksWithoutIntervals) {
  Timeline t = basic_timeline();
  t.ranks = 8;  // one representative rank simulated
  EXPECT_DOUBLE_EQ(compute_metrics(t).step_time_us, 60.0);
  EXPECT_EQ(step_window(t).rank, 0);
  t.intervals.clear();
  EXPECT_THROW(compute_metrics(t), InputError);
}

TEST(Metrics, RankWithoutIntervalsIsAnError) {
  Timeline t = basic_timeline();
  t.ranks = 2;
  try {
    compute_metrics(t, 1, 0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "timeline");
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos);
  }
}

TEST(MetricsJson, RoundTripsAndHasEveryKey) {
  Metrics m = compute_metrics(basic_timeline());
  nlohmann::json j = metrics_to_json(m);
  for (const char* key : {"step_time_us", "compute_busy_us", "comm_busy_us", "exposed_comm_us", "overlap_efficiency",
                          "peak_memory_bytes", "peak_reserved_bytes", "peak_allocator_reserved_bytes", "memory_capacity_bytes", "fits_memory", "forward_us",
                          "backward_us", "host_issue_us", "host_launches", "by_kind", "throughput"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["by_kind"]["all_gather"]["bytes"], 150);
  Metrics back = metrics_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(metrics_to_json(back), j);
  EXPECT_DOUBLE_EQ(back.overlap_efficiency, m.overlap_efficiency);
}

// One compute op of 0.5 s; 4 GPUs, 8 samples of 1024 tokens per step, 4e15 model FLOPs and 5e15
// hardware FLOPs per step, a dense peak of 4e15 FLOP/s per GPU.
Timeline half_second_step() {
  Timeline t;
  t.ops = {make_op(OpKind::Compute, Phase::Forward)};
  t.intervals = {iv(0, 0, 0, 500000)};
  t.workload.gpus = 4;
  t.workload.samples_per_step = 8;
  t.workload.tokens_per_step = 8192;
  t.workload.model_flops_per_step = 4e15;
  t.workload.hardware_flops_per_step = 5e15;
  t.workload.peak_flops_per_gpu = 4e15;
  return t;
}

TEST(Throughput, HandComputedFromTheWorkloadAndTheStepTime) {
  const Metrics m = compute_metrics(half_second_step());
  ASSERT_DOUBLE_EQ(m.step_time_us, 500000.0);
  const Throughput& tp = m.throughput;
  ASSERT_TRUE(tp.samples_per_s && tp.tokens_per_s && tp.tokens_per_s_per_gpu && tp.model_tflops_per_gpu && tp.mfu && tp.hfu);
  EXPECT_DOUBLE_EQ(*tp.samples_per_s, 16.0);           // 8 / 0.5 s
  EXPECT_DOUBLE_EQ(*tp.tokens_per_s, 16384.0);         // 8192 / 0.5 s
  EXPECT_DOUBLE_EQ(*tp.tokens_per_s_per_gpu, 4096.0);  // / 4 GPUs
  EXPECT_DOUBLE_EQ(*tp.model_tflops_per_gpu, 2000.0);  // 4e15 / 0.5 / 4 / 1e12
  EXPECT_DOUBLE_EQ(*tp.mfu, 0.5);                      // 8e15 FLOP/s / (4 x 4e15)
  EXPECT_DOUBLE_EQ(*tp.hfu, 0.625);                    // 1e16 FLOP/s / (4 x 4e15)
}

TEST(Throughput, EachValueIsUnknownWithoutItsInputs) {
  Timeline t = half_second_step();
  t.workload.tokens_per_step = 0;  // explicit units without model.seq_len
  Throughput tp = compute_metrics(t).throughput;
  EXPECT_FALSE(tp.tokens_per_s.has_value());
  EXPECT_FALSE(tp.tokens_per_s_per_gpu.has_value());
  ASSERT_TRUE(tp.samples_per_s.has_value());
  EXPECT_DOUBLE_EQ(*tp.samples_per_s, 16.0);
  EXPECT_TRUE(tp.mfu.has_value());

  t = half_second_step();
  t.workload.model_flops_per_step = 0;  // units given as times
  t.workload.hardware_flops_per_step = 0;
  tp = compute_metrics(t).throughput;
  EXPECT_FALSE(tp.model_tflops_per_gpu.has_value());
  EXPECT_FALSE(tp.mfu.has_value());
  EXPECT_FALSE(tp.hfu.has_value());
  EXPECT_TRUE(tp.tokens_per_s.has_value());

  t = half_second_step();
  t.workload.peak_flops_per_gpu = 0;  // no dense peak for the compute dtype
  tp = compute_metrics(t).throughput;
  EXPECT_FALSE(tp.mfu.has_value());
  EXPECT_FALSE(tp.hfu.has_value());
  ASSERT_TRUE(tp.model_tflops_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*tp.model_tflops_per_gpu, 2000.0);

  tp = throughput_of(half_second_step().workload, 0.0);  // no step time: nothing is known
  EXPECT_FALSE(tp.samples_per_s || tp.tokens_per_s || tp.tokens_per_s_per_gpu || tp.model_tflops_per_gpu || tp.mfu || tp.hfu);
  tp = compute_metrics(basic_timeline()).throughput;  // a timeline that says nothing of its workload
  EXPECT_FALSE(tp.samples_per_s || tp.tokens_per_s || tp.tokens_per_s_per_gpu || tp.model_tflops_per_gpu || tp.mfu || tp.hfu);
}

// The slowest rank defines the step, and so the throughput.
TEST(Throughput, UsesTheReportedStepOfTheSlowestRank) {
  Timeline t = half_second_step();
  t.ranks = 2;
  t.intervals.push_back(iv(0, 0, 0, 1000000, 1));
  EXPECT_DOUBLE_EQ(*compute_metrics(t).throughput.tokens_per_s, 8192.0);
  EXPECT_DOUBLE_EQ(*compute_metrics(t, 0).throughput.tokens_per_s, 16384.0);
}

TEST(Metrics, FitIsJudgedOnTheReservedEstimate) {
  Timeline t = basic_timeline();  // peak allocated 900 of 1000, margin 0.1
  Metrics m = compute_metrics(t);
  EXPECT_EQ(m.peak_reserved_bytes, 900);  // no reserve: reserved = allocated
  EXPECT_TRUE(m.fits_memory);
  t.memory_reserve.fragmentation = 0.05;
  t.memory_reserve.fixed_bytes = 50;
  m = compute_metrics(t);
  EXPECT_EQ(m.peak_memory_bytes, 900);      // allocated is unchanged
  EXPECT_EQ(m.peak_reserved_bytes, 995);    // 900 x 1.05 + 50
  EXPECT_EQ(m.peak_allocator_reserved_bytes, 945);  // 900 x 1.05: torch.cuda.max_memory_reserved()
  EXPECT_FALSE(m.fits_memory);              // 995 > 1000 x 0.9
  t.memory_margin = 0;
  EXPECT_TRUE(compute_metrics(t).fits_memory);  // 995 <= 1000
  t.memory.clear();
  m = compute_metrics(t);
  EXPECT_EQ(m.peak_reserved_bytes, 0);  // no samples: nothing to estimate from
  EXPECT_TRUE(m.fits_memory);
}

TEST(MetricsJson, ThroughputRoundTripsWithUnknownsAsNull) {
  Timeline t = half_second_step();
  t.workload.tokens_per_step = 0;
  t.workload.peak_flops_per_gpu = 0;
  const Metrics m = compute_metrics(t);
  const nlohmann::json j = metrics_to_json(m);
  EXPECT_TRUE(j["throughput"]["tokens_per_s"].is_null());
  EXPECT_TRUE(j["throughput"]["tokens_per_s_per_gpu"].is_null());
  EXPECT_TRUE(j["throughput"]["mfu"].is_null());
  EXPECT_TRUE(j["throughput"]["hfu"].is_null());
  EXPECT_DOUBLE_EQ(j["throughput"]["samples_per_s"].get<double>(), 16.0);
  EXPECT_DOUBLE_EQ(j["throughput"]["model_tflops_per_gpu"].get<double>(), 2000.0);
  const Metrics back = metrics_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(metrics_to_json(back), j);
  EXPECT_FALSE(back.throughput.tokens_per_s.has_value());
  ASSERT_TRUE(back.throughput.samples_per_s.has_value());
  EXPECT_DOUBLE_EQ(*back.throughput.samples_per_s, 16.0);
}

// metrics.json files written before the reserved estimate and throughput existed (the shipped
// baselines, tracked histories) still read: throughput unknown, reserved = allocated.
TEST(MetricsJson, OlderFilesWithoutTheNewFieldsRead) {
  Timeline t = half_second_step();
  t.memory = {{0, 700}};
  t.memory_reserve.fixed_bytes = 10;
  t.host_launches_per_step = 7;
  nlohmann::json j = metrics_to_json(compute_metrics(t));
  EXPECT_EQ(metrics_from_json(j).host_launches, 7);
  j.erase("throughput");
  j.erase("peak_reserved_bytes");
  j.erase("peak_allocator_reserved_bytes");
  j.erase("host_launches");
  const Metrics back = metrics_from_json(j);
  EXPECT_EQ(back.host_launches, 0);
  EXPECT_EQ(back.peak_memory_bytes, 700);
  EXPECT_EQ(back.peak_reserved_bytes, 700);
  EXPECT_EQ(back.peak_allocator_reserved_bytes, 700);
  EXPECT_FALSE(back.throughput.tokens_per_s.has_value());
  EXPECT_FALSE(back.throughput.mfu.has_value());
  EXPECT_DOUBLE_EQ(back.step_time_us, 500000.0);
}

TEST(MetricsJson, BadThroughputValueNamesItsPath) {
  nlohmann::json j = metrics_to_json(compute_metrics(half_second_step()));
  j["throughput"]["mfu"] = -0.5;
  try {
    metrics_from_json(j);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "throughput.mfu");
  }
  j = metrics_to_json(compute_metrics(half_second_step()));
  j["throughput"].erase("hfu");
  try {
    metrics_from_json(j);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "throughput.hfu");
  }
}

TEST(MetricsJson, BadFieldNamesItsPath) {
  nlohmann::json j = metrics_to_json(compute_metrics(basic_timeline()));
  j["by_kind"]["compute"]["busy_us"] = "fast";
  try {
    metrics_from_json(j);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "by_kind.compute.busy_us");
  }
  // 1e308 us is no step (regress would print its ratio as infinite): refused, as are negatives.
  for (const double bad : {1e308, -5.0, 0.0}) {
    j = metrics_to_json(compute_metrics(basic_timeline()));
    j["step_time_us"] = bad;
    try {
      metrics_from_json(j);
      ADD_FAILURE() << "accepted a step of " << bad << " us";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "step_time_us");
      EXPECT_NE(std::string(e.what()).find("(0, 1e+15] us"), std::string::npos) << e.what();
    }
  }
  j = metrics_to_json(compute_metrics(basic_timeline()));
  j.erase("step_time_us");
  try {
    metrics_from_json(j);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "step_time_us");
  }
}

// A prediction's peak by part travels through metrics.json; parts that do not sum to the peak,
// an unknown part or a negative one are refused, naming the path.
TEST(MetricsJson, ThePeaksPartsRoundTripAndMustSumToThePeak) {
  Metrics m = compute_metrics(basic_timeline());
  MemoryAtPeak peak;
  peak.sharded_params_bytes = 100;
  peak.optimizer_state_bytes = 200;
  peak.bytes_by_kind[static_cast<size_t>(MemoryKind::Activations)] = m.peak_memory_bytes - 300;
  m.memory_at_peak = peak;
  const nlohmann::json j = metrics_to_json(m);
  EXPECT_EQ(j.at("memory_at_peak").at("activations"), m.peak_memory_bytes - 300);
  EXPECT_FALSE(j.at("memory_at_peak").contains("none"));  // an unnamed part only when it holds bytes
  EXPECT_EQ(metrics_from_json(j).memory_at_peak, m.memory_at_peak);
  const auto where = [](const nlohmann::json& bad) {
    try {
      metrics_from_json(bad);
    } catch (const InputError& e) {
      return std::string(e.what());  // "path: sentence"
    }
    return std::string("accepted");
  };
  nlohmann::json bad = j;
  bad["memory_at_peak"]["activations"] = m.peak_memory_bytes;
  EXPECT_NE(where(bad).find("memory_at_peak: its parts sum to"), std::string::npos) << where(bad);
  bad = j;
  bad["memory_at_peak"]["logits"] = 0;
  EXPECT_EQ(where(bad), "memory_at_peak.logits: is not a part of the peak memory");
  bad = j;  // parts that would overflow a 64-bit sum are refused, not wrapped
  bad["memory_at_peak"]["sharded_params"] = bad["memory_at_peak"]["optimizer_state"] = std::numeric_limits<int64_t>::max();
  EXPECT_NE(where(bad).find("memory_at_peak: its parts sum to"), std::string::npos) << where(bad);
  bad = j;
  bad["memory_at_peak"]["optimizer_state"] = -1;
  EXPECT_NE(where(bad).find("memory_at_peak.optimizer_state: must be >= 0"), std::string::npos) << where(bad);
}

}  // namespace
}  // namespace shardline
