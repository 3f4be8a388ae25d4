// Where a communicator's members sit, for the representative rank (rank 0; ranks are
// symmetric). Layout: rank = replicate_index * shard_size + shard_index (shard groups are
// contiguous ranks); node = rank / gpus_per_node (nodes hold consecutive ranks).
// Shard and Reshard groups are contiguous ranks [0, n); a Replicate group is the ranks
// {0, shard_size, 2*shard_size, ...} (n of them).
#pragma once
#include "core/program.h"

namespace shardline::sim {

struct GroupPlacement {
  int ranks = 1;             // n
  int nodes = 1;             // distinct nodes its members occupy
  int ranks_on_my_node = 1;  // members on the representative rank's node
  bool spans_nodes() const { return nodes > 1; }
};

// Placement of a group of `group_size` ranks of kind `group` (None: a single rank).
GroupPlacement place_group(CommGroup group, int group_size, int shard_size, int gpus_per_node);

}  // namespace shardline::sim
