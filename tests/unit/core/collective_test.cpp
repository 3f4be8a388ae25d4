// core/collective: the one table of collective traits, pinned to literal numbers (the nccl-tests
// conventions), so a wrong (n-1)/n cannot hide behind a test that computes its expectation with
// the same table.
#include "core/collective.h"

#include <gtest/gtest.h>

namespace shardline {
namespace {

constexpr int64_t kSize = 8 * 1024;  // S: all-gather output, reduce-scatter input, all-reduce input

TEST(CollectiveTraits, BytesInAndOutPerRank) {
  const CollectiveTraits& ag = collective_traits(CollectiveKind::AllGather);
  const CollectiveTraits& rs = collective_traits(CollectiveKind::ReduceScatter);
  const CollectiveTraits& ar = collective_traits(CollectiveKind::AllReduce);
  EXPECT_EQ(ag.input_bytes(kSize, 8), 1024);
  EXPECT_EQ(ag.output_bytes(kSize, 8), 8192);
  EXPECT_EQ(rs.input_bytes(kSize, 8), 8192);
  EXPECT_EQ(rs.output_bytes(kSize, 8), 1024);
  EXPECT_EQ(ar.input_bytes(kSize, 8), 8192);
  EXPECT_EQ(ar.output_bytes(kSize, 8), 8192);
  EXPECT_EQ(ag.input_bytes(kSize, 1), 8192);
  EXPECT_EQ(rs.output_bytes(kSize, 2), 4096);
  EXPECT_EQ(ag.name, "all_gather");
  EXPECT_EQ(rs.name, "reduce_scatter");
  EXPECT_EQ(ar.name, "all_reduce");
}

// nccl-tests: all-gather and reduce-scatter (n-1)/n, all-reduce 2(n-1)/n.
TEST(CollectiveTraits, BusBandwidthFactorsAreNcclTests) {
  const CollectiveTraits& ag = collective_traits(CollectiveKind::AllGather);
  const CollectiveTraits& rs = collective_traits(CollectiveKind::ReduceScatter);
  const CollectiveTraits& ar = collective_traits(CollectiveKind::AllReduce);
  EXPECT_DOUBLE_EQ(ag.busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(ag.busbw_factor(2), 0.5);
  EXPECT_DOUBLE_EQ(ag.busbw_factor(8), 0.875);
  EXPECT_DOUBLE_EQ(rs.busbw_factor(8), 0.875);
  EXPECT_DOUBLE_EQ(ar.busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(ar.busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(ar.busbw_factor(8), 1.75);
}

// A ring over n ranks: n-1 steps (2(n-1) for an all-reduce), each rank moving the bus fraction of S.
TEST(CollectiveTraits, RingHopsAndBytes) {
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::AllGather).ring_hops(8), 7.0);
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::ReduceScatter).ring_hops(2), 1.0);
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::AllReduce).ring_hops(8), 14.0);
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::AllReduce).ring_hops(1), 0.0);
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::AllGather).ring_bytes_fraction(4), 0.75);
  EXPECT_DOUBLE_EQ(collective_traits(CollectiveKind::AllReduce).ring_bytes_fraction(4), 1.5);
}

// hops x alpha + fraction x S / B: 8 MB over 8 ranks at 100 GB/s with a 5 us hop.
TEST(CollectiveTraits, RingTimeByHand) {
  const int64_t s = 8'000'000;
  EXPECT_DOUBLE_EQ(ring_time_us(CollectiveKind::AllGather, s, 8, 5.0, 100e9), 7 * 5.0 + 0.875 * 80.0);
  EXPECT_DOUBLE_EQ(ring_time_us(CollectiveKind::ReduceScatter, s, 8, 5.0, 100e9), 105.0);
  EXPECT_DOUBLE_EQ(ring_time_us(CollectiveKind::AllReduce, s, 8, 5.0, 100e9), 14 * 5.0 + 1.75 * 80.0);
  EXPECT_DOUBLE_EQ(ring_time_us(CollectiveKind::AllReduce, s, 1, 5.0, 100e9), 0.0);  // a group of one moves nothing
}

// algbw = S / t; busbw = algbw x the factor: 1 GB in 10 ms is 100 GB/s algbw.
TEST(CollectiveTraits, NcclTestsBandwidths) {
  EXPECT_DOUBLE_EQ(algbw_gbps(1'000'000'000, 10'000), 100.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(CollectiveKind::AllReduce, 1'000'000'000, 8, 10'000), 175.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(CollectiveKind::AllGather, 1'000'000'000, 8, 10'000), 87.5);
}

}  // namespace
}  // namespace shardline
