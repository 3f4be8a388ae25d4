#include "sim/topology.h"

#include <gtest/gtest.h>

namespace shardline::sim {
namespace {

TEST(PlaceGroup, ShardGroupWithinOneNode) {
  const GroupPlacement p = place_group(GroupInfo{"shard", 8, 1}, 8);
  EXPECT_EQ(p.ranks, 8);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.ranks_on_my_node, 8);
  EXPECT_FALSE(p.spans_nodes());
}

TEST(PlaceGroup, ShardGroupLargerThanANodeSpansNodes) {
  const GroupPlacement p = place_group(GroupInfo{"shard", 32, 1}, 8);
  EXPECT_EQ(p.nodes, 4);
  EXPECT_EQ(p.ranks_on_my_node, 8);
  EXPECT_TRUE(p.spans_nodes());
}

TEST(PlaceGroup, UnevenShardGroup) {
  const GroupPlacement p = place_group(GroupInfo{"shard", 12, 1}, 8);
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.ranks_on_my_node, 8);
}

TEST(PlaceGroup, ReplicateGroupStridesByShardSize) {
  // shard 8, 8 GPUs/node: replicas 0, 8, 16, 24 are each on their own node.
  GroupPlacement p = place_group(GroupInfo{"replicate", 4, 8}, 8);
  EXPECT_EQ(p.nodes, 4);
  EXPECT_EQ(p.ranks_on_my_node, 1);
  // shard 2: replicas 0, 2, 4, 6 share node 0.
  p = place_group(GroupInfo{"replicate", 4, 2}, 8);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.ranks_on_my_node, 4);
  // shard 4, 8 replicas: 0,4 | 8,12 | 16,20 | 24,28 -> 4 nodes, 2 per node.
  p = place_group(GroupInfo{"replicate", 8, 4}, 8);
  EXPECT_EQ(p.nodes, 4);
  EXPECT_EQ(p.ranks_on_my_node, 2);
  // shard 3, 4 replicas: 0,3,6 | 9 -> 2 nodes, 3 on the first.
  p = place_group(GroupInfo{"replicate", 4, 3}, 8);
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.ranks_on_my_node, 3);
}

TEST(PlaceGroup, ReshardGroupIsContiguous) {
  const GroupPlacement p = place_group(GroupInfo{"reshard", 8, 1}, 8);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.ranks_on_my_node, 8);
}

TEST(PlaceGroup, SingleRank) {
  const GroupPlacement p = place_group(GroupInfo{"none", 1, 1}, 8);
  EXPECT_EQ(p.ranks, 1);
  EXPECT_EQ(p.nodes, 1);
}

}  // namespace
}  // namespace shardline::sim
