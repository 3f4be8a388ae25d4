// The cost-model interface: how long copies take, and how a collective decomposes into
// phases that the network then runs (each phase: a fixed latency, then a number of bytes moved
// over one of this rank's link classes, shared max-min fairly with concurrent flows).
// The analytical alpha-beta ring model (analytical_cost_model.h) implements it; a calibrated
// cluster profile (measured tables) is meant to implement the same interface.
#pragma once
#include <array>
#include <cstdint>

#include "core/collective.h"
#include "sim/topology.h"

namespace shardline::sim {

enum class LinkClass { IntraNode = 0, InterNode = 1 };
inline constexpr int kNumLinkClasses = 2;

struct CollectivePhase {
  LinkClass link = LinkClass::IntraNode;
  double latency_us = 0;  // fixed delay before the transfer
  double link_bytes = 0;  // bytes this rank moves over `link` (at its max-min fair rate)
};

// At most three phases (hierarchical all-reduce: intra, inter, intra). No phases: free.
struct CollectivePlan {
  std::array<CollectivePhase, 3> phases{};
  int count = 0;
  void add(const CollectivePhase& p) { phases.at(count++) = p; }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One collective of nccl-tests size S over a group placed as `group`.
  virtual CollectivePlan collective(CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) const = 0;
  // A device-local copy (copy-in / copy-out) of `bytes`.
  virtual double copy_time_us(int64_t bytes) const = 0;
  // Where copies and collectives are work of the same processors (the mpi backend: CPU cores
  // run memcpy and the MPI transfers alike), a copy is a flow of this many bytes over the
  // intra-node link, shared max-min with the collectives' flows. 0 (the default): a copy takes
  // copy_time_us whatever else runs (GPU copies do not slow NCCL down in this model).
  virtual double copy_link_bytes(int64_t /*bytes*/) const { return 0; }
  // Capacity of a link class of this rank, bytes/s per direction (what flows share).
  virtual double link_bandwidth_bytes_per_s(LinkClass link) const = 0;
};

// Duration of a collective that runs alone (no competing flows): sum over phases of
// latency + link_bytes / bandwidth.
double lone_collective_time_us(const CostModel& model, CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group);

}  // namespace shardline::sim
