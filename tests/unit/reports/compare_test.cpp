// reports/compare: hand-built predicted and measured timelines with hand-computed errors.
#include "reports/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/schedule.h"
#include "core/statistics.h"

namespace shardline {
namespace {

Op make_op(OpLabels& labels, OpKind kind, StreamId stream, std::string_view name) {
  Op o;
  o.kind = kind;
  o.stream = stream;
  if (is_collective(kind)) {
    o.group = CommGroup::Shard;
    o.set_bytes(1024);
  }
  set_op_name(labels, o, name);
  return o;
}

// The ops of a hand-made Timeline, named in its label table.
HugePageVector<Op> ops(OpLabels& labels) {
  return {make_op(labels, OpKind::CopyIn, StreamId::CopyIn, "ci u0"),
          make_op(labels, OpKind::AllGather, StreamId::AllGather, "ag u0"),
          make_op(labels, OpKind::Compute, StreamId::Compute, "fwd u0"),
          make_op(labels, OpKind::Compute, StreamId::Compute, "bwd u0"),
          make_op(labels, OpKind::ReduceScatter, StreamId::ReduceScatter, "rs u0"),
          make_op(labels, OpKind::Free, StreamId::Compute, "free u0")};
}

// One rank: step 150 us, compute busy 120, exposed 30, comm busy 50, overlap 0.4.
Timeline predicted() {
  Timeline t;
  t.scenario = "hand";
  t.ops = ops(t.labels);
  t.group_sizes[static_cast<size_t>(CommGroup::Shard)] = 2;
  const double iv[6][2] = {{0, 5}, {5, 25}, {25, 65}, {65, 145}, {120, 150}, {150, 150}};
  for (int i = 0; i < 6; ++i) t.intervals.push_back({i, 0, 0, 0, iv[i][0], iv[i][1]});
  return t;
}

// Two ranks, two iterations, iteration 1 reported. Rank 1 defines the step there (200 us,
// compute busy 140, exposed 60, comm busy 80, overlap 0.25); iteration 0 is slow and ignored.
Timeline measured() {
  Timeline t;
  t.source = "measured";
  t.backend = "mpi";
  t.scenario = "hand";
  t.ranks = 2;
  t.iterations = 2;
  t.reported_iteration = 1;
  t.ops = ops(t.labels);
  t.group_sizes[static_cast<size_t>(CommGroup::Shard)] = 2;
  for (int r = 0; r < 2; ++r) {
    const double slow[6][2] = {{0, 10}, {10, 40}, {40, 90}, {90, 180}, {150, 500}, {500, 500}};
    for (int i = 0; i < 6; ++i) t.intervals.push_back({i, r, 0, 0, slow[i][0], slow[i][1]});
    const double rs_end = r == 1 ? 1200 : 1190;
    const double iv[6][2] = {{1000, 1010}, {1010, 1040}, {1040, 1090}, {1090, 1180}, {1150, rs_end}, {rs_end, rs_end}};
    for (int i = 0; i < 6; ++i) t.intervals.push_back({i, r, 1, 1000, iv[i][0], iv[i][1]});
  }
  return t;
}

TEST(Quantile, InterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({25, 15}, 0.5), 20);
  EXPECT_DOUBLE_EQ(quantile({25, 15}, 0.9), 24);
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
}

// The host's issue time is compared when both runs recorded it: here every op is issued 10 us
// before it starts, the first at the step start, so the measured step (rank 1, iteration 1)
// issued its last op, the free, 190 us after its first, and the prediction 140 us after (the step
// times stay 150 and 200 us). A prediction without issue times shows no row.
TEST(Compare, SetsThePredictedHostIssueAgainstTheMeasuredOne) {
  Timeline p = predicted(), m = measured();
  EXPECT_EQ(comparison_table(compare_timelines(p, m)).find("host issue"), std::string::npos);  // none recorded
  for (Timeline* t : {&p, &m})
    for (OpInterval& iv : t->intervals) iv.issue_us = std::max(iv.start_us - 10, t == &p ? 0.0 : iv.iteration == 1 ? 1000.0 : 0.0);
  const Comparison c = compare_timelines(p, m);
  EXPECT_DOUBLE_EQ(c.predicted.step_time_us, 150);
  EXPECT_DOUBLE_EQ(c.measured.step_time_us, 200);
  EXPECT_DOUBLE_EQ(c.predicted.host_issue_us, 140);
  EXPECT_DOUBLE_EQ(c.measured.host_issue_us, 190);
  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("host issue (us)       140.0         190.0         -26.3%"), std::string::npos) << table;
  EXPECT_EQ(comparison_to_json(c).at("measured").at("host_issue_us"), 190.0);
  Timeline no_issue = predicted();
  EXPECT_EQ(comparison_table(compare_timelines(no_issue, m)).find("host issue"), std::string::npos);
}

// The measured steps are 500 us (iteration 0) and 200 us (iteration 1); the prediction, 150 us,
// lies below both: outside the run-to-run spread (p10 .. p90 interpolated: 230 .. 470 us, the
// p10 held at the median, 200 us, so that the band holds its own median). The median of an even
// count is the lower middle, 200 us: the reported iteration's step, so the step row's error and
// the line's "from the median" are the same -25%.
TEST(Compare, StatesTheMeasuredSpreadAndWhetherThePredictionIsInsideIt) {
  const Comparison c = compare_timelines(predicted(), measured());
  EXPECT_EQ(c.measured_spread.iterations, 2);
  EXPECT_DOUBLE_EQ(c.measured_spread.median_us, 200);
  EXPECT_DOUBLE_EQ(c.measured_spread.median_us, c.measured.step_time_us);
  EXPECT_DOUBLE_EQ(c.measured_spread.p10_us, 200);
  EXPECT_DOUBLE_EQ(c.measured_spread.p90_us, 470);
  EXPECT_DOUBLE_EQ(c.measured_spread.median_error, c.step_error);
  EXPECT_FALSE(c.measured_spread.prediction_inside);
  EXPECT_NE(comparison_table(c).find("measured step over 2 iterations: median (the lower of the two middle steps) 200"), std::string::npos) << comparison_table(c);
  EXPECT_NE(comparison_table(c).find("outside that run-to-run spread"), std::string::npos);
  EXPECT_EQ(comparison_to_json(c).at("measured_spread").at("prediction_inside"), false);
  Timeline wide = predicted();
  for (OpInterval& iv : wide.intervals) iv.end_us *= 2.0, iv.start_us *= 2.0;  // a 300 us prediction
  EXPECT_TRUE(compare_timelines(wide, measured()).measured_spread.prediction_inside);
  // A prediction of the very step measured once, off in the last bits (a round trip through
  // text), is inside the spread, not "outside" by 0.4 ns.
  Timeline once = measured();
  once.iterations = 1;
  once.reported_iteration = 0;
  std::erase_if(once.intervals, [](const OpInterval& iv) { return iv.iteration != 0; });
  Timeline same = once;
  same.source = "predicted";
  for (OpInterval& iv : same.intervals)
    if (iv.rank == 0) iv.end_us = std::nextafter(iv.end_us, 1e300);
  const Comparison c1 = compare_timelines(same, once);
  EXPECT_NE(c1.measured_spread.median_error, 0.0);
  EXPECT_TRUE(c1.measured_spread.prediction_inside);
  // An import round trip (profiler nanoseconds) is off by up to a nanosecond: still inside; two
  // nanoseconds is a real difference.
  for (auto [shift_us, inside] : {std::pair{0.0003, true}, std::pair{0.002, false}}) {
    Timeline shifted = once;
    shifted.source = "predicted";
    for (OpInterval& iv : shifted.intervals)
      if (iv.rank == 0) iv.end_us += shift_us;
    EXPECT_EQ(compare_timelines(shifted, once).measured_spread.prediction_inside, inside) << shift_us;
  }
  // One iteration has no spread: the line says so instead of "p10 .. p90 x .. x".
  EXPECT_NE(comparison_table(c1).find("one iteration has no run-to-run spread"), std::string::npos) << comparison_table(c1);
}

// Every measured rank gets a row: against the representative prediction, or against the same
// rank of an every-rank prediction that kept it (one that kept only some ranks is accepted).
// validate's drift check: the move of the prediction between the calibrations before and after
// the run, judged against the tolerance, in the table, compare.json and the HTML page.
TEST(Compare, StatesTheMachinesDriftWhenValidateMeasuredIt) {
  const MachineDrift kept = drift_between(20000, 21000, 0.10);
  EXPECT_NEAR(kept.relative_change, 0.05, 1e-12);
  EXPECT_FALSE(kept.drifted);
  const MachineDrift moved = drift_between(20000, 17000, 0.10);
  EXPECT_NEAR(moved.relative_change, -0.15, 1e-12);
  EXPECT_TRUE(moved.drifted);
  EXPECT_FALSE(drift_between(20000, 22000, 0.10).drifted) << "exactly the tolerance is within it";

  Comparison c = compare_timelines(predicted(), measured());
  EXPECT_TRUE(comparison_to_json(c).at("machine_drift").is_null());
  EXPECT_EQ(comparison_table(c).find("machine drift"), std::string::npos);
  c.machine_drift = moved;
  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("machine drift: the calibration after the run predicts the step at 17.00 ms, -15.0% from the 20.00 ms"),
            std::string::npos) << table;
  EXPECT_NE(table.find("more than the tolerance: the machine changed speed while validate ran"), std::string::npos) << table;
  const nlohmann::json j = comparison_to_json(c).at("machine_drift");
  EXPECT_DOUBLE_EQ(j.at("after_run_predicted_step_time_us").get<double>(), 17000);
  EXPECT_NEAR(j.at("relative_change").get<double>(), -0.15, 1e-12);
  EXPECT_TRUE(j.at("drifted").get<bool>());
  EXPECT_NE(comparison_html(c, predicted(), measured()).find("machine drift: the calibration after the run"), std::string::npos);
  c.machine_drift = kept;
  EXPECT_NE(comparison_table(c).find("within the tolerance: the machine kept its speed"), std::string::npos);
}

TEST(Compare, ComparesEveryRankThePredictionHolds) {
  const Comparison c = compare_timelines(predicted(), measured());
  ASSERT_EQ(c.by_rank.size(), 2u);
  EXPECT_EQ(c.by_rank[1].rank, 1);
  EXPECT_DOUBLE_EQ(c.by_rank[0].predicted_step_us, 150);
  EXPECT_DOUBLE_EQ(c.by_rank[1].predicted_step_us, 150);
  EXPECT_DOUBLE_EQ(c.by_rank[1].measured_step_us, 200);  // rank 1, iteration 1: 1000..1200
  EXPECT_DOUBLE_EQ(c.by_rank[1].error, -0.25);
  Timeline kept = predicted();
  kept.ranks = 2;
  for (OpInterval& iv : kept.intervals) iv.rank = 1;  // an every-rank prediction that kept rank 1
  const Comparison k = compare_timelines(kept, measured());
  ASSERT_EQ(k.by_rank.size(), 1u);
  EXPECT_EQ(k.by_rank[0].rank, 1);
  kept.intervals.pop_back();  // a kept rank must still be complete
  EXPECT_THROW(compare_timelines(kept, measured()), InputError);
}

// An every-rank prediction where a straggler (rank 1) ties with the rank that waited for it
// (rank 0): both end at 150 us. The measured step is rank 1's, so the ops and the overlap are read
// on the prediction's rank 1 too, not on rank 0 by the lowest-rank rule (whose compute would show
// as errors against the straggler's).
TEST(Compare, AnEveryRankPredictionIsReadOnTheMeasuredRank) {
  Timeline every = predicted();
  every.ranks = 2;
  every.intervals.clear();
  const double waited[6][2] = {{0, 5}, {5, 25}, {25, 55}, {55, 115}, {115, 150}, {150, 150}};      // rank 0: short compute, waits in rs
  const double straggler[6][2] = {{0, 5}, {5, 25}, {25, 70}, {70, 135}, {120, 150}, {150, 150}};  // rank 1: 1.5x compute
  for (int i = 0; i < 6; ++i) every.intervals.push_back({i, 0, 0, 0, waited[i][0], waited[i][1]});
  for (int i = 0; i < 6; ++i) every.intervals.push_back({i, 1, 0, 0, straggler[i][0], straggler[i][1]});
  const Comparison c = compare_timelines(every, measured());
  EXPECT_EQ(c.measured_rank, 1);
  EXPECT_EQ(c.predicted_rank, 1);
  EXPECT_TRUE(c.predicted_every_rank);
  EXPECT_DOUBLE_EQ(c.predicted.step_time_us, 150);
  EXPECT_DOUBLE_EQ(c.predicted.compute_busy_us, 110);  // rank 1's: 25..135; rank 0's would be 90
  const auto fwd = std::find_if(c.ops.begin(), c.ops.end(), [](const OpComparison& o) { return o.name == "fwd u0"; });
  ASSERT_NE(fwd, c.ops.end());
  EXPECT_DOUBLE_EQ(fwd->predicted_duration_us, 45);  // rank 1's forward
  EXPECT_EQ(comparison_to_json(c).at("predicted_rank"), 1);
  EXPECT_NE(comparison_table(c).find("(measured: mpi, rank 1, iteration 1; predicted: rank 1)"), std::string::npos)
      << comparison_table(c);
  EXPECT_NE(comparison_table(c).find("step time per rank"), std::string::npos);
  const std::string html = comparison_html(c, every, measured());
  EXPECT_NE(html.find("<h2>Step time per rank (us)</h2>"), std::string::npos);
  EXPECT_NE(html.find("predicted (" + every.backend + "), rank 1"), std::string::npos);  // the timeline drawn is rank 1's
  // A one-rank prediction stands for every rank: read on its own rank 0, the header says nothing more.
  const Comparison one = compare_timelines(predicted(), measured());
  EXPECT_EQ(one.predicted_rank, 0);
  EXPECT_FALSE(one.predicted_every_rank);
  EXPECT_NE(comparison_table(one).find("(measured: mpi, rank 1, iteration 1)\n"), std::string::npos);
}

// A rank that reaches a collective late makes the other members wait inside it: with the group
// table, each rank's waiting is the time from its start to the last member's, summed.
TEST(Compare, NamesEachRanksWaitingForTheLastMemberOfItsCollectives) {
  Timeline m = measured();
  for (OpInterval& iv : m.intervals)
    if (iv.rank == 1 && iv.iteration == 1 && iv.op == 1) iv.start_us += 12;  // rank 1's all-gather starts late
  for (OpInterval& iv : m.intervals)
    if (iv.rank == 0 && iv.iteration == 1 && iv.op == 4) iv.start_us += 5;  // rank 0's reduce-scatter
  const std::vector<GroupInfo> groups = fsdp_group_table(2, 1, 0);
  const Comparison c = compare_timelines(predicted(), m, 0.1, &groups);
  ASSERT_EQ(c.by_rank.size(), 2u);
  ASSERT_TRUE(c.by_rank[0].measured_wait_us.has_value());
  EXPECT_DOUBLE_EQ(*c.by_rank[0].measured_wait_us, 12);  // waited for rank 1's all-gather
  EXPECT_DOUBLE_EQ(*c.by_rank[1].measured_wait_us, 5);   // and rank 1 for rank 0's reduce-scatter
  EXPECT_DOUBLE_EQ(comparison_to_json(c).at("by_rank")[0].at("measured_collective_wait_us").get<double>(), 12);
  EXPECT_NE(comparison_table(c).find("measured waiting in collectives"), std::string::npos);
  // Groups of one rank each (a replicate-only mesh's shard groups): nobody waits for anybody.
  const std::vector<GroupInfo> alone = fsdp_group_table(1, 2, 0);
  EXPECT_DOUBLE_EQ(*compare_timelines(predicted(), m, 0.1, &alone).by_rank[0].measured_wait_us, 0);
  // Without the table the waiting is not stated.
  EXPECT_FALSE(compare_timelines(predicted(), m).by_rank[0].measured_wait_us.has_value());
  EXPECT_EQ(comparison_table(compare_timelines(predicted(), m)).find("measured waiting"), std::string::npos);
  // A one-rank prediction has no waiting of its own to state; an every-rank one that kept every
  // rank has: the predicted waiting stands beside the measured, rank by rank.
  EXPECT_FALSE(c.by_rank[0].predicted_wait_us.has_value());
  Timeline every = predicted();
  every.ranks = 2;
  const size_t ops = every.intervals.size();
  for (size_t i = 0; i < ops; ++i) {
    OpInterval iv = every.intervals[i];
    iv.rank = 1;
    if (iv.op == 1) iv.start_us += 7;  // rank 1's all-gather starts 7 us late: rank 0 waits 7 us
    every.intervals.push_back(iv);
  }
  const Comparison both = compare_timelines(every, m, 0.1, &groups);
  ASSERT_TRUE(both.by_rank[0].predicted_wait_us.has_value());
  EXPECT_DOUBLE_EQ(*both.by_rank[0].predicted_wait_us, 7);
  EXPECT_DOUBLE_EQ(*both.by_rank[1].predicted_wait_us, 0);
  EXPECT_DOUBLE_EQ(comparison_to_json(both).at("by_rank")[0].at("predicted_collective_wait_us").get<double>(), 7);
  EXPECT_NE(comparison_table(both).find("waiting in collectives (for the last member): predicted, measured"), std::string::npos)
      << comparison_table(both);
  EXPECT_NE(comparison_html(both, every, m).find("<th>predicted waiting in collectives"), std::string::npos);
}

TEST(Compare, StepTimeAndOverlapOnBothSides) {
  const Comparison c = compare_timelines(predicted(), measured(), 0.10);
  EXPECT_EQ(c.measured_rank, 1);
  EXPECT_EQ(c.measured_iteration, 1);
  EXPECT_DOUBLE_EQ(c.predicted.step_time_us, 150);
  EXPECT_DOUBLE_EQ(c.measured.step_time_us, 200);
  EXPECT_DOUBLE_EQ(c.step_error, -0.25);
  EXPECT_FALSE(c.within_tolerance);
  EXPECT_DOUBLE_EQ(c.predicted.exposed_comm_us, 30);
  EXPECT_DOUBLE_EQ(c.measured.exposed_comm_us, 60);
  EXPECT_DOUBLE_EQ(c.predicted.overlap_efficiency, 0.4);
  EXPECT_DOUBLE_EQ(c.measured.overlap_efficiency, 0.25);
  EXPECT_TRUE(compare_timelines(predicted(), measured(), 0.30).within_tolerance);
}

// Differences that round to zero print as +0, never "-0.000" (an audit saw it comparing a run
// with itself, where the overlap differed by a rounding error).
TEST(Compare, NoNegativeZeros) {
  Comparison c = compare_timelines(predicted(), measured(), 0.10);
  c.predicted.overlap_efficiency = c.measured.overlap_efficiency - 1e-12;
  c.predicted.exposed_comm_us = c.measured.exposed_comm_us - 1e-9;
  const std::string table = comparison_table(c);
  EXPECT_EQ(table.find("-0.0"), std::string::npos) << table;
  EXPECT_NE(table.find("+0.000"), std::string::npos) << table;
  // An unsigned column stays unsigned: a time of -0.04 us prints as 0.0, not +0.0.
  c.predicted.exposed_comm_us = -0.04;
  EXPECT_EQ(comparison_table(c).find("+0.0 "), std::string::npos) << comparison_table(c);
}

TEST(Compare, PerOpErrorsRelativeToEachStepStart) {
  const Comparison c = compare_timelines(predicted(), measured());
  ASSERT_EQ(c.ops.size(), 5u);  // the free marker is left out
  const double start_err[5] = {0, -5, -15, -25, -30};
  const double dur_err[5] = {-5, -10, -10, -10, -20};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.ops[i].op, i);
    EXPECT_DOUBLE_EQ(c.ops[i].start_error_us(), start_err[i]) << i;
    EXPECT_DOUBLE_EQ(c.ops[i].duration_error_us(), dur_err[i]) << i;
  }
}

TEST(Compare, PerKindMedianAndP90) {
  const Comparison c = compare_timelines(predicted(), measured());
  ASSERT_EQ(c.by_kind.size(), 4u);  // compute, copy_in, all_gather, reduce_scatter
  const KindErrors* compute = nullptr;
  for (const auto& k : c.by_kind)
    if (k.kind == "compute") compute = &k;
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ(compute->count, 2);
  EXPECT_DOUBLE_EQ(compute->duration_median_abs_error_us, 10);
  EXPECT_DOUBLE_EQ(compute->duration_p90_abs_error_us, 10);
  EXPECT_DOUBLE_EQ(compute->start_median_abs_error_us, 20);
  EXPECT_DOUBLE_EQ(compute->start_p90_abs_error_us, 24);
}

TEST(Compare, WorstOpsByLargestStartOrEndDisagreement) {
  const Comparison c = compare_timelines(predicted(), measured());
  ASSERT_EQ(c.worst.size(), 5u);
  const int order[5] = {4, 3, 2, 1, 0};
  const double disagreement[5] = {50, 35, 25, 15, 5};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.worst[i].op, order[i]);
    EXPECT_DOUBLE_EQ(c.worst[i].disagreement_us(), disagreement[i]);
  }
}

// An op name wider than the name column widens the column: every listed op's "start" begins at
// the same place, so a long unit name does not push its row's numbers out of line.
TEST(Compare, LongOpNamesKeepTheWorstOpsColumnsAligned) {
  Comparison c = compare_timelines(predicted(), measured());
  ASSERT_GE(c.worst.size(), 2u);
  c.worst[0].name = "bwd model.layers.31.self_attention.core";
  const std::string table = comparison_table(c);
  const size_t list = table.find("ops that disagree most");
  ASSERT_NE(list, std::string::npos);
  std::vector<size_t> columns;
  size_t line = table.find('\n', list) + 1;
  while (line < table.size() && table.compare(line, 3, "  #") == 0) {
    const size_t end = table.find('\n', line);
    columns.push_back(table.find("start ", line) - line);
    line = end + 1;
  }
  ASSERT_EQ(columns.size(), c.worst.size()) << table;
  for (size_t col : columns) EXPECT_EQ(col, columns.front()) << table;
}

// A timeline compared with itself has no op that disagrees: the list is empty, not ten ops at 0
// (an audit found compare listing them as "ops that disagree most").
TEST(Compare, OpsThatAgreeExactlyAreNotListedAsDisagreeing) {
  EXPECT_TRUE(compare_timelines(predicted(), predicted()).worst.empty());
  EXPECT_NE(comparison_table(compare_timelines(predicted(), predicted())).find("none: every op starts and ends as predicted"),
            std::string::npos);
}

// Against a measured run whose allocator's figures are known (imported traces), the predicted
// peak allocated and the allocator's own reserve are compared with them; without them, no rows.
TEST(Compare, ThePredictedPeakMemoryIsHeldAgainstTheRealAllocatorsFigures) {
  Timeline p = predicted();
  p.memory = {{0, 600}, {50, 800}, {150, 0}};
  p.memory_reserve.fragmentation = p.memory_reserve.fragmentation_at_capacity = 0.25;  // reserved: 1000
  Timeline m = measured();
  EXPECT_FALSE(compare_timelines(p, m).allocator_memory.has_value());
  m.allocator_measured = AllocatorPeaks{1000, 1250};
  const Comparison c = compare_timelines(p, m);
  ASSERT_TRUE(c.allocator_memory.has_value());
  EXPECT_EQ(c.allocator_memory->predicted_allocated_bytes, 800);
  EXPECT_DOUBLE_EQ(c.allocator_memory->allocated_error, -0.2);
  EXPECT_EQ(c.allocator_memory->predicted_reserved_bytes, 1000);
  EXPECT_DOUBLE_EQ(c.allocator_memory->reserved_error, -0.2);
  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("peak allocated        800 B         1000 B        -20.0%"), std::string::npos) << table;
  const nlohmann::json j = comparison_to_json(c);
  EXPECT_EQ(j.at("allocator_memory").at("measured_peak_reserved_bytes"), 1250);
  EXPECT_TRUE(comparison_to_json(compare_timelines(p, measured())).at("allocator_memory").is_null());
}

TEST(Compare, JsonCarriesTheHeadlineNumbers) {
  const nlohmann::json j = comparison_to_json(compare_timelines(predicted(), measured()));
  EXPECT_DOUBLE_EQ(j.at("step_error").get<double>(), -0.25);
  EXPECT_EQ(j.at("within_tolerance").get<bool>(), false);
  EXPECT_EQ(j.at("worst_ops").at(0).at("name").get<std::string>(), "rs u0");
  EXPECT_DOUBLE_EQ(j.at("measured_overlap_efficiency").get<double>(), 0.25);
}

TEST(Compare, HtmlStacksBothTimelines) {
  const Timeline p = predicted(), m = measured();
  const std::string html = comparison_html(compare_timelines(p, m), p, m);
  const size_t pred = html.find("predicted (sim)");
  const size_t meas = html.find("measured (mpi), rank 1, iteration 1");
  ASSERT_NE(pred, std::string::npos);
  ASSERT_NE(meas, std::string::npos);
  EXPECT_LT(pred, meas);
}

// 2 GPUs, 3000 tokens and 3e9 model FLOPs per step, a 100 TFLOP/s peak, on both sides.
Workload hand_workload() {
  Workload w;
  w.gpus = 2;
  w.samples_per_step = 3;
  w.tokens_per_step = 3000;
  w.model_flops_per_step = 3e9;
  w.hardware_flops_per_step = 3e9;
  w.peak_flops_per_gpu = 100e12;
  return w;
}

// Step 150 us predicted, 200 us measured: tokens/s per GPU 10,000,000 vs 7,500,000 (+33.3%),
// MFU 10.0% vs 7.5% (+2.5 points).
TEST(Compare, ThroughputErrorsOnBothSides) {
  Timeline p = predicted(), m = measured();
  p.workload = m.workload = hand_workload();
  const Comparison c = compare_timelines(p, m);
  ASSERT_TRUE(c.predicted.throughput.tokens_per_s_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*c.predicted.throughput.tokens_per_s_per_gpu, 1e7);
  EXPECT_DOUBLE_EQ(*c.measured.throughput.tokens_per_s_per_gpu, 7.5e6);
  ASSERT_TRUE(c.tokens_per_s_per_gpu_error.has_value());
  EXPECT_DOUBLE_EQ(*c.tokens_per_s_per_gpu_error, 1.0 / 3.0);
  ASSERT_TRUE(c.mfu_error.has_value());
  EXPECT_NEAR(*c.mfu_error, 0.025, 1e-15);

  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("tokens/s per GPU      10,000,000    7,500,000     +33.3%"), std::string::npos) << table;
  EXPECT_NE(table.find("MFU                   10.0%         7.5%          +2.5 pp"), std::string::npos) << table;
  const nlohmann::json j = comparison_to_json(c);
  EXPECT_DOUBLE_EQ(j.at("predicted_tokens_per_s_per_gpu").get<double>(), 1e7);
  EXPECT_DOUBLE_EQ(j.at("measured_tokens_per_s_per_gpu").get<double>(), 7.5e6);
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s_per_gpu_error").get<double>(), 1.0 / 3.0);
  EXPECT_NEAR(j.at("mfu_error").get<double>(), 0.025, 1e-15);
  const std::string html = comparison_html(c, p, m);
  EXPECT_NE(html.find("<tr><td>tokens/s per GPU</td><td>10,000,000</td><td>7,500,000</td><td>+33.3%</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>MFU</td><td>10.0%</td><td>7.5%</td><td>+2.5 pp</td></tr>"), std::string::npos);
  // The other rates: global tokens/s 2e7 vs 1.5e7, samples/s 20,000 vs 15,000, model TFLOP/s per
  // GPU 10 vs 7.5 (all +33.3%); HFU equals MFU here (no recomputation).
  EXPECT_NE(table.find("tokens/s              20,000,000    15,000,000    +33.3%"), std::string::npos) << table;
  EXPECT_NE(table.find("samples/s             20,000        15,000        +33.3%"), std::string::npos) << table;
  EXPECT_NE(table.find("model TFLOP/s / GPU   10.0          7.5           +33.3%"), std::string::npos) << table;
  EXPECT_NE(table.find("HFU                   10.0%         7.5%          +2.5 pp"), std::string::npos) << table;
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s_error").get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(j.at("samples_per_s_error").get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(j.at("model_tflops_per_gpu_error").get<double>(), 1.0 / 3.0);
  EXPECT_NEAR(j.at("hfu_error").get<double>(), 0.025, 1e-15);
  EXPECT_FALSE(j.at("workloads_differ").get<bool>());
  EXPECT_EQ(table.find("do not process the same work"), std::string::npos) << table;
}

// Two runs of different work per step (here twice the tokens, e.g. a doubled micro-batch): the
// comparison says so under the table and in compare.json, and the rates still compare.
TEST(Compare, SaysWhenTheTwoRunsDoDifferentWork) {
  Timeline p = predicted(), m = measured();
  p.workload = m.workload = hand_workload();
  m.workload.tokens_per_step *= 2;
  m.workload.samples_per_step *= 2;
  m.workload.model_flops_per_step *= 2;
  m.workload.hardware_flops_per_step *= 2;
  const Comparison c = compare_timelines(p, m);
  EXPECT_TRUE(c.workloads_differ());
  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("note: the two runs do not process the same work per step (3,000 vs 6,000 tokens per step)"),
            std::string::npos)
      << table;
  ASSERT_TRUE(c.tokens_per_s_per_gpu_error.has_value());
  EXPECT_NEAR(*c.tokens_per_s_per_gpu_error, 1e7 / 1.5e7 - 1, 1e-12);  // 10,000,000 vs 15,000,000 tokens/s per GPU
  EXPECT_TRUE(comparison_to_json(c).at("workloads_differ").get<bool>());
  EXPECT_NE(comparison_html(c, p, m).find("do not process the same work per step"), std::string::npos);
}

// A prediction without the straggler the measured run had compares different inputs: said.
TEST(Compare, SaysWhenTheTwoRunsHadDifferentVariation) {
  Timeline p = predicted(), m = measured();
  EXPECT_TRUE(compare_timelines(p, m).variation_difference.empty());
  m.variation.stragglers.push_back({RankSelector{RankSelector::Scope::Rank, 1}, 1.5});
  const Comparison c = compare_timelines(p, m);
  EXPECT_EQ(c.variation_difference, "predicted: none; measured: straggler rank 1 computes x1.5");
  EXPECT_NE(comparison_table(c).find("note: the two runs had different variation (predicted: none; measured: straggler rank 1 "
                                     "computes x1.5): the step-time and per-rank errors compare different inputs"),
            std::string::npos)
      << comparison_table(c);
  EXPECT_EQ(comparison_to_json(c).at("variation_difference"), c.variation_difference);
  EXPECT_NE(comparison_html(c, p, m).find("had different variation"), std::string::npos);
  // A side that does not know its variation (an imported real run, an older timeline): nothing to say.
  m.variation_recorded = false;
  EXPECT_TRUE(compare_timelines(p, m).variation_difference.empty());
  m.variation_recorded = true;
  // The same variation on both sides (validate passes it to both): nothing to say.
  p.variation = m.variation;
  EXPECT_TRUE(compare_timelines(p, m).variation_difference.empty());
}

// With compute jitter the prediction plays iteration 0's draws; a measured step reported from
// another iteration drew others (the fixture reports iteration 1), and the comparison says so.
TEST(Compare, SaysWhenTheReportedIterationDrewOtherJitter) {
  Timeline p = predicted(), m = measured();
  ASSERT_EQ(m.reported_iteration, 1);
  EXPECT_FALSE(compare_timelines(p, m).jitter_draws_differ);  // no jitter
  m.variation.jitter.cv = 0.1;
  m.variation.seed = 3;
  p.variation = m.variation;
  Comparison c = compare_timelines(p, m);
  EXPECT_TRUE(c.jitter_draws_differ);
  EXPECT_NE(comparison_table(c).find("note: with compute jitter every iteration draws its own factors; the prediction played "
                                     "iteration 0's, the measured step reported is iteration 1's"),
            std::string::npos)
      << comparison_table(c);
  EXPECT_EQ(comparison_to_json(c).at("jitter_draws_differ"), true);
  EXPECT_NE(comparison_html(c, p, m).find("every iteration draws its own factors"), std::string::npos);
  // A prediction without the jitter played no draws: the variation note says so, this one does not.
  Timeline plain = predicted();
  c = compare_timelines(plain, m);
  EXPECT_FALSE(c.jitter_draws_differ);
  EXPECT_FALSE(c.variation_difference.empty());
  // Reported from iteration 0, the draws are the prediction's.
  m.reported_iteration = 0;
  std::erase_if(m.intervals, [](const OpInterval& iv) { return iv.iteration != 0; });
  m.iterations = 1;
  c = compare_timelines(p, m);
  ASSERT_EQ(c.measured_iteration, 0);
  EXPECT_FALSE(c.jitter_draws_differ);
}

// Timelines that carry no workload (older files): the throughput rows say n/a, JSON null.
TEST(Compare, UnknownThroughputIsNotAnError) {
  Timeline p = predicted(), m = measured();
  p.workload = hand_workload();
  const Comparison c = compare_timelines(p, m);
  EXPECT_FALSE(c.tokens_per_s_per_gpu_error.has_value());
  EXPECT_FALSE(c.mfu_error.has_value());
  EXPECT_NE(comparison_table(c).find("tokens/s per GPU      10,000,000    n/a           n/a"), std::string::npos) << comparison_table(c);
  const nlohmann::json j = comparison_to_json(c);
  EXPECT_TRUE(j.at("measured_tokens_per_s_per_gpu").is_null());
  EXPECT_TRUE(j.at("tokens_per_s_per_gpu_error").is_null());
}

TEST(Compare, DifferentProgramsAreRejected) {
  Timeline m = measured();
  m.set_name(m.ops[2], "fwd u9");
  EXPECT_THROW(compare_timelines(predicted(), m), InputError);
  m = measured();
  m.ops.pop_back();
  EXPECT_THROW(compare_timelines(predicted(), m), InputError);
  // The same names but other sizes (a bf16 run against an fp32 prediction): another Program.
  m = measured();
  m.ops[1].set_bytes(512);
  try {
    compare_timelines(predicted(), m);
    ADD_FAILURE() << "op sizes differ";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("op 1 \"ag u0\" moves 1024 bytes when predicted but 512 when measured"), std::string::npos) << e.what();
  }
  // A run with its buffers divided (exec --scale 4) is not the Program's either.
  m = measured();
  m.scale = 4;
  try {
    compare_timelines(predicted(), m);
    ADD_FAILURE() << "scales differ";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("divided every buffer by 4 (exec --scale)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardline
