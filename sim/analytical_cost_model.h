// The analytical alpha-beta cost model (core/collective.h ring formulas, nothing re-derived):
// for a phase over n ranks of size S on a link with latency alpha:
//   latency_us = ring_hops(n) * alpha,  link_bytes = ring_bytes_fraction(n) * S.
// A group on one node runs one phase on the intra-node link. A group spanning k nodes pays the
// latency of NCCL's one ring through all n ranks (src/graph/tuning.cc): all-gather and
// reduce-scatter n - k hops inside nodes and k - 1 across them, all-reduce 2(n - k - 1) and 2k
// (the hops across nodes capped at the ring's 2(n - 1) steps: one rank per node crosses on each).
// Its bytes run as one phase on the inter-node link (flat ring), or, with
// cluster.hierarchical_collectives, with m = members on this rank's node (m * k must equal n):
//   reduce-scatter: intra RS(m, S), then inter RS(k, S/m)
//   all-gather:     inter AG(k, S/m), then intra AG(m, S)
//   all-reduce:     intra RS(m, S), inter AR(k, S/m), intra AG(m, S)
// (phases over a single rank are omitted). Copies: bytes / gpu.copy_bandwidth.
#pragma once
#include "core/scenario.h"
#include "sim/cost_model.h"

namespace shardline::sim {

class AnalyticalCostModel : public CostModel {
 public:
  explicit AnalyticalCostModel(const ClusterSpec& cluster);
  CollectivePlan collective(CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) const override;
  double copy_time_us(int64_t bytes) const override;
  double link_bandwidth_bytes_per_s(LinkClass link) const override;

 private:
  // One phase of `kind` over n ranks on `link`: `latency_us`, then the ring's share of size_bytes.
  // Throws InputError when a used link has no bandwidth.
  CollectivePhase phase(CollectiveKind kind, double size_bytes, int n, LinkClass link, double latency_us) const;
  ClusterSpec cluster_;
};

}  // namespace shardline::sim
