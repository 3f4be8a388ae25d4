// The calibrated cost model: collective and copy times from a measured cluster profile
// (core/profile.h, written by `shardline calibrate`) instead of the analytical presets.
//
// A collective of size S over n ranks takes t = profile.collective_time_us(kind, S, n) when it
// runs alone (exact on measured sizes, log-log interpolated between them, the fitted
// alpha + beta * S outside). To keep max-min sharing of concurrent collectives, t is split
// into one phase: a latency (the table's fitted alpha, clamped to [0, t]) and a transfer of
// (t - latency) * kVirtualBytesPerUs "virtual bytes" over a link whose capacity is
// kVirtualBytesPerUs: alone it ends exactly at t; k concurrent transfers share the link and
// each progresses at 1/k of its lone rate (the profile does not separate link classes: both
// get the same capacity, and groups are looked up by size only).
// Copies: copy_latency_us + bytes / copy_bandwidth. On an mpi profile (CPU cores do both the
// copies and the MPI transfers) a copy is a transfer of that time in virtual bytes on the rank's
// copy resource (capacity kVirtualBytesPerUs, shared by the rank's concurrent copies), slowed
// by the profile's measured copy_slowdown_during_comm while a collective of the rank moves
// data, and slowing the rank's transfers by comm_slowdown_during_copy (calibrate measures both
// as paired ratios, docs/calibrate.md). The profile's issue overhead, compute slow-downs, event
// latency and compute overhead replace the scenario's (sim/simulator.cpp).
#pragma once
#include "core/profile.h"
#include "sim/cost_model.h"

namespace shardline::sim {

class ProfileCostModel : public CostModel {
 public:
  static constexpr double kVirtualBytesPerUs = 1000.0;  // 1e9 virtual bytes/s

  explicit ProfileCostModel(const ClusterProfile& profile);  // keeps a reference
  CollectivePlan collective(CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) const override;
  double copy_time_us(int64_t bytes) const override;
  double copy_link_bytes(int64_t bytes) const override;
  double copy_capacity_bytes_per_s() const override { return kVirtualBytesPerUs * 1e6; }
  double copy_slowdown_during_comm() const override { return profile_.copy_slowdown_during_comm; }
  double comm_slowdown_during_copy() const override { return profile_.comm_slowdown_during_copy; }
  double link_bandwidth_bytes_per_s(LinkClass link) const override;

 private:
  const ClusterProfile& profile_;
};

}  // namespace shardline::sim
