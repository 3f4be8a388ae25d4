// simulate() with a calibrated cluster profile (sim/profile_cost_model.h): measured tables,
// shared when concurrent, copy latency + bandwidth, issue overhead and compute slow-down from
// the profile. Hand-computed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/profile.h"
#include "sim/simulator.h"
#include "sim_test_support.h"

namespace shardline {
namespace {

using simtest::ProgramBuilder;
using simtest::test_scenario;

CollectiveTable table(CollectiveKind kind) {
  CollectiveTable t;
  t.kind = kind;
  t.group_size = 8;
  t.sizes_bytes = {1000, 4000};
  t.times_us = {20, 80};
  t.fit = {4.0, 0.019};
  return t;
}

ClusterProfile profile() {
  ClusterProfile p;
  p.backend = "mpi";
  p.collectives = {table(CollectiveKind::AllGather), table(CollectiveKind::ReduceScatter)};
  p.copy_bandwidth_bytes_per_s = 1e12;  // 1e6 bytes per us
  p.copy_latency_us = 1;
  p.issue_overhead_us = 0;
  p.compute_slowdown_during_comm = 1;
  return p;
}

Timeline run(ProgramBuilder& b, const ClusterProfile& p) {
  SimOptions o;
  o.profile = &p;
  return simulate(test_scenario(), b.program(), o);
}

double duration(const Timeline& t, int op) { return t.intervals.at(op).end_us - t.intervals.at(op).start_us; }

TEST(ProfileCostModel, LoneCollectiveTakesTheInterpolatedTableTime) {
  ProgramBuilder b;
  b.collective(OpKind::AllGather, 2000, CommGroup::Shard, 8);  // log-log between (1000, 20) and (4000, 80): 40
  b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);  // a table point: 80
  const Timeline t = run(b, profile());
  EXPECT_NEAR(duration(t, 0), 40, 1e-9);
  EXPECT_NEAR(duration(t, 1), 80, 1e-9);
}

TEST(ProfileCostModel, ConcurrentCollectivesShareAfterTheirLatency) {
  ProgramBuilder b;
  b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  b.collective(OpKind::ReduceScatter, 4000, CommGroup::Shard, 8);
  const Timeline t = run(b, profile());
  // Each: latency 4 (the fitted alpha), then 76 us of transfer alone; two at once: 152 each.
  EXPECT_NEAR(t.intervals[0].end_us, 156, 1e-9);
  EXPECT_NEAR(t.intervals[1].end_us, 156, 1e-9);
}

TEST(ProfileCostModel, CopiesPayLatencyPlusBytesOverBandwidth) {
  ProgramBuilder b;
  b.copy_in(3000000);
  const Timeline t = run(b, profile());
  EXPECT_NEAR(duration(t, 0), 1 + 3, 1e-9);
}

// A profile fitted on a run without copies (calibrate --from-trace on zero-copy) has copy
// bandwidth 0: collectives still simulate; a copy is refused naming --profile.
TEST(ProfileCostModel, AProfileWithoutCopiesRefusesToTimeACopy) {
  ClusterProfile p = profile();
  p.copy_bandwidth_bytes_per_s = 0;
  p.copy_latency_us = 0;
  ProgramBuilder collectives_only;
  collectives_only.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  EXPECT_NEAR(duration(run(collectives_only, p), 0), 80, 1e-9);
  ProgramBuilder with_copy;
  with_copy.copy_in(3000000);
  try {
    run(with_copy, p);
    FAIL() << "a copy was timed without a copy bandwidth";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--profile");
    EXPECT_NE(std::string(e.what()).find("measured no copies"), std::string::npos) << e.what();
  }
  // And the file keeps the 0.
  EXPECT_EQ(profile_from_json(profile_to_json(p)).copy_bandwidth_bytes_per_s, 0.0);
}

TEST(ProfileCostModel, IssueOverheadAndComputeSlowdownComeFromTheProfile) {
  ClusterProfile p = profile();
  p.issue_overhead_us = 3;
  p.compute_slowdown_during_comm = 2;
  ProgramBuilder b;
  b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);  // issued at 0, runs 80 us
  b.compute(10);                                                // issued at 3, all of it beside the collective
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[1].start_us, 3, 1e-9);
  EXPECT_NEAR(duration(t, 1), 20, 1e-9);
}

// On an mpi profile the CPU does copies and MPI transfers alike, by the profile's measured
// factors. The all-gather (one representative rank: it moves at once) runs 0..80 us; the copy
// alone takes 1 + 9 = 10 us. copy_slowdown_during_comm 2: the copy runs at half rate beside it
// and ends at 20; the all-gather is not slowed (comm_slowdown_during_copy 1) and ends at 80.
TEST(ProfileCostModel, MpiCopiesSlowDownWhileACollectiveMoves) {
  ClusterProfile p = profile();
  p.copy_slowdown_during_comm = 2;
  ProgramBuilder b;
  const int copy = b.copy_in(9'000'000);
  const int ag = b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[copy].end_us, 20, 1e-9);
  EXPECT_NEAR(t.intervals[ag].end_us, 80, 1e-9);
}

// comm_slowdown_during_copy 2: the copy keeps its 10 us; the all-gather's transfer (from 4, after
// its latency) runs at half rate until the copy ends at 10 (3 of its 76 us done), then at full
// rate: it ends at 10 + 73 = 83.
TEST(ProfileCostModel, MpiTransfersSlowDownWhileACopyRuns) {
  ClusterProfile p = profile();
  p.comm_slowdown_during_copy = 2;
  ProgramBuilder b;
  const int copy = b.copy_in(9'000'000);
  const int ag = b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[copy].end_us, 10, 1e-9);
  EXPECT_NEAR(t.intervals[ag].end_us, 83, 1e-9);
}

// Two copies of one rank share its copy resource: two 10 us copies on two streams (latency
// included) progress at half rate and both end at 20.
TEST(ProfileCostModel, MpiCopiesShareTheRanksCopyResource) {
  ProgramBuilder b;
  const int in = b.copy_in(9'000'000);
  const int out = b.copy_out(9'000'000);
  const Timeline t = run(b, profile());
  EXPECT_NEAR(t.intervals[in].end_us, t.intervals[out].end_us, 1e-9);
  EXPECT_NEAR(t.intervals[in].end_us, 20, 1e-9);
}

// A GPU (nccl) profile keeps copies at their own fixed duration beside NCCL.
TEST(ProfileCostModel, NcclCopiesDoNotShareTheLink) {
  ClusterProfile p = profile();
  p.backend = "nccl";
  ProgramBuilder b;
  const int copy = b.copy_in(9'000'000);
  const int ag = b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[copy].end_us, 10, 1e-9);
  EXPECT_NEAR(t.intervals[ag].end_us, 80, 1e-9);
}

// The event latency delays only ops that wait for the event, not the next op of the same
// stream; the compute overhead lengthens every compute op.
TEST(ProfileCostModel, EventLatencyAndComputeOverheadComeFromTheProfile) {
  ClusterProfile p = profile();
  p.event_latency_us = 5;
  p.compute_overhead_us = 2;
  ProgramBuilder b;
  const int copy = b.copy_in(3'000'000);        // 1 + 3 = 4 us
  const int waits = b.compute(10, {copy});      // event at 4 + 5
  const int next_copy = b.copy_in(1'000'000);   // same stream: right after the first copy
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[waits].start_us, 9, 1e-9);
  EXPECT_NEAR(duration(t, waits), 12, 1e-9);
  EXPECT_NEAR(t.intervals[next_copy].start_us, 4, 1e-9);
}

// While compute runs, transfers progress 1/comm_slowdown as fast. The all-gather's latency
// (4 us) is not slowed; its 76 us of transfer runs at half rate from 4 to 40 (18 us of it done),
// and the remaining 58 at full rate: it ends at 98.
TEST(ProfileCostModel, CommSlowdownDuringComputeComesFromTheProfile) {
  ClusterProfile p = profile();
  p.comm_slowdown_during_compute = 2;
  ProgramBuilder b;
  const int ag = b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 8);
  const int comp = b.compute(40);
  const Timeline t = run(b, p);
  EXPECT_NEAR(t.intervals[comp].end_us, 40, 1e-9);
  EXPECT_NEAR(t.intervals[ag].end_us, 98, 1e-9);
}

TEST(ProfileCostModel, MissingGroupSizeNamesTheProfile) {
  ProgramBuilder b(4, 1);
  b.collective(OpKind::AllGather, 4000, CommGroup::Shard, 4);
  try {
    run(b, profile());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--profile");
  }
}

}  // namespace
}  // namespace shardline
