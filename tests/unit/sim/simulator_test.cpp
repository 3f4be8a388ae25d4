// simulate() on hand-built Programs: stream and event semantics, host issue, network sharing,
// the ring cost formulas, hierarchical collectives, compute slow-down, memory, determinism.
#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/collective.h"
#include "core/metrics.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "core/error.h"
#include "sim_test_support.h"

namespace shardline {
namespace {

using simtest::ProgramBuilder;
using simtest::test_scenario;

constexpr double kIntraBw = 100e9, kIntraAlpha = 2.0, kInterBw = 25e9, kInterAlpha = 10.0;

const OpInterval& at(const Timeline& t, int op) {
  EXPECT_EQ(t.intervals.at(op).op, op);
  return t.intervals.at(op);
}

TEST(Simulator, OutputDescribesThePrediction) {
  ProgramBuilder b;
  b.compute(10);
  b.compute(5);
  const Scenario s = test_scenario();
  const Timeline t = simulate(s, b.program());
  EXPECT_EQ(t.source, "predicted");
  EXPECT_EQ(t.backend, "sim");
  EXPECT_EQ(t.scenario, "sim-test");
  EXPECT_EQ(t.ranks, 1);
  EXPECT_EQ(t.iterations, 1);
  EXPECT_EQ(t.memory_capacity_bytes, s.cluster.gpu.memory_bytes);
  EXPECT_DOUBLE_EQ(t.memory_margin, 0.1);
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.name(t.ops[1]), "compute 1");
  ASSERT_EQ(t.intervals.size(), 2u);
  for (const OpInterval& iv : t.intervals) {
    EXPECT_EQ(iv.rank, 0);
    EXPECT_EQ(iv.iteration, 0);
  }
}

TEST(Simulator, StreamRunsItsOpsFifoInProgramOrder) {
  ProgramBuilder b;
  const int a = b.compute(10);
  const int c = b.copy_out(5'000'000);  // 5 us, also on the compute stream
  const int d = b.compute(20);
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, a).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, a).end_us, 10);
  EXPECT_DOUBLE_EQ(at(t, c).start_us, 10);
  EXPECT_DOUBLE_EQ(at(t, c).end_us, 15);
  EXPECT_DOUBLE_EQ(at(t, d).start_us, 15);
  EXPECT_DOUBLE_EQ(at(t, d).end_us, 35);
}

TEST(Simulator, StreamsRunConcurrentlyWithoutDeps) {
  ProgramBuilder b;
  const int a = b.compute(10);
  const int c = b.copy_in(3'000'000);  // copy-in stream, 3 us
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, a).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, c).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, c).end_us, 3);
}

TEST(Simulator, CrossStreamEventDependency) {
  ProgramBuilder b;
  const int copy = b.copy_in(7'000'000);  // 7 us on the copy-in stream
  const int comp = b.compute(4, {copy});  // compute stream waits for its event
  const int free_running = b.compute(1, {}, StreamId::AllReduce);  // no deps: starts at once
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, comp).start_us, 7);
  EXPECT_DOUBLE_EQ(at(t, comp).end_us, 11);
  EXPECT_DOUBLE_EQ(at(t, free_running).start_us, 0);
}

TEST(Simulator, DependencyOnALaterStreamOpBlocksTheWholeStream) {
  // Stream FIFO + events: the compute stream's second op waits for a copy; the third op,
  // ready by itself, may not overtake it.
  ProgramBuilder b;
  const int copy = b.copy_in(20'000'000);  // 20 us
  const int first = b.compute(1);
  const int waits = b.compute(2, {copy});
  const int behind = b.compute(3);
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, first).end_us, 1);
  EXPECT_DOUBLE_EQ(at(t, waits).start_us, 20);
  EXPECT_DOUBLE_EQ(at(t, behind).start_us, 22);
  EXPECT_DOUBLE_EQ(at(t, behind).end_us, 25);
}

TEST(Simulator, HostPaysLaunchOverheadPerOpAndMarkersAreFree) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 3.0;
  ProgramBuilder b;
  std::vector<int> launched;
  for (int k = 0; k < 6; ++k) {
    launched.push_back(b.compute(1));
    b.alloc(16, StreamId::Compute);  // a marker between launches
  }
  const Timeline t = simulate(s, b.program());
  for (int k = 0; k < 6; ++k) {
    const OpInterval& iv = at(t, launched[k]);
    EXPECT_DOUBLE_EQ(iv.issue_us, 3.0 * k) << "launch " << k;
    EXPECT_DOUBLE_EQ(iv.start_us, 3.0 * k) << "the GPU is idle: starts when issued";
    EXPECT_DOUBLE_EQ(iv.end_us, 3.0 * k + 1);
    // The marker right after it costs the host nothing: issued with the next launch slot.
    EXPECT_DOUBLE_EQ(at(t, launched[k] + 1).issue_us, 3.0 * (k + 1));
  }
}

TEST(Simulator, HostRunsAheadOfABusyGpu) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 2.0;
  ProgramBuilder b;
  for (int k = 0; k < 4; ++k) b.compute(10);
  const Timeline t = simulate(s, b.program());
  for (int k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(at(t, k).issue_us, 2.0 * k);
    EXPECT_DOUBLE_EQ(at(t, k).start_us, 10.0 * k);  // GPU-bound
  }
}

// cluster.host_launch: the host pays it per launch an op makes (Program::host_launches), and an
// op whose GPU work is shorter than its launches ends when the host has made the last one.
TEST(Simulator, HostPaysEachLaunchAndAnOpEndsNoEarlierThanItsLastLaunch) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 1.0;
  s.cluster.host_launch_us = 10.0;
  ProgramBuilder b;
  const int many = b.compute(5);       // 4 launches: the host takes 1 + 40 us, the GPU 5
  const int marker = b.alloc(16, StreamId::Compute);
  const int long_op = b.compute(100);  // 1 launch
  const int copy = b.copy_out(1);      // 3 launches, a 1-byte copy
  b.program().host_launches[static_cast<size_t>(many)] = 4;
  b.program().host_launches[static_cast<size_t>(copy)] = 3;
  EXPECT_EQ(b.program().host_launches[static_cast<size_t>(marker)], 0u) << "markers launch nothing";
  EXPECT_EQ(b.program().host_launches[static_cast<size_t>(long_op)], 1u) << "one launch unless counted";
  const Timeline t = simulate(s, b.program());
  EXPECT_DOUBLE_EQ(at(t, many).start_us, 0.0);
  EXPECT_DOUBLE_EQ(at(t, many).end_us, 40.0) << "its last launch is made 4 x 10 us after its issue";
  EXPECT_DOUBLE_EQ(at(t, marker).issue_us, 41.0);
  EXPECT_DOUBLE_EQ(at(t, long_op).issue_us, 41.0);
  EXPECT_DOUBLE_EQ(at(t, long_op).end_us, 141.0) << "GPU-bound: its work sets its end";
  EXPECT_DOUBLE_EQ(at(t, copy).issue_us, 52.0);
  EXPECT_DOUBLE_EQ(at(t, copy).start_us, 141.0);
  EXPECT_NEAR(at(t, copy).end_us, 141.0, 1e-3) << "its launches (52 + 30 us) were made long before";
  // A copy on an idle stream whose launches take longer than the copy ends with its last launch.
  ProgramBuilder c;
  const int lone_copy = c.copy_in(1000);  // 1 ns of copying
  c.program().host_launches[static_cast<size_t>(lone_copy)] = 5;
  const Timeline copy_held = simulate(s, c.program());
  EXPECT_DOUBLE_EQ(at(copy_held, lone_copy).start_us, 0.0);
  EXPECT_DOUBLE_EQ(at(copy_held, lone_copy).end_us, 50.0);

  // Without the host term the same Program is today's: one launch overhead per op.
  s.cluster.host_launch_us = 0.0;
  const Timeline plain = simulate(s, b.program());
  EXPECT_DOUBLE_EQ(at(plain, many).end_us, 5.0);
  EXPECT_DOUBLE_EQ(at(plain, long_op).issue_us, 1.0);
}

TEST(Simulator, AHostBoundStepIsTheHostsIssueTime) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 0.0;
  s.cluster.host_launch_us = 50.0;
  ProgramBuilder b;
  for (int k = 0; k < 10; ++k) {
    const int op = b.compute(20);  // 20 us of GPU work in 3 launches: 150 us of host time
    b.program().host_launches[static_cast<size_t>(op)] = 3;
  }
  const Timeline t = simulate(s, b.program());
  EXPECT_DOUBLE_EQ(compute_metrics(t).step_time_us, 10 * 150.0);
  EXPECT_DOUBLE_EQ(compute_metrics(t).host_issue_us, 9 * 150.0) << "the last op is issued 150 us before the end";
  // The launches the host was charged for, with and without a kept Timeline.
  EXPECT_EQ(compute_metrics(t).host_launches, 30);
  EXPECT_EQ(simulate_metrics(s, b.program()).host_launches, 30);
  s.cluster.host_launch_us = 1.0;  // GPU-bound again
  EXPECT_DOUBLE_EQ(compute_metrics(simulate(s, b.program())).step_time_us, 10 * 20.0);
}

class LoneCollective : public ::testing::TestWithParam<OpKind> {};

TEST_P(LoneCollective, ReproducesRingTimeOnTheIntraNodeLink) {
  const OpKind kind = GetParam();
  const int64_t S = 256 << 20;
  ProgramBuilder b;
  const int op = b.collective(kind, S, CommGroup::Shard, 8);
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, op).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, op).end_us, ring_time_us(collective_kind(kind), S, 8, kIntraAlpha, kIntraBw));
}

TEST_P(LoneCollective, ShardGroupSpanningNodesUsesTheInterNodeLink) {
  const OpKind kind = GetParam();
  const int64_t S = 256 << 20;
  ProgramBuilder b(16, 1);
  const int op = b.collective(kind, S, CommGroup::Shard, 16);
  const Timeline t = simulate(test_scenario(), b.program());
  // The bytes over the inter-node link, the latency of NCCL's ring through all 16 ranks on 2 nodes:
  // 14 intra-node hops and 1 across for an all-gather or reduce-scatter, 26 and 4 for an all-reduce.
  const bool ar = kind == OpKind::AllReduce;
  EXPECT_DOUBLE_EQ(at(t, op).end_us, ring_time_us(collective_kind(kind), S, 16, 0.0, kInterBw) +
                                         (ar ? 26 : 14) * kIntraAlpha + (ar ? 4 : 1) * kInterAlpha);
}

TEST_P(LoneCollective, HierarchicalIsAnIntraPhaseAndAnInterPhase) {
  const OpKind kind = GetParam();
  const CollectiveKind ck = collective_kind(kind);
  const int64_t S = 256 << 20;  // divisible by 8: S/8 exact
  Scenario s = test_scenario();
  s.cluster.hierarchical_collectives = true;
  ProgramBuilder b(16, 1);
  const int op = b.collective(kind, S, CommGroup::Shard, 16);
  const Timeline t = simulate(s, b.program());
  // Each intra-node phase pays NCCL's ring latency through all 16 ranks: 16 - 2 intra-node hops
  // where a ring inside one node of 8 has 7 (all-reduce: 16 - 2 - 1 per half, and 2 x 2
  // inter-node hops where a ring over 2 nodes has 2 x 1).
  const double extra_intra_hops_us = (14 - 7) * kIntraAlpha;
  double expected = 0;
  switch (ck) {
    case CollectiveKind::ReduceScatter:
      expected = ring_time_us(ck, S, 8, kIntraAlpha, kIntraBw) + extra_intra_hops_us +
                 ring_time_us(ck, S / 8, 2, kInterAlpha, kInterBw);
      break;
    case CollectiveKind::AllGather:
      expected = ring_time_us(ck, S / 8, 2, kInterAlpha, kInterBw) + ring_time_us(ck, S, 8, kIntraAlpha, kIntraBw) +
                 extra_intra_hops_us;
      break;
    case CollectiveKind::AllReduce:
      expected = ring_time_us(CollectiveKind::ReduceScatter, S, 8, kIntraAlpha, kIntraBw) +
                 ring_time_us(CollectiveKind::AllReduce, S / 8, 2, kInterAlpha, kInterBw) +
                 ring_time_us(CollectiveKind::AllGather, S, 8, kIntraAlpha, kIntraBw) + 2 * (13 - 7) * kIntraAlpha +
                 (4 - 2) * kInterAlpha;
      break;
  }
  EXPECT_DOUBLE_EQ(at(t, op).end_us, expected);
  // And it beats even the flat ring's bytes alone over the slow link (every byte over the NIC, no latency).
  EXPECT_LT(expected, ring_time_us(ck, S, 16, 0.0, kInterBw));
}

INSTANTIATE_TEST_SUITE_P(Kinds, LoneCollective, ::testing::Values(OpKind::AllGather, OpKind::ReduceScatter, OpKind::AllReduce),
                         [](const auto& info) { return std::string(op_kind_name(info.param)); });

TEST(Simulator, ReplicateGroupPlacementPicksTheLink) {
  const int64_t S = 64 << 20;
  {  // shard 8, replicate 2: replicas 0 and 8 sit on different nodes.
    ProgramBuilder b(8, 2);
    const int op = b.collective(OpKind::AllReduce, S, CommGroup::Replicate, 2);
    const Timeline t = simulate(test_scenario(), b.program());
    EXPECT_DOUBLE_EQ(at(t, op).end_us, ring_time_us(CollectiveKind::AllReduce, S, 2, kInterAlpha, kInterBw));
  }
  {  // shard 4, replicate 2: replicas 0 and 4 share node 0.
    ProgramBuilder b(4, 2);
    const int op = b.collective(OpKind::AllReduce, S, CommGroup::Replicate, 2);
    const Timeline t = simulate(test_scenario(), b.program());
    EXPECT_DOUBLE_EQ(at(t, op).end_us, ring_time_us(CollectiveKind::AllReduce, S, 2, kIntraAlpha, kIntraBw));
  }
  {  // a reshard group of 8 inside a shard group of 16: one node.
    ProgramBuilder b(16, 1);
    const int op = b.collective(OpKind::AllGather, S, CommGroup::Reshard, 8);
    const Timeline t = simulate(test_scenario(), b.program());
    EXPECT_DOUBLE_EQ(at(t, op).end_us, ring_time_us(CollectiveKind::AllGather, S, 8, kIntraAlpha, kIntraBw));
  }
}

TEST(Simulator, TwoEqualConcurrentCollectivesShareTheLinkEqually) {
  const int64_t S = 128 << 20;
  ProgramBuilder b;
  const int ag = b.collective(OpKind::AllGather, S, CommGroup::Shard, 8);
  const int rs = b.collective(OpKind::ReduceScatter, S, CommGroup::Shard, 8);
  const Timeline t = simulate(test_scenario(), b.program());
  // Both pay 7 alpha, then move 7/8 S each at B/2.
  const double latency = 7 * kIntraAlpha;
  const double shared = 7.0 / 8.0 * S / (kIntraBw / 2) * 1e6;
  EXPECT_DOUBLE_EQ(at(t, ag).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, rs).start_us, 0);
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, latency + shared);
  EXPECT_DOUBLE_EQ(at(t, rs).end_us, latency + shared);
  // Each takes longer than alone.
  EXPECT_GT(at(t, ag).end_us, ring_time_us(CollectiveKind::AllGather, S, 8, kIntraAlpha, kIntraBw));
}

TEST(Simulator, StaggeredCollectivesAreReRatedWhenOneStartsAndEnds) {
  // AG starts at 0; RS is held back by a 100 us copy. Hand computation with B = 100 GB/s
  // (1e5 bytes/us), both of S = 7e7 bytes... over 2 ranks: each moves S/2 = 3.5e7 bytes.
  const int64_t S = 70'000'000;
  Scenario s = test_scenario();
  s.cluster.intra_node.latency_us = 0;
  ProgramBuilder b;
  const int ag = b.collective(OpKind::AllGather, S, CommGroup::Shard, 2);
  const int copy = b.copy_in(100'000'000);  // 100 us
  const int rs = b.collective(OpKind::ReduceScatter, S, CommGroup::Shard, 2, {copy});
  const Timeline t = simulate(s, b.program());
  // AG alone 0..100: 1e7 bytes; left 2.5e7. Shared at 5e4 B/us: AG ends at 100 + 500 = 600,
  // RS has moved 2.5e7 by then, 1e7 left at full rate: ends at 700.
  EXPECT_DOUBLE_EQ(at(t, rs).start_us, 100);
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, 600);
  EXPECT_DOUBLE_EQ(at(t, rs).end_us, 700);
}

TEST(Simulator, CollectivesOnDifferentLinkClassesDoNotSlowEachOther) {
  const int64_t S = 64 << 20;
  ProgramBuilder b(8, 2);
  const int ag = b.collective(OpKind::AllGather, S, CommGroup::Shard, 8);        // intra
  const int ar = b.collective(OpKind::AllReduce, S, CommGroup::Replicate, 2);    // inter
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, ring_time_us(CollectiveKind::AllGather, S, 8, kIntraAlpha, kIntraBw));
  EXPECT_DOUBLE_EQ(at(t, ar).end_us, ring_time_us(CollectiveKind::AllReduce, S, 2, kInterAlpha, kInterBw));
}

TEST(Simulator, SingleRankGroupIsFreeButStillAnInterval) {
  ProgramBuilder b(1, 1);
  const int c = b.compute(5);
  const int ag = b.collective(OpKind::AllGather, 1 << 20, CommGroup::Shard, 1, {c});
  const Timeline t = simulate(test_scenario(), b.program());
  EXPECT_DOUBLE_EQ(at(t, ag).start_us, 5);
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, 5);
}

TEST(Simulator, ComputeSlowsDownWhileACollectiveIsInFlight) {
  Scenario s = test_scenario();
  s.cluster.compute_slowdown_during_comm = 2.0;
  const int64_t S = 8'000'000;  // AG over 2 ranks: 4e6 bytes at 1e5 B/us = 40 us + 1 alpha
  ProgramBuilder b;
  const int comp = b.compute(100);
  const int copy = b.copy_in(10'000'000);  // 10 us
  const int ag = b.collective(OpKind::AllGather, S, CommGroup::Shard, 2, {copy});
  const Timeline t = simulate(s, b.program());
  const double T = ring_time_us(CollectiveKind::AllGather, S, 2, kIntraAlpha, kIntraBw);  // 42 us
  ASSERT_DOUBLE_EQ(T, 42.0);
  EXPECT_DOUBLE_EQ(at(t, ag).start_us, 10);
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, 10 + T);  // the collective itself is not slowed
  // Work done: 10 us alone, then T/2 = 21 during the AG (half speed), then 69 alone.
  EXPECT_DOUBLE_EQ(at(t, comp).end_us, 10 + T + (100 - 10 - T / 2));  // 121
}

TEST(Simulator, ComputeStartingDuringCommIsSlowedUntilCommEnds) {
  Scenario s = test_scenario();
  s.cluster.compute_slowdown_during_comm = 1.5;
  s.cluster.intra_node.latency_us = 0;
  ProgramBuilder b;
  const int ag = b.collective(OpKind::AllGather, 6'000'000, CommGroup::Shard, 2);  // 3e6 B: 30 us
  const int comp = b.compute(40);
  const Timeline t = simulate(s, b.program());
  EXPECT_DOUBLE_EQ(at(t, ag).end_us, 30);
  // 0..30 at 1/1.5: 20 us of work; 20 left alone: ends at 50.
  EXPECT_DOUBLE_EQ(at(t, comp).end_us, 50);
}

TEST(Simulator, MemoryChangesWhenTheHostIssuesAllocAndFreeNotWhenTheirStreamsReachThem) {
  // PyTorch's caching allocator counts a tensor when the host allocates it and releases it when
  // the host frees it, however far behind the streams run.
  ProgramBuilder b;
  b.program().static_memory_bytes = 1000;
  const int a0 = b.alloc(400, StreamId::Compute);
  const int comp = b.compute(10);
  const int copy = b.copy_in(5'000'000);  // 5 us
  const int a1 = b.alloc(300, StreamId::CopyIn);  // its stream reaches it after the copy
  const int f0 = b.free(400, StreamId::Compute);  // after the compute
  const int f1 = b.free(300, StreamId::CopyIn, {f0});
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 1.0;  // per launched op; markers cost the host nothing
  const Timeline t = simulate(s, b.program());
  (void)comp;
  EXPECT_DOUBLE_EQ(at(t, copy).issue_us, 1);
  EXPECT_DOUBLE_EQ(at(t, a1).issue_us, 2);
  EXPECT_DOUBLE_EQ(at(t, a1).start_us, 6);  // behind the 5 us copy
  EXPECT_DOUBLE_EQ(at(t, f0).issue_us, 2);
  EXPECT_DOUBLE_EQ(at(t, f0).start_us, 10);  // behind the 10 us compute
  EXPECT_DOUBLE_EQ(at(t, f1).start_us, 10);  // its dependency, the free behind the compute
  std::vector<std::pair<double, int64_t>> samples;
  int64_t peak = 0;
  for (const MemorySample& m : t.memory) {
    samples.emplace_back(m.time_us, m.bytes);
    peak = std::max(peak, m.bytes);
  }
  const std::vector<std::pair<double, int64_t>> expected{{0, 1000}, {0, 1400}, {2, 1700}, {2, 1300}, {2, 1000}};
  EXPECT_EQ(samples, expected);
  EXPECT_EQ(peak, 1700);
  EXPECT_DOUBLE_EQ(at(t, a0).issue_us, 0);
  // For drawing on the step's clock (the host issued everything by 2 us): the same changes as the
  // streams reach them. The peak the metrics state stays the host order's.
  std::vector<std::pair<double, int64_t>> drawn;
  for (const MemorySample& m : t.memory_by_stream) drawn.emplace_back(m.time_us, m.bytes);
  const std::vector<std::pair<double, int64_t>> by_stream{{0, 1000}, {0, 1400}, {6, 1700}, {10, 1300}, {10, 1000}};
  EXPECT_EQ(drawn, by_stream);
  EXPECT_EQ(compute_metrics(t).peak_memory_bytes, 1700);
  // A Program whose memory follows the streams (FSDP1) has one series, drawn as it is.
  b.program().memory_follows_streams = true;
  EXPECT_TRUE(simulate(s, b.program()).memory_by_stream.empty());
}

// The caching allocator keeps a freed block for the stream that allocated it: the pools' peaks,
// summed, are what it reserves with room to spare. Here the copy-in stream's 300 bytes, once
// freed, cannot serve the compute stream's later 350.
TEST(Simulator, EachAllocatorPoolKeepsItsOwnPeak) {
  ProgramBuilder b;
  b.program().static_memory_bytes = 1000;  // the first stream's pool
  b.alloc(400, StreamId::Compute);
  b.free(400, StreamId::Compute);
  b.alloc(300, StreamId::CopyIn);
  b.free(300, StreamId::Compute, {}, StreamId::CopyIn);  // released on another stream, into its own pool
  b.alloc(350, StreamId::Compute);
  b.free(350, StreamId::Compute);
  const Timeline t = simulate(test_scenario(), b.program());
  ASSERT_TRUE(t.allocator_pool_peaks_bytes.has_value());
  EXPECT_EQ(*t.allocator_pool_peaks_bytes, 1400 + 300);
  const Metrics m = compute_metrics(t);
  EXPECT_EQ(m.peak_memory_bytes, 1400);
  EXPECT_EQ(m.allocator_pool_peaks_bytes, 1700);
}

// What the peak holds, by part: the static bytes split into the parameters' shards (master
// dtype) and the optimizer's states, and each kind of allocation live at the moment of the peak
// (not at its own highest: the all-gather buffer here is freed before the peak).
TEST(Simulator, ThePeakIsSplitIntoWhatItHolds) {
  ProgramBuilder b;
  b.program().static_memory_bytes = 1000;
  b.program().master_dtype = DType::fp32;
  b.program().params.push_back(ParamInfo{"w", 0, 200, 100});  // 100 elements per rank: 400 B in fp32
  const auto kind = [&](MemoryKind k) { b.last().memory = k; };
  b.alloc(400, StreamId::Compute), kind(MemoryKind::Activations);
  b.alloc(300, StreamId::Compute), kind(MemoryKind::AllGatherBuffer);   // 1700
  b.free(300, StreamId::Compute), kind(MemoryKind::AllGatherBuffer);    // 1400
  b.alloc(200, StreamId::Compute), kind(MemoryKind::UnshardedParams);   // 1600
  b.alloc(500, StreamId::Compute), kind(MemoryKind::Activations);       // 2100: the peak
  b.free(900, StreamId::Compute), kind(MemoryKind::Activations);
  b.free(200, StreamId::Compute), kind(MemoryKind::UnshardedParams);
  const Timeline t = simulate(test_scenario(), b.program());
  ASSERT_TRUE(t.memory_at_peak.has_value());
  const MemoryAtPeak& peak = *t.memory_at_peak;
  EXPECT_EQ(peak.sharded_params_bytes, 400);
  EXPECT_EQ(peak.optimizer_state_bytes, 600);
  EXPECT_EQ(peak.bytes_by_kind[static_cast<size_t>(MemoryKind::Activations)], 900);
  EXPECT_EQ(peak.bytes_by_kind[static_cast<size_t>(MemoryKind::UnshardedParams)], 200);
  EXPECT_EQ(peak.bytes_by_kind[static_cast<size_t>(MemoryKind::AllGatherBuffer)], 0);
  const Metrics m = compute_metrics(t);
  EXPECT_EQ(m.peak_memory_bytes, 2100);
  ASSERT_TRUE(m.memory_at_peak.has_value());
  EXPECT_EQ(m.memory_at_peak->total_bytes(), m.peak_memory_bytes);
  // The fast path (no timeline kept) states the same.
  EXPECT_EQ(simulate_metrics(test_scenario(), b.program()).memory_at_peak, m.memory_at_peak);
  // Where the static bytes alone are the peak (every allocation smaller than them and freed in
  // between), no allocation is part of it.
  ProgramBuilder small;
  small.program().static_memory_bytes = 1000;
  small.alloc(10, StreamId::Compute), small.last().memory = MemoryKind::Activations;
  small.free(10, StreamId::Compute), small.last().memory = MemoryKind::Activations;
  const MemoryAtPeak at_static = *simulate(test_scenario(), small.program()).memory_at_peak;
  EXPECT_EQ(at_static.total_bytes(), 1010);  // the alloc is the peak: 1000 + 10
  ProgramBuilder none;
  none.program().static_memory_bytes = 1000;
  const MemoryAtPeak only_static = *simulate(test_scenario(), none.program()).memory_at_peak;
  EXPECT_EQ(only_static.total_bytes(), 1000);
  for (const int64_t bytes : only_static.bytes_by_kind) EXPECT_EQ(bytes, 0);
}

TEST(SimulatorDeathTest, FreeingAnotherKindThanWasAllocatedAbortsLoudly) {
  ProgramBuilder b;
  b.alloc(100, StreamId::Compute);
  b.last().memory = MemoryKind::Activations;
  b.alloc(100, StreamId::Compute);
  b.last().memory = MemoryKind::AllGatherBuffer;
  b.free(100, StreamId::Compute);
  b.last().memory = MemoryKind::UnshardedParams;
  const Scenario s = test_scenario();
  EXPECT_DEATH(simulate(s, b.program()), "a Free of another kind than its Alloc");
}

TEST(SimulatorDeathTest, FreeingMoreThanIsLiveAbortsLoudly) {
  ProgramBuilder b;
  b.alloc(100, StreamId::Compute);
  b.free(200, StreamId::Compute);
  const Scenario s = test_scenario();
  EXPECT_DEATH(simulate(s, b.program()), "live bytes went negative");
}

// A busy, irregular program: every stream, deps across streams, intra and inter traffic.
Program busy_program(int ops = 400) {
  ProgramBuilder b(8, 2);
  uint32_t x = 12345;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  std::vector<int> recent;
  for (int i = 0; i < ops; ++i) {
    std::vector<int> deps;
    if (!recent.empty() && next() % 2) deps.push_back(recent[next() % recent.size()]);
    int id = -1;
    switch (next() % 7) {
      case 0: id = b.compute(1 + next() % 50, deps); break;
      case 1: id = b.copy_in(int64_t(1 + next() % 20) * 1'000'000, deps); break;
      case 2: id = b.collective(OpKind::AllGather, int64_t(1 + next() % 64) << 20, CommGroup::Shard, 8, deps); break;
      case 3: id = b.collective(OpKind::ReduceScatter, int64_t(1 + next() % 64) << 20, CommGroup::Shard, 8, deps); break;
      case 4: id = b.collective(OpKind::AllReduce, int64_t(1 + next() % 16) << 20, CommGroup::Replicate, 2, deps); break;
      case 5: id = b.copy_out(int64_t(1 + next() % 20) * 1'000'000, deps); break;
      case 6: id = b.alloc(1 << 20, StreamId::Compute, deps); break;
    }
    recent.push_back(id);
    if (recent.size() > 8) recent.erase(recent.begin());
  }
  return b.program();
}

// A Program handed over (a sweep point) gives the same Timeline as one that is kept: its ops move
// into the Timeline instead of being copied, nothing else changes.
TEST(Simulator, AProgramHandedOverGivesTheSameTimeline) {
  Scenario s = test_scenario();
  s.cluster.compute_slowdown_during_comm = 1.3;
  const Program kept = busy_program();
  const std::string expected = timeline_to_json(simulate(s, kept)).dump();
  Program handed_over = busy_program();
  const Timeline t = simulate(s, std::move(handed_over));
  EXPECT_EQ(timeline_to_json(t).dump(), expected);
  EXPECT_EQ(t.ops.size(), kept.ops.size());
}

// simulate_metrics keeps no Timeline: its metrics must be those of the Timeline simulate gives,
// bit for bit (the busy program has gaps, overlaps and touching ops on every stream), and its
// header the same scenario fields.
TEST(Simulator, MetricsWithoutATimelineEqualTheTimelinesMetrics) {
  for (double slowdown : {1.0, 1.3}) {
    Scenario s = test_scenario();
    s.cluster.launch_overhead_us = 3.0;
    s.cluster.compute_slowdown_during_comm = slowdown;
    const Program p = busy_program();
    const Timeline t = simulate(s, p);
    const Metrics expected = compute_metrics(t);
    Timeline header;
    const Metrics m = simulate_metrics(s, p, {}, &header);
    EXPECT_EQ(metrics_to_json(m).dump(), metrics_to_json(expected).dump()) << "slow-down " << slowdown;
    EXPECT_TRUE(m.memory_recorded);
    EXPECT_GT(m.peak_memory_bytes, 0);
    EXPECT_TRUE(header.intervals.empty());
    EXPECT_TRUE(header.memory.empty());
    EXPECT_TRUE(header.ops.empty());
    EXPECT_EQ(header.source, t.source);
    EXPECT_EQ(header.memory_capacity_bytes, t.memory_capacity_bytes);
    EXPECT_EQ(header.memory_margin, t.memory_margin);
  }
}

// The same on Programs of tens of thousands of ops, where the metrics settle the spans of ended
// ops as the simulation runs (StepAccumulator::settle) many times over: a busy one, whose long
// ops on five streams overlap whenever it settles, and a scheduled one.
TEST(Simulator, MetricsWithoutATimelineEqualTheTimelinesMetricsOnLargePrograms) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 3.0;
  const Program busy = busy_program(40000);
  EXPECT_EQ(metrics_to_json(simulate_metrics(s, busy)).dump(), metrics_to_json(compute_metrics(simulate(s, busy))).dump());
  Scenario hsdp = load_scenario(std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/llama3-70b-hsdp-h100x64.json");
  hsdp.policy.bucket_bytes = int64_t{64} << 20;
  const Program p = schedule(hsdp);
  ASSERT_GT(p.ops.size(), 20000u);
  EXPECT_EQ(metrics_to_json(simulate_metrics(hsdp, p)).dump(), metrics_to_json(compute_metrics(simulate(hsdp, p))).dump());
}

// One long all-gather runs while thousands of reduce-scatters, with compute between them, start
// and end: no span may be summed before the all-gather's, which started first, or comm busy
// would lose the gaps between the reduce-scatters that the all-gather covers.
TEST(Simulator, MetricsWithoutATimelineWaitForAnOpStillRunning) {
  const Scenario s = test_scenario();
  ProgramBuilder b(8, 2);
  b.collective(OpKind::AllGather, int64_t{1} << 40, CommGroup::Shard, 8);
  int prev = -1;
  for (int i = 0; i < 6000; ++i) {
    const int c = b.compute(10, prev >= 0 ? std::vector<int>{prev} : std::vector<int>{});
    prev = b.collective(OpKind::ReduceScatter, 1 << 16, CommGroup::Shard, 8, {c});
  }
  const Program p = b.program();
  const Timeline t = simulate(s, p);
  ASSERT_GT(t.intervals[0].end_us, t.intervals.back().end_us);  // the all-gather ends last
  const Metrics m = simulate_metrics(s, p);
  EXPECT_EQ(metrics_to_json(m).dump(), metrics_to_json(compute_metrics(t)).dump());
  EXPECT_DOUBLE_EQ(m.comm_busy_us, t.intervals[0].end_us - t.intervals[0].start_us);
}

TEST(Simulator, SameInputsGiveIdenticalTimelines) {
  Scenario s = test_scenario();
  s.cluster.launch_overhead_us = 4.0;
  s.cluster.compute_slowdown_during_comm = 1.3;
  const Program p = busy_program();
  const std::string first = timeline_to_json(simulate(s, p)).dump();
  const std::string second = timeline_to_json(simulate(s, p)).dump();
  EXPECT_EQ(first, second);
  const Timeline t = simulate(s, p);
  // Sanity on the busy run: every op ran, after it was issued, after its deps.
  for (const Op& op : p.ops) {
    const OpInterval& iv = t.intervals[p.id_of(op)];
    EXPECT_GE(iv.start_us, iv.issue_us);
    EXPECT_GE(iv.end_us, iv.start_us);
    for (int d : p.deps(op)) EXPECT_GE(iv.start_us, t.intervals[d].end_us);
  }
}

TEST(Simulator, DependencyOnALaterOpIsAnInputError) {
  ProgramBuilder b;
  b.compute(1);
  b.compute(1);
  Program& p = b.program();
  p.dep_ids.push_back(1);  // op 0 depends on op 1: op 0's deps run up to op 1's deps_begin
  p.ops[0].deps_begin = static_cast<uint32_t>(p.dep_ids.size() - 1);
  p.ops[1].deps_begin = static_cast<uint32_t>(p.dep_ids.size());
  try {
    simulate(test_scenario(), b.program());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "ops[0].deps");
  }
}

}  // namespace
}  // namespace shardline
