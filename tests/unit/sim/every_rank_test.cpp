// Every-rank simulation: each rank its own streams; a collective moves data once all members
// of its group are there. Without variation it must equal the representative rank exactly.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "sim/simulator.h"
#include "sim_test_support.h"

namespace shardline {
namespace {

using simtest::ProgramBuilder;
using simtest::test_scenario;

// compute 100 us, all-gather over the shard group, compute 100 us, reduce-scatter, all-reduce
// over the replicate group: 16 ranks, 8 per shard group.
Program hsdp_program() {
  ProgramBuilder b;
  const int c0 = b.compute(100);
  const int ag = b.collective(OpKind::AllGather, 8 << 20, CommGroup::Shard, 8, {c0});
  const int c1 = b.compute(100, {ag});
  const int rs = b.collective(OpKind::ReduceScatter, 8 << 20, CommGroup::Shard, 8, {c1});
  b.collective(OpKind::AllReduce, 1 << 20, CommGroup::Replicate, 2, {rs});
  return b.program();
}

SimOptions every_rank(RankReport* report = nullptr, const RankVariation* variation = nullptr) {
  SimOptions o;
  o.every_rank = true;
  o.rank_report = report;
  o.variation = variation;
  return o;
}

TEST(EveryRank, WithoutVariationEveryRankRunsTheRepresentativeRanksTimeline) {
  const Scenario s = test_scenario();
  const Program p = hsdp_program();
  const Timeline one = simulate(s, p);
  RankReport report;
  const Timeline all = simulate(s, p, every_rank(&report));
  EXPECT_EQ(all.ranks, 16);
  ASSERT_EQ(all.intervals.size(), 16 * one.intervals.size());
  for (size_t k = 0; k < all.intervals.size(); ++k) {
    const OpInterval& a = all.intervals[k];
    const OpInterval& b = one.intervals[k % one.intervals.size()];
    ASSERT_EQ(a.op, b.op);
    EXPECT_EQ(a.rank, static_cast<int>(k / one.intervals.size()));
    EXPECT_EQ(a.issue_us, b.issue_us);  // exactly: the same arithmetic on every rank
    EXPECT_EQ(a.start_us, b.start_us);
    EXPECT_EQ(a.end_us, b.end_us);
  }
  for (const RankStats& r : report.ranks) {
    EXPECT_EQ(r.step_us, compute_metrics(one).step_time_us);
    EXPECT_EQ(r.collective_wait_us, 0.0);
  }
}

// The same on scheduled Programs of the shipped scenarios (FSDP and HSDP, prefetch, buckets).
TEST(EveryRank, ShippedScenariosGiveTheSameMetricsOnEveryRank) {
  for (const char* name : {"host-tiny-fsdp", "host-tiny-hsdp", "llama3-70b-hsdp-h100x64"}) {
    const Scenario s = load_scenario(std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/" + name + ".json");
    const Program p = schedule(s);
    SimOptions o = every_rank();
    o.timeline_ranks = {0, p.world_size - 1};
    const Timeline all = simulate(s, p, o);
    EXPECT_EQ(metrics_to_json(compute_metrics(all, 0)).dump(), metrics_to_json(compute_metrics(simulate(s, p))).dump()) << name;
    EXPECT_EQ(metrics_to_json(compute_metrics(all, p.world_size - 1)).dump(), metrics_to_json(compute_metrics(all, 0)).dump()) << name;
  }
}

TEST(EveryRank, AStragglerKeepsItsGroupWaitingInsideTheCollective) {
  const Scenario s = test_scenario();
  const Program p = hsdp_program();
  RankVariation v;
  v.compute_factor.assign(16, 1.0);
  v.compute_factor[3] = 2.0;  // rank 3's compute takes 200 us
  RankReport report;
  SimOptions o = every_rank(&report, &v);
  const Timeline t = simulate(s, p, o);
  const auto interval = [&](int rank, int op) {
    for (const OpInterval& iv : t.intervals)
      if (iv.rank == rank && iv.op == op) return iv;
    ADD_FAILURE() << "no interval for rank " << rank << " op " << op;
    return OpInterval{};
  };
  // Rank 0 reaches the all-gather (op 1) at 100 us but data moves when rank 3 arrives at 200 us:
  // both end together, 100 us later than without the straggler.
  const Timeline symmetric = simulate(s, p);
  const double ag_alone_us = symmetric.intervals[1].end_us - symmetric.intervals[1].start_us;
  EXPECT_DOUBLE_EQ(interval(0, 1).start_us, 100.0);
  EXPECT_DOUBLE_EQ(interval(3, 1).start_us, 200.0);
  EXPECT_DOUBLE_EQ(interval(0, 1).end_us, 200.0 + ag_alone_us);
  EXPECT_DOUBLE_EQ(interval(3, 1).end_us, interval(0, 1).end_us);
  // The other shard group (ranks 8..15) is not held up until the all-reduce pairs rank 11 with rank 3.
  EXPECT_DOUBLE_EQ(interval(11, 1).end_us, symmetric.intervals[1].end_us);
  EXPECT_GT(interval(11, 4).end_us, symmetric.intervals[4].end_us);
  EXPECT_DOUBLE_EQ(interval(11, 4).end_us, interval(3, 4).end_us);
  // Waiting: the seven other members waited 100 us at each of the two shard collectives.
  EXPECT_DOUBLE_EQ(report.ranks[0].collective_wait_us, 200.0);
  EXPECT_DOUBLE_EQ(report.ranks[3].collective_wait_us, 0.0);
  EXPECT_GT(report.ranks[11].collective_wait_us, 0.0);  // ranks 8..15 wait at the all-reduce
  EXPECT_DOUBLE_EQ(report.wait_at_op_us[1], 7 * 100.0);
  EXPECT_TRUE(report.critical_path.empty());  // needs every rank's spans
}

// The critical path, walked back from the slowest rank's end, leads to the straggler (rank 3),
// who waited for nobody; every crossing is a collective where the next rank waited for it.
TEST(EveryRank, TheCriticalPathRunsThroughTheStraggler) {
  const Program p = hsdp_program();
  RankVariation v;
  v.compute_factor.assign(16, 1.0);
  v.compute_factor[3] = 2.0;
  v.compute_factor[11] = 0.5;  // rank 11 computes fast and waits for rank 3 at the all-reduce
  RankReport report;
  SimOptions o = every_rank(&report, &v);
  o.choose_timeline_ranks = [](const RankReport&) { return std::vector<int>{0}; };
  simulate(test_scenario(), p, o);
  ASSERT_FALSE(report.critical_path.empty());
  const PathSegment& last = report.critical_path.back();
  EXPECT_EQ(last.held_up_op, -1);
  EXPECT_EQ(last.to_us, report.ranks[static_cast<size_t>(last.rank)].step_us);
  double length = 0;
  for (const PathSegment& seg : report.critical_path) {
    EXPECT_LE(seg.from_us, seg.to_us);
    length += seg.to_us - seg.from_us;
  }
  EXPECT_DOUBLE_EQ(report.critical_path.front().from_us, 0.0);
  EXPECT_DOUBLE_EQ(length, last.to_us);  // the stretches tile [0, slowest step]
  EXPECT_EQ(report.critical_path.front().rank, 3);  // it starts on the straggler, who waited for nobody
  for (size_t k = 0; k + 1 < report.critical_path.size(); ++k) {
    EXPECT_GE(report.critical_path[k].held_up_op, 0);
    EXPECT_GT(report.critical_path[k].held_up_wait_us, 0.0);
    EXPECT_EQ(report.critical_path[k].to_us, report.critical_path[k + 1].from_us);
  }
}

TEST(EveryRank, ASlowLinkSlowsEveryMemberOfItsCollectives) {
  const Scenario s = test_scenario();
  const Program p = hsdp_program();
  RankVariation v;
  v.bandwidth_factor.assign(16, 1.0);
  v.bandwidth_factor[5] = 0.5;
  RankReport report;
  const Timeline t = simulate(s, p, every_rank(&report, &v));
  const Timeline symmetric = simulate(s, p);
  double end0 = 0, end5 = 0;
  for (const OpInterval& iv : t.intervals) {
    if (iv.op != 1) continue;
    if (iv.rank == 0) end0 = iv.end_us;
    if (iv.rank == 5) end5 = iv.end_us;
  }
  EXPECT_EQ(end0, end5);  // a ring finishes when its slowest member does
  EXPECT_GT(end0, symmetric.intervals[1].end_us);
  EXPECT_GT(report.ranks[0].collective_wait_us, 0.0);  // waited for rank 5 inside the phases
}

// A slow link holds its collectives up inside their phases, after everyone arrived: the path
// must run on that rank (an audit found it on rank 0 for the whole step, the slow rank named
// nowhere). Here the step ends with the shard group's reduce-scatter, whose last phase rank 5's
// link holds: the slowest ranks (0..7, tied: rank 0) all waited for it, so the whole path is
// rank 5's, leaving it at that reduce-scatter, where rank 0 waited.
TEST(EveryRank, TheCriticalPathRunsOnTheRankWhoseSlowLinkHeldThePhases) {
  ProgramBuilder b;
  const int c0 = b.compute(100);
  const int ag = b.collective(OpKind::AllGather, 8 << 20, CommGroup::Shard, 8, {c0});
  const int c1 = b.compute(100, {ag});
  const int rs = b.collective(OpKind::ReduceScatter, 8 << 20, CommGroup::Shard, 8, {c1});
  const Program p = b.program();
  RankVariation v;
  v.bandwidth_factor.assign(16, 1.0);
  v.bandwidth_factor[5] = 0.25;
  RankReport report;
  SimOptions o = every_rank(&report, &v);
  o.choose_timeline_ranks = [](const RankReport&) { return std::vector<int>{0}; };
  simulate(test_scenario(), p, o);
  ASSERT_EQ(report.critical_path.size(), 1u);
  const PathSegment& only = report.critical_path.front();
  EXPECT_EQ(only.rank, 5);
  EXPECT_DOUBLE_EQ(only.from_us, 0.0);
  EXPECT_DOUBLE_EQ(only.to_us, report.ranks[0].step_us);  // the slowest step, whole
  EXPECT_EQ(only.held_up_op, rs);
  EXPECT_GT(only.held_up_wait_us, 0.0);
  EXPECT_DOUBLE_EQ(report.ranks[5].collective_wait_us, 0.0);  // it waited for nobody
  EXPECT_GT(report.ranks[0].collective_wait_us, 0.0);
  // Two slow links that finish each phase together (a node's, in effect) are followed too: the
  // path runs on one of them, not on rank 0 that waited for both (an audit's node-wide slow link).
  v.bandwidth_factor[6] = 0.25;
  RankReport two;
  SimOptions o2 = every_rank(&two, &v);
  o2.choose_timeline_ranks = [](const RankReport&) { return std::vector<int>{0}; };
  simulate(test_scenario(), p, o2);
  ASSERT_FALSE(two.critical_path.empty());
  const int on = two.critical_path.back().rank;
  EXPECT_TRUE(on == 5 || on == 6) << on;
  EXPECT_EQ(two.critical_path.back().held_up_op, rs);
  // Without variation nobody holds a phase: the path is the slowest rank's (rank 0's) own.
  RankReport symmetric;
  SimOptions plain = every_rank(&symmetric);
  plain.choose_timeline_ranks = [](const RankReport&) { return std::vector<int>{0}; };
  simulate(test_scenario(), p, plain);
  ASSERT_EQ(symmetric.critical_path.size(), 1u);
  EXPECT_EQ(symmetric.critical_path.front().rank, 0);
  EXPECT_EQ(symmetric.critical_path.front().held_up_op, -1);
}

TEST(EveryRank, ChoosesWhichRanksTheTimelineKeeps) {
  const Program p = hsdp_program();
  SimOptions o = every_rank();
  o.timeline_ranks = {7, 2};
  const Timeline t = simulate(test_scenario(), p, o);
  ASSERT_EQ(t.intervals.size(), 2 * p.ops.size());
  EXPECT_EQ(t.intervals.front().rank, 2);
  EXPECT_EQ(t.intervals.back().rank, 7);
}

std::string error_path(const SimOptions& o) {
  try {
    simulate(test_scenario(), hsdp_program(), o);
  } catch (const InputError& e) {
    return e.where();
  }
  return "";
}

TEST(EveryRank, BadOptionsAreInputErrors) {
  RankVariation v;
  v.compute_factor = {1.0, 2.0};  // 16 ranks
  EXPECT_EQ(error_path(every_rank(nullptr, &v)), "variation");
  v.compute_factor.assign(16, 0.0);
  EXPECT_EQ(error_path(every_rank(nullptr, &v)), "variation");
  v.compute_factor.clear();
  v.bandwidth_factor.assign(16, 1.5);
  EXPECT_EQ(error_path(every_rank(nullptr, &v)), "variation");
  SimOptions one;
  one.variation = &v;
  EXPECT_EQ(error_path(one), "variation");  // variation needs every rank
  SimOptions far = every_rank();
  far.timeline_ranks = {16};
  EXPECT_EQ(error_path(far), "timeline_ranks");
}

}  // namespace
}  // namespace shardline
