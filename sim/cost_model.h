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
  // Where copies are work of the rank's processors (the mpi backend: CPU cores run memcpy and
  // the MPI transfers alike), a copy is a flow of this many bytes over the rank's copy resource
  // (capacity copy_capacity_bytes_per_s), shared max-min with its other copies, and slowed by
  // the measured factors below while the rank's collectives move data. 0 (the default): a copy
  // takes copy_time_us whatever else runs (GPU copies do not slow NCCL down in this model).
  virtual double copy_link_bytes(int64_t /*bytes*/) const { return 0; }
  virtual double copy_capacity_bytes_per_s() const { return 0; }
  // Copy flows progress 1 / copy_slowdown_during_comm as fast while a collective of the rank
  // moves data (every member has arrived); the rank's transfers 1 / comm_slowdown_during_copy as
  // fast while a copy flow runs. Both >= 1.
  virtual double copy_slowdown_during_comm() const { return 1; }
  virtual double comm_slowdown_during_copy() const { return 1; }
  // Capacity of a link class of this rank, bytes/s per direction (what flows share).
  virtual double link_bandwidth_bytes_per_s(LinkClass link) const = 0;
};

// Duration of a collective that runs alone (no competing flows): sum over phases of
// latency + link_bytes / bandwidth.
double lone_collective_time_us(const CostModel& model, CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group);

}  // namespace shardline::sim
