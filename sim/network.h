// This rank's network: its link classes (intra-node, inter-node) as resources with capacities,
// and the byte flows of running collective phases on them; and, on a host whose CPU does the
// copies (mpi profiles), a copy resource that the rank's copy flows share. Concurrent flows share
// each resource max-min fairly (sim/max_min.h); rates are recomputed whenever a flow starts or
// ends or a capacity scale changes, and each flow's progress is integrated piecewise between
// those instants.
// Flows are identified by slots (reused); every re-rate gives each live flow a new version, so
// an end event carrying an older version is stale.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "sim/activity.h"
#include "sim/cost_model.h"
#include "sim/max_min.h"

namespace shardline::sim {

class Network {
 public:
  // `copy_capacity_bytes_per_s`: the copy resource's (0: no copy flows).
  Network(const std::array<double, kNumLinkClasses>& capacity_bytes_per_s, double copy_capacity_bytes_per_s);

  // Starts a flow of `bytes` (> 0) over `link` at `now_us`, owned by `owner` (an op id).
  // All flows are re-rated. Returns the flow's slot.
  int start_flow(double now_us, LinkClass link, double bytes, int owner);
  // The same on the copy resource.
  int start_copy_flow(double now_us, double bytes, int owner);
  // Ends the flow in `slot` at `now_us` (its bytes are done); the others are re-rated.
  void finish_flow(double now_us, int slot);
  // From `now_us` on, every resource (links and copies) has its capacity times `scale` (> 0);
  // flows are re-rated.
  void set_capacity_scale(double now_us, double scale);
  // From `now_us` on, the links alone (`set_link_scale`) or the copy resource alone
  // (`set_copy_scale`) get a further factor `scale` (> 0); flows are re-rated.
  void set_link_scale(double now_us, double scale);
  void set_copy_scale(double now_us, double scale);

  // Live flows, ascending slot order (deterministic); with their projected end and version.
  const std::vector<int>& live_slots() const { return live_; }
  double projected_end_us(int slot) const { return flows_[slot].bytes.end_us; }
  uint64_t version(int slot) const { return flows_[slot].bytes.version; }
  int owner(int slot) const { return flows_[slot].owner; }
  double rate_bytes_per_s(int slot) const { return flows_[slot].rate; }
  bool is_current(int slot, uint64_t version) const;

 private:
  static constexpr int kCopyResource = kNumLinkClasses;  // solver index of the copy resource
  struct Flow {
    int resource = 0;  // a LinkClass, or kCopyResource
    int owner = -1;
    bool live = false;
    double rate = 0;  // bytes/s
    Activity bytes;   // remaining: bytes
  };
  void advance(double now_us);  // integrate every live flow's progress up to now
  void rerate(double now_us);   // max-min solve, new ends and versions
  int start(double now_us, int resource, double bytes, int owner);
  void set_scale(double now_us, double& which, double scale);

  std::array<double, kNumLinkClasses + 1> capacity_;  // links, then the copy resource
  double capacity_scale_ = 1.0;
  double link_scale_ = 1.0;
  double copy_scale_ = 1.0;
  std::vector<Flow> flows_;
  std::vector<int> free_slots_;
  std::vector<int> live_;  // sorted ascending
  MaxMinSolver solver_;
  uint64_t next_version_ = 1;
};

}  // namespace shardline::sim
