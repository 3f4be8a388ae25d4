// Where a communicator's members sit, for the representative rank (rank 0; ranks are
// symmetric): the Program's group table says which ranks form the group (rank 0's group is the
// ranks i * stride, i in [0, size)); node = rank / gpus_per_node (nodes hold consecutive ranks).
#pragma once
#include "core/program.h"

namespace shardline::sim {

struct GroupPlacement {
  int ranks = 1;             // n
  int nodes = 1;             // distinct nodes its members occupy
  int ranks_on_my_node = 1;  // members on the representative rank's node
  bool spans_nodes() const { return nodes > 1; }
};

// Placement of rank 0's group of the pattern `group`.
GroupPlacement place_group(const GroupInfo& group, int gpus_per_node);

}  // namespace shardline::sim
