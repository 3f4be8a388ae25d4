#include "sim/analytical_cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace shardline::sim {

AnalyticalCostModel::AnalyticalCostModel(const ClusterSpec& cluster) : cluster_(cluster) {}

double AnalyticalCostModel::link_bandwidth_bytes_per_s(LinkClass link) const {
  return link == LinkClass::IntraNode ? cluster_.intra_node.bandwidth_bytes_per_s : cluster_.inter_node.bandwidth_bytes_per_s;
}

CollectivePhase AnalyticalCostModel::phase(CollectiveKind kind, double size_bytes, int n, LinkClass link,
                                           double latency_us) const {
  const LinkSpec& spec = link == LinkClass::IntraNode ? cluster_.intra_node : cluster_.inter_node;
  const char* where = link == LinkClass::IntraNode ? "cluster.intra_node.bandwidth" : "cluster.inter_node.bandwidth";
  if (!(spec.bandwidth_bytes_per_s > 0) || !std::isfinite(spec.bandwidth_bytes_per_s))
    throw InputError(where, "a collective needs this link, so its bandwidth must be a positive number of bytes/s");
  const CollectiveTraits& t = collective_traits(kind);
  CollectivePhase p;
  p.link = link;
  p.latency_us = latency_us;
  p.link_bytes = t.ring_bytes_fraction(n) * size_bytes;
  return p;
}

CollectivePlan AnalyticalCostModel::collective(CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) const {
  CollectivePlan plan;
  const int n = group.ranks;
  if (n <= 1) return plan;
  const double s = static_cast<double>(size_bytes);
  const double steps = collective_traits(kind).ring_hops(n);
  if (!group.spans_nodes()) {
    plan.add(phase(kind, s, n, LinkClass::IntraNode, steps * cluster_.intra_node.latency_us));
    return plan;
  }
  // Latency: NCCL's ring is one ring through all n ranks, and its tuning model (src/graph/tuning.cc,
  // as in recent releases) charges (nsteps - nInterSteps) intra-node hops and nInterSteps
  // inter-node ones: all-gather / reduce-scatter n - 1 steps, k - 1 across nodes; all-reduce
  // 2(n - 1) steps, 2k across nodes, capped here at the ring's own steps (with one rank per node
  // every step crosses nodes; NCCL's count would leave fewer than none inside them). Flat or
  // hierarchical, the bytes differ, the hops do not.
  const int k = group.nodes;
  const bool all_reduce = kind == CollectiveKind::AllReduce;
  const double inter_hops = std::min(steps, static_cast<double>(all_reduce ? 2 * k : k - 1));
  const double intra_hops = steps - inter_hops;
  const double intra_latency_us = intra_hops * cluster_.intra_node.latency_us;
  const double inter_latency_us = inter_hops * cluster_.inter_node.latency_us;
  if (!cluster_.hierarchical_collectives) {
    plan.add(phase(kind, s, n, LinkClass::InterNode, intra_latency_us + inter_latency_us));
    return plan;
  }
  const int m = group.ranks_on_my_node;
  if (m * k != n)
    throw InputError("cluster.hierarchical_collectives",
                     "a group of " + std::to_string(n) + " ranks over " + std::to_string(k) + " nodes (" + std::to_string(m) +
                         " on the first) is not spread evenly over nodes, so it has no hierarchical (intra then inter) form");
  const double per_node = s / m;  // the part of S each node-local rank owns
  // Bandwidth: each rank's NIC carries only its 1/m share across nodes, as NCCL's rings spread
  // over a node's rails do. The intra-node hops go to the intra-node phase (an all-reduce's half
  // to each of its two), the inter-node ones to the inter-node phase.
  auto add = [&](CollectiveKind pk, double ps, int pn, LinkClass link) {
    if (pn <= 1) return;
    const double latency = link == LinkClass::InterNode ? inter_latency_us : all_reduce ? intra_latency_us / 2 : intra_latency_us;
    plan.add(phase(pk, ps, pn, link, latency));
  };
  switch (kind) {
    case CollectiveKind::ReduceScatter:
      add(CollectiveKind::ReduceScatter, s, m, LinkClass::IntraNode);
      add(CollectiveKind::ReduceScatter, per_node, k, LinkClass::InterNode);
      break;
    case CollectiveKind::AllGather:
      add(CollectiveKind::AllGather, per_node, k, LinkClass::InterNode);
      add(CollectiveKind::AllGather, s, m, LinkClass::IntraNode);
      break;
    case CollectiveKind::AllReduce:
      add(CollectiveKind::ReduceScatter, s, m, LinkClass::IntraNode);
      add(CollectiveKind::AllReduce, per_node, k, LinkClass::InterNode);
      add(CollectiveKind::AllGather, s, m, LinkClass::IntraNode);
      break;
  }
  return plan;
}

double AnalyticalCostModel::copy_time_us(int64_t bytes) const {
  if (bytes == 0) return 0.0;
  const double bw = cluster_.gpu.copy_bandwidth_bytes_per_s;
  if (!(bw > 0) || !std::isfinite(bw))
    throw InputError("cluster.gpu.copy_bandwidth", "copy-in/copy-out ops need a positive copy bandwidth in bytes/s");
  return static_cast<double>(bytes) / bw * 1e6;
}

}  // namespace shardline::sim
