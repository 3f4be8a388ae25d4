#include "sim/network.h"

#include <gtest/gtest.h>

#include "core/collective.h"
#include "core/error.h"
#include "sim/analytical_cost_model.h"
#include "sim_test_support.h"

namespace shardline::sim {
namespace {

TEST(Network, LoneFlowRunsAtLinkCapacity) {
  Network net({1e6, 1e3}, 0);
  const int f = net.start_flow(0.0, LinkClass::IntraNode, 2e6, 7);
  EXPECT_EQ(net.owner(f), 7);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(f), 1e6);
  EXPECT_DOUBLE_EQ(net.projected_end_us(f), 2e6);
}

TEST(Network, LateFlowHalvesTheRateAndRatesRecoverWhenOneEnds) {
  // Capacity 1e6 B/s. A: 1e6 bytes from t=0. B: 1e6 bytes from t=0.5 s.
  // A moves 5e5 alone, then both at 5e5 B/s: A ends at 0.5 + 1.0 = 1.5 s with B at 5e5 left,
  // which B then moves alone: ends at 2.0 s.
  Network net({1e6, 1e6}, 0);
  const int a = net.start_flow(0.0, LinkClass::IntraNode, 1e6, 0);
  EXPECT_DOUBLE_EQ(net.projected_end_us(a), 1e6);
  const uint64_t a_version = net.version(a);
  const int b = net.start_flow(5e5, LinkClass::IntraNode, 1e6, 1);
  EXPECT_FALSE(net.is_current(a, a_version));  // A's old end is stale
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(a), 5e5);
  EXPECT_DOUBLE_EQ(net.projected_end_us(a), 1.5e6);
  EXPECT_DOUBLE_EQ(net.projected_end_us(b), 2.5e6);
  net.finish_flow(1.5e6, a);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(b), 1e6);
  EXPECT_DOUBLE_EQ(net.projected_end_us(b), 2e6);
  EXPECT_EQ(net.live_slots().size(), 1u);
}

TEST(Network, FlowsOnDifferentLinkClassesDoNotShare) {
  Network net({1e6, 1e6}, 0);
  const int a = net.start_flow(0.0, LinkClass::IntraNode, 1e6, 0);
  const int b = net.start_flow(0.0, LinkClass::InterNode, 1e6, 1);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(a), 1e6);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(b), 1e6);
}

// Copies have their own resource (mpi profiles): they share it with each other, not with the
// links; the copy scale slows only copies, the link scale only the links, the capacity scale
// (compute running) both.
TEST(Network, CopyFlowsShareTheCopyResourceAndTheirScalesAreSeparate) {
  Network net({1e6, 1e6}, 2e6);
  const int link = net.start_flow(0.0, LinkClass::IntraNode, 1e6, 0);
  const int c1 = net.start_copy_flow(0.0, 1e6, 1);
  const int c2 = net.start_copy_flow(0.0, 1e6, 2);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(link), 1e6);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(c1), 1e6);  // half of the copy resource's 2e6 each
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(c2), 1e6);
  net.set_copy_scale(0.0, 0.5);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(link), 1e6);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(c1), 5e5);
  net.set_copy_scale(0.0, 1.0);
  net.set_link_scale(0.0, 0.25);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(link), 2.5e5);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(c1), 1e6);
  net.set_capacity_scale(0.0, 0.5);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(link), 1.25e5);
  EXPECT_DOUBLE_EQ(net.rate_bytes_per_s(c2), 5e5);
}

TEST(AnalyticalCostModel, LoneTimesAreTheRingFormulas) {
  const Scenario s = simtest::test_scenario();
  AnalyticalCostModel m(s.cluster);
  const int64_t S = 64 << 20;
  for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    EXPECT_DOUBLE_EQ(lone_collective_time_us(m, k, S, place_group(GroupInfo{"shard", 8, 1}, 8)),
                     ring_time_us(k, S, 8, 2.0, 100e9));
  }
  // A flat ring over 2 nodes of 8: the bytes cross each rank's NIC (25 GB/s), and the latency is
  // NCCL's ring through all 16 ranks: 14 hops inside the nodes (2 us) and 1 across (10 us) for an
  // all-gather or reduce-scatter; 2 x 13 and 4 for an all-reduce.
  const GroupPlacement flat = place_group(GroupInfo{"shard", 16, 1}, 8);
  EXPECT_DOUBLE_EQ(lone_collective_time_us(m, CollectiveKind::AllGather, S, flat),
                   14 * 2.0 + 1 * 10.0 + 15.0 / 16 * S / 25e9 * 1e6);
  EXPECT_DOUBLE_EQ(lone_collective_time_us(m, CollectiveKind::ReduceScatter, S, flat),
                   14 * 2.0 + 1 * 10.0 + 15.0 / 16 * S / 25e9 * 1e6);
  EXPECT_DOUBLE_EQ(lone_collective_time_us(m, CollectiveKind::AllReduce, S, flat),
                   26 * 2.0 + 4 * 10.0 + 2 * 15.0 / 16 * S / 25e9 * 1e6);
  // One rank per node (an HSDP replicate group): each of the ring's 2 x 3 steps crosses nodes
  // (NCCL's count, 2k = 8 across, is capped at the ring's own steps).
  const CollectivePlan rep = m.collective(CollectiveKind::AllReduce, S, place_group(GroupInfo{"replicate", 4, 8}, 8));
  ASSERT_EQ(rep.count, 1);
  EXPECT_DOUBLE_EQ(rep.phases[0].latency_us, 2 * 3 * 10.0);
}

TEST(AnalyticalCostModel, HierarchicalPhases) {
  Scenario s = simtest::test_scenario();
  s.cluster.hierarchical_collectives = true;
  AnalyticalCostModel m(s.cluster);
  const int64_t S = 64 << 20;
  const GroupPlacement g = place_group(GroupInfo{"shard", 16, 1}, 8);
  CollectivePlan rs = m.collective(CollectiveKind::ReduceScatter, S, g);
  ASSERT_EQ(rs.count, 2);
  EXPECT_EQ(rs.phases[0].link, LinkClass::IntraNode);
  EXPECT_DOUBLE_EQ(rs.phases[0].link_bytes, 7.0 / 8.0 * S);
  // NCCL's ring runs through all 16 ranks: 15 steps, 1 of them across nodes, so 14 intra-node
  // hops, not the 7 of a ring inside one node.
  EXPECT_DOUBLE_EQ(rs.phases[0].latency_us, 14 * 2.0);
  EXPECT_EQ(rs.phases[1].link, LinkClass::InterNode);
  EXPECT_DOUBLE_EQ(rs.phases[1].link_bytes, 1.0 / 2.0 * S / 8);
  EXPECT_DOUBLE_EQ(rs.phases[1].latency_us, 1 * 10.0);
  CollectivePlan ag = m.collective(CollectiveKind::AllGather, S, g);
  ASSERT_EQ(ag.count, 2);
  EXPECT_EQ(ag.phases[0].link, LinkClass::InterNode);
  EXPECT_EQ(ag.phases[1].link, LinkClass::IntraNode);
  EXPECT_DOUBLE_EQ(ag.phases[0].latency_us, 1 * 10.0);
  EXPECT_DOUBLE_EQ(ag.phases[1].latency_us, 14 * 2.0);
  CollectivePlan ar = m.collective(CollectiveKind::AllReduce, S, g);
  ASSERT_EQ(ar.count, 3);
  EXPECT_DOUBLE_EQ(ar.phases[1].link_bytes, 1.0 * S / 8);  // AR over 2 nodes: 2(n-1)/n = 1
  // NCCL's ring all-reduce: 2 x 15 steps, 2 x 2 of them across the 2 nodes, so 2 x 13 intra-node.
  EXPECT_DOUBLE_EQ(ar.phases[1].latency_us, 2 * 2 * 10.0);
  EXPECT_DOUBLE_EQ(ar.phases[0].latency_us, 13 * 2.0);
  EXPECT_DOUBLE_EQ(ar.phases[2].latency_us, 13 * 2.0);
  // A replicate group with one member per node has no intra-node phase.
  CollectivePlan rep = m.collective(CollectiveKind::AllReduce, S, place_group(GroupInfo{"replicate", 2, 8}, 8));
  ASSERT_EQ(rep.count, 1);
  EXPECT_EQ(rep.phases[0].link, LinkClass::InterNode);
  EXPECT_DOUBLE_EQ(rep.phases[0].link_bytes, 1.0 * S);
}

TEST(AnalyticalCostModel, HierarchicalLatencyIsNcclsRingThroughAllRanks) {
  Scenario s = simtest::test_scenario();
  s.cluster.hierarchical_collectives = true;
  AnalyticalCostModel m(s.cluster);
  // 32 ranks over 4 nodes of 8: all-gather and reduce-scatter take 31 ring steps, 3 across nodes
  // and 28 inside them; all-reduce 62 steps, 8 across nodes, 2 x 27 inside.
  const GroupPlacement g = place_group(GroupInfo{"shard", 32, 1}, 8);
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const CollectivePlan p = m.collective(kind, 64 << 20, g);
    ASSERT_EQ(p.count, 2);
    double intra = 0, inter = 0;
    for (int i = 0; i < p.count; ++i) (p.phases[i].link == LinkClass::IntraNode ? intra : inter) += p.phases[i].latency_us;
    EXPECT_DOUBLE_EQ(intra, 28 * 2.0);
    EXPECT_DOUBLE_EQ(inter, 3 * 10.0);
  }
  const CollectivePlan ar = m.collective(CollectiveKind::AllReduce, 64 << 20, g);
  ASSERT_EQ(ar.count, 3);
  EXPECT_DOUBLE_EQ(ar.phases[0].latency_us, 27 * 2.0);
  EXPECT_DOUBLE_EQ(ar.phases[1].latency_us, 8 * 10.0);
  EXPECT_DOUBLE_EQ(ar.phases[2].latency_us, 27 * 2.0);
}

TEST(AnalyticalCostModel, HierarchicalNeedsAnEvenSpread) {
  Scenario s = simtest::test_scenario();
  s.cluster.hierarchical_collectives = true;
  AnalyticalCostModel m(s.cluster);
  EXPECT_THROW(m.collective(CollectiveKind::AllGather, 1 << 20, place_group(GroupInfo{"shard", 12, 1}, 8)), InputError);
}

TEST(AnalyticalCostModel, CopyTimeIsBytesOverCopyBandwidth) {
  Scenario s = simtest::test_scenario();
  AnalyticalCostModel m(s.cluster);
  EXPECT_DOUBLE_EQ(m.copy_time_us(5'000'000), 5.0);
  s.cluster.gpu.copy_bandwidth_bytes_per_s = 0;
  AnalyticalCostModel bad(s.cluster);
  EXPECT_THROW(bad.copy_time_us(1), InputError);
  EXPECT_DOUBLE_EQ(bad.copy_time_us(0), 0.0);
}

TEST(AnalyticalCostModel, MissingLinkBandwidthIsAnInputError) {
  Scenario s = simtest::test_scenario();
  s.cluster.inter_node.bandwidth_bytes_per_s = 0;
  AnalyticalCostModel m(s.cluster);
  try {
    m.collective(CollectiveKind::AllGather, 1 << 20, place_group(GroupInfo{"shard", 16, 1}, 8));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "cluster.inter_node.bandwidth");
  }
}

}  // namespace
}  // namespace shardline::sim
