#include "sim/topology.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

GroupPlacement place_group(const GroupInfo& group, int gpus_per_node) {
  if (group.size < 1 || group.stride < 1 || gpus_per_node < 1) {
    std::fprintf(stderr, "shardline sim topology: bad sizes (group %d, stride %d, gpus/node %d)\n", group.size,
                 group.stride, gpus_per_node);
    std::abort();
  }
  // Members are i * stride, i in [0, n); member i sits on node floor(i * stride / g).
  const long long n = group.size;
  const long long stride = group.stride;
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
