#include "sim/topology.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

GroupPlacement place_group(CommGroup group, int group_size, int shard_size, int gpus_per_node) {
  if (group_size < 1 || shard_size < 1 || gpus_per_node < 1) {
    std::fprintf(stderr, "shardline sim topology: bad sizes (group %d, shard %d, gpus/node %d)\n", group_size, shard_size,
                 gpus_per_node);
    std::abort();
  }
  // Members are i * stride, i in [0, n); member i sits on node floor(i * stride / g).
  const long long n = group == CommGroup::None ? 1 : group_size;
  const long long stride = group == CommGroup::Replicate ? shard_size : 1;
  const long long g = gpus_per_node;
  GroupPlacement p;
  p.ranks = static_cast<int>(n);
  // stride >= g: every member on its own node. stride < g: consecutive members are at most
  // one node apart, so every node from 0 to the last member's is occupied.
  p.nodes = static_cast<int>(stride >= g ? n : (n - 1) * stride / g + 1);
  // Members on node 0: i * stride < g  <=>  i < ceil(g / stride).
  p.ranks_on_my_node = static_cast<int>(std::min(n, (g + stride - 1) / stride));
  return p;
}

}  // namespace shardline::sim
